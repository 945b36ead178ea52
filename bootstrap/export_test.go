package bootstrap

// Compact exposes compact to the external tests.
var Compact = compact
