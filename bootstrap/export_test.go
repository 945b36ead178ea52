package bootstrap

import (
	"github.com/overbrainer/overbrainer-go/internal/shscript"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Compact exposes shscript.Compact to the external tests.
var Compact = shscript.Compact

// Functions is the bootstrap's shell functions (bootstrap.sh, write_watchdog
// included), without the packed watchdog and the call that runs them, for
// the external tests that run one.
func Functions() string { return functions }

// Packed returns what the command carries packed, as the pod must unpack
// it: the watchdog and the functions below bootstrap.sh's packed mark, both
// compacted.
func Packed() (watchdogText, functionsText string) {
	_, below := split()
	return shscript.Compact(watchdog.Script()), shscript.Compact(below)
}
