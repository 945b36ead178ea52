package shtest

import (
	"flag"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
)

// Shell is one way to run a POSIX sh script.
type Shell struct {
	// Name identifies the shell in test names: sh, dash, busybox, bash, posh,
	// yash or mksh.
	Name string
	// Argv is the command that runs a script file given as the next argument,
	// e.g. ["/usr/bin/busybox", "sh"]. Empty when the shell is not installed.
	Argv []string
}

// Available reports whether the shell was found on this machine.
func (s Shell) Available() bool { return len(s.Argv) > 0 }

// Names lists every supported shell, in the order [All] returns them.
var Names = []string{"sh", "dash", "busybox", "bash", "posh", "yash", "mksh"}

var (
	detectOnce sync.Once
	detected   []Shell
)

// All returns the supported shells, each detected once per test binary. A
// shell that is not installed has an empty Argv.
func All() []Shell {
	detectOnce.Do(func() {
		for _, name := range Names {
			sh := Shell{Name: name}
			bin := name
			if name == "busybox" {
				bin = "busybox"
			}
			if p, err := exec.LookPath(bin); err == nil {
				sh.Argv = []string{p}
				if name == "busybox" {
					sh.Argv = append(sh.Argv, "sh")
				}
			}
			detected = append(detected, sh)
		}
	})
	out := make([]Shell, len(detected))
	copy(out, detected)
	return out
}

// Lookup returns the shell called name, and false when the name is unknown.
func Lookup(name string) (Shell, bool) {
	for _, sh := range All() {
		if sh.Name == name {
			return sh, true
		}
	}
	return Shell{}, false
}

// Required reports whether missing shells and tools must fail the tests
// (REQUIRE_SHELLS=1) instead of skipping them.
func Required() bool { return os.Getenv("REQUIRE_SHELLS") == "1" }

// Need skips the test when sh is not installed, or fails it when
// REQUIRE_SHELLS=1.
func Need(t testing.TB, sh Shell) {
	t.Helper()
	if sh.Available() {
		return
	}
	if Required() {
		t.Fatalf("shell %s is not installed and REQUIRE_SHELLS=1", sh.Name)
	}
	t.Skipf("shell %s is not installed", sh.Name)
}

// NeedTool returns the path of the command name, skipping the test when it is
// missing (failing it when REQUIRE_SHELLS=1).
func NeedTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if Required() {
		t.Fatalf("%s is not installed and REQUIRE_SHELLS=1", name)
	}
	t.Skipf("%s is not installed", name)
	return ""
}

// NeedSSHD returns the path of OpenSSH's sshd, handled as [NeedTool] when
// it is missing, and makes the privilege separation directory that sshd
// refuses to start without (even for -T). A fresh machine has none: only
// an init system or an earlier sshd makes it, so a test that relied on one
// passed only after another test had run.
func NeedSSHD(t testing.TB) string {
	t.Helper()
	bin := "/usr/sbin/sshd"
	if _, err := os.Stat(bin); err != nil {
		bin = NeedTool(t, "sshd")
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		if Required() {
			t.Fatalf("sshd needs /run/sshd: %v", err)
		}
		t.Skipf("sshd needs /run/sshd: %v", err)
	}
	return bin
}

// ForEach runs fn in a parallel subtest named after each shell of [All].
func ForEach(t *testing.T, fn func(t *testing.T, sh Shell)) {
	t.Helper()
	ForShells(t, Names, fn)
}

// ForShells runs fn in a parallel subtest for each named shell. An unknown
// name fails the test; a missing shell is handled as by [Need].
func ForShells(t *testing.T, names []string, fn func(t *testing.T, sh Shell)) {
	t.Helper()
	for _, name := range names {
		sh, ok := Lookup(name)
		if !ok {
			t.Fatalf("shtest: unknown shell %q (known: %v)", name, Names)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			Need(t, sh)
			fn(t, sh)
		})
	}
}

// NeedPods skips the test, or fails it when REQUIRE_SHELLS=1, where this
// machine cannot run local pods (runpod/localpod): runnerErr is what
// localpod.Check returned, and the tools of a pod's bootstrap (bash, sshd,
// curl, setsid, tar) must be installed.
func NeedPods(t testing.TB, runnerErr error) {
	t.Helper()
	if runnerErr != nil {
		if Required() {
			t.Fatalf("REQUIRE_SHELLS=1 but %v", runnerErr)
		}
		t.Skip(runnerErr)
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		NeedTool(t, "sshd")
	}
	for _, tool := range []string{"bash", "curl", "setsid", "tar"} {
		NeedTool(t, tool)
	}
}

// Main runs a package's tests with -parallel defaulting to parallel
// instead of GOMAXPROCS, unless the command line sets it: shell tests
// mostly wait on ticks and processes, and at two at a time a 2-core
// machine spends their wall time waiting. Call it from TestMain.
func Main(m *testing.M, parallel int) {
	DefaultParallel(parallel)
	os.Exit(m.Run())
}

// DefaultParallel parses the test flags and sets -parallel to n unless
// the command line set it, for a TestMain that does more than [Main].
func DefaultParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
