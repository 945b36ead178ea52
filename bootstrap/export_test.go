package bootstrap

// Compact exposes compact to the external tests.
var Compact = compact

// Functions is the bootstrap's shell functions, without write_watchdog and
// without the call that runs them, for the external tests that run one.
func Functions() string { return functions }
