package bootstrap

import (
	_ "embed"
	"strings"
	"sync"

	"github.com/overbrainer/overbrainer-go/internal/shscript"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

//go:embed bootstrap.sh
var functions string

// Log is the bootstrap's own log in the run directory: its lines of this
// boot (the same lines it writes to the container's output), saved there
// before it hands the pod to the watchdog or fails, and replaced at each
// container start. The client collects it with the results.
const Log = ".pod/bootstrap.log"

// MaxCommandBytes bounds the pod's command: it travels in the create call's
// cmd, inside a body Runpod refuses past 102,400 bytes (runpod's
// MaxCreatePodBody), which Runpod's text says may hold for an expanded
// request we cannot see, and every listed pod carries it twice. At 24 KiB
// the create body of a default launch stays under 32 KiB.
const MaxCommandBytes = 24 * 1024

// packedMark is the line of bootstrap.sh after which its functions travel
// packed.
const packedMark = "# ---- packed ----\n"

// Script returns the whole script the pod runs, a few kilobytes of plain
// shell around two packed words (shscript.Pack: gzip, then base64):
//
//   - bootstrap.sh's functions above its packedMark line, as they are: what
//     a pod needs to unpack the rest, or to delete itself when it cannot
//     (no_watchdog: an image without base64 or gzip);
//   - WATCHDOG_PACKED, the watchdog packed, which write_watchdog unpacks
//     into each watchdog.sh it writes;
//   - the functions below the mark packed, unpacked and evaluated;
//   - the call to bootstrap_main.
//
// Both scripts travel without their comment lines (shscript.Compact).
func Script() string { return script() }

var script = sync.OnceValue(func() string {
	plain, packed := split()
	var b strings.Builder
	b.WriteString(shscript.Compact(plain))
	// The host key leaves the environment before any program runs (the
	// unpacking's base64 and gzip would inherit it): bootstrap_main takes
	// it from the unexported variable.
	b.WriteString("unset host_key_b64\nhost_key_b64=${OVERBRAINER_HOST_KEY:-}\nunset OVERBRAINER_HOST_KEY\n")
	// Unset first: a variable the container's environment exports would
	// stay exported, and reach every program and the job's environment.
	b.WriteString("unset WATCHDOG_PACKED BOOTSTRAP_FUNCTIONS\n")
	b.WriteString("WATCHDOG_PACKED=" + shscript.Pack(shscript.Compact(watchdog.Script())) + "\n")
	b.WriteString("BOOTSTRAP_FUNCTIONS=$(unpack " + shscript.Pack(shscript.Compact(packed)) + ") ||\n")
	b.WriteString("  no_watchdog \"cannot unpack the bootstrap (base64 -d | gzip -d)\"\n")
	b.WriteString("eval \"$BOOTSTRAP_FUNCTIONS\"\nunset BOOTSTRAP_FUNCTIONS\n\nbootstrap_main\n")
	return b.String()
})

// split returns bootstrap.sh's text above its packedMark line and below it.
func split() (plain, packed string) {
	plain, packed, ok := strings.Cut(functions, "\n"+packedMark)
	if !ok {
		panic("bootstrap: bootstrap.sh has no " + strings.TrimSpace(packedMark) + " line")
	}
	return plain, packed
}

// Command returns the pod's command: ["bash", "-c", Script()], that is
// Entrypoint followed by Cmd.
func Command() []string {
	return append(Entrypoint(), Cmd()...)
}

// Entrypoint returns the pod's entrypoint, ["bash", "-c"]: sent as the
// create's entrypoint, it replaces the image's ENTRYPOINT (and drops the
// image's CMD), so that no image can keep the bootstrap from running. See
// "The image's entrypoint" in the package doc.
func Entrypoint() []string { return []string{"bash", "-c"} }

// Cmd returns the pod's cmd, [Script()]: the argument of Entrypoint.
func Cmd() []string { return []string{Script()} }
