package bootstrap

import (
	_ "embed"
	"strings"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

//go:embed bootstrap.sh
var functions string

// HeredocEnd ends the quoted here-document that carries the watchdog inside
// the pod's command. No line of the watchdog may equal it.
const HeredocEnd = "OVERBRAINER_WATCHDOG_END"

// Log is the bootstrap's own log in the run directory: its lines of this
// boot (the same lines it writes to the container's output), saved there
// before it hands the pod to the watchdog or fails, and replaced at each
// container start. The client collects it with the results.
const Log = ".pod/bootstrap.log"

// MaxCommandBytes bounds the pod's command: it travels in the create call's
// cmd, inside a body Runpod refuses past 102,400 bytes (JSON adds about an
// eighth), and must stay well inside what the kernel takes as one argument
// (128 KiB). At 48 KiB, more than half of the body is left to the pod's env.
const MaxCommandBytes = 48 * 1024

// Script returns the whole script the pod runs: the bootstrap's functions, a
// write_watchdog function holding the watchdog in a quoted here-document, and
// the call to bootstrap_main. write_watchdog writes to a sibling .tmp file and
// moves it into place only when the write succeeded, so a write cut short by a
// full disk never leaves a truncated watchdog to exec. Both scripts travel
// without their comment lines (see compact) to keep the command small.
func Script() string {
	wd := compact(watchdog.Script())
	var b strings.Builder
	b.WriteString(compact(functions))
	b.WriteString("\nwrite_watchdog() {\n")
	b.WriteString("  mkdir -p \"$(dirname \"$1\")\" || return 1\n")
	// A FIFO left at the temporary name would block the write.
	b.WriteString("  rm -f \"$1.tmp\" 2>/dev/null\n")
	b.WriteString("  cat > \"$1.tmp\" <<'" + HeredocEnd + "' || return 1\n")
	b.WriteString(wd)
	if !strings.HasSuffix(wd, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(HeredocEnd + "\n")
	b.WriteString("  mv -f \"$1.tmp\" \"$1\"\n")
	b.WriteString("}\n\nbootstrap_main\n")
	return b.String()
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
