package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A FIFO the job (or an earlier pod) left in the run directory never
// leaves the pod without a watchdog, under every shell: one at the
// watchdog's temporary file is replaced, and the claim, which must not be
// replaced, blocks only until the boot guard, already running, gives up
// and the watchdog deletes the pod. A volume that hangs at the first touch
// is the guard's too.
func TestFIFOsInTheRunDirNeverHangTheBoot(t *testing.T) {
	needNamespaces(t)
	fifo := func(t *testing.T, path string) {
		t.Helper()
		mkdir(t, filepath.Dir(path))
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, shell := range shtest.Names {
		t.Run(shell, func(t *testing.T) {
			argv := shellArgv(t, shell)
			t.Run("watchdog_tmp", func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				fifo(t, filepath.Join(w.runDir, watchdog.PodDir, "watchdog.sh.tmp"))
				p := startPod(t, podSpec{shell: argv, env: w.env(), workdir: w.workdir})
				w.ready(p, func() string { return w.runDir })
			})
			t.Run("hung_volume", func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				// A network volume that hangs: every mkdir under the run
				// directory (the bootstrap's first touch of it) blocks for
				// ever, as a process in D state would.
				sleep, err := exec.LookPath("sleep")
				if err != nil {
					t.Fatal(err)
				}
				w.bin.Stub("mkdir", `for a; do case $a in `+shellQuote(w.runDir)+`*) exec `+sleep+` 100000 ;; esac; done
exec /bin/mkdir "$@"`)
				p := bootUntilDeleted(t, w, argv)
				// The guard, not a quick failure's fallback, deleted it.
				failed := p.path(filepath.Join(w.tmpdir, "overbrainer-guard", watchdog.BootstrapFailed))
				if got := readString(failed); got != "bootstrap_timeout\n" {
					t.Errorf("the guard's %s = %q, want bootstrap_timeout; output:\n%s", watchdog.BootstrapFailed, got, p.stderr)
				}
				if _, err := os.Stat(filepath.Join(w.runDir, watchdog.PodDir)); err == nil {
					t.Errorf("the hung volume got a %s", watchdog.PodDir)
				}
			})
			t.Run("claim", func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				fifo(t, filepath.Join(w.runDir, watchdog.PodDir, "claim"))
				bootUntilDeleted(t, w, argv)
				if got := readString(filepath.Join(w.runDir, watchdog.BootstrapFailed)); got != "bootstrap_timeout\n" {
					t.Errorf("%s = %q", watchdog.BootstrapFailed, got)
				}
				if _, err := os.Stat(filepath.Join(w.runDir, watchdog.VerdictFile)); err != nil {
					t.Errorf("no verdict: %v", err)
				}
			})
		})
	}
}

// bootUntilDeleted boots a pod whose boot guard gives up after 2 s, and
// waits for its DELETE.
func bootUntilDeleted(t *testing.T, w *world, argv []string) *pod {
	t.Helper()
	env := w.env()
	env["OVERBRAINER_BOOT_TIMEOUT"] = "2"
	p := startPod(t, podSpec{shell: argv, env: env, workdir: w.workdir})
	shtest.Eventually(t, bootTimeout, func() bool {
		return apiCount(w.api, "DELETE", "/pods/"+w.podID, w.apiKey) > 0
	}, "no DELETE; output:\n%s", p.stderr)
	return p
}
