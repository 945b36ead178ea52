package bootstrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/overbrainer/overbrainer-go/bootstrap"
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
	t.Parallel()
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
				// The volume (the workdir) hangs from the start: every
				// access to it blocks in the kernel, as on a network
				// volume that stopped answering.
				env := w.env()
				env["OVERBRAINER_BOOT_TIMEOUT"] = "2"
				p := startPod(t, podSpec{shell: argv, env: env, workdir: w.workdir, setup: hangMount(t, w.workdir)})
				waitDeleted(t, w, p)
				// The guard, not a quick failure's fallback, deleted it.
				failed := p.path(filepath.Join(w.tmpdir, "overbrainer-guard", watchdog.BootstrapFailed))
				if got := readString(failed); got != "bootstrap_timeout\n" {
					t.Errorf("the guard's %s = %q, want bootstrap_timeout; output:\n%s", watchdog.BootstrapFailed, got, p.stderr)
				}
			})
			t.Run("volume_hangs_after_the_guard_started", func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				// The volume answers until the run directory holds the
				// watchdog and the claim (the guard then reports from
				// it), and hangs from the claim's clean-up on: the
				// guard's writes there block too.
				pod := filepath.Join(w.runDir, watchdog.PodDir)
				w.bin.Stub("rm", `case " $* " in *" `+pod+`/watchdog.pid "*)
  exec 9<>/dev/fuse && `+fuseMount("9", w.runDir)+` ;;
esac
exec /bin/rm "$@"`)
				p := bootUntilDeleted(t, w, argv)
				failed := p.path(filepath.Join(w.tmpdir, "overbrainer-guard", watchdog.BootstrapFailed))
				if got := readString(failed); got != "bootstrap_timeout\n" {
					t.Errorf("the guard's %s = %q, want bootstrap_timeout; output:\n%s", watchdog.BootstrapFailed, got, p.stderr)
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
				shtest.Eventually(t, bootTimeout, func() bool {
					return strings.Contains(readString(filepath.Join(w.runDir, bootstrap.Log)), "failed: bootstrap_timeout")
				}, "%s lacks the timeout: %q", bootstrap.Log, lazyRead(filepath.Join(w.runDir, bootstrap.Log)))
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
	waitDeleted(t, w, p)
	return p
}

func waitDeleted(t *testing.T, w *world, p *pod) {
	t.Helper()
	shtest.Eventually(t, bootTimeout, func() bool {
		return apiCount(w.api, "DELETE", "/pods/"+w.podID, w.apiKey) > 0
	}, "no DELETE; output:\n%s", p.stderr)
}

// hangMount returns the setup lines that mount, at dir, a FUSE file system
// whose server never answers: every look-up, read and write under dir then
// blocks in the kernel until the namespace ends (its processes are
// killable, and the last descriptor of /dev/fuse closing aborts the mount).
func hangMount(t *testing.T, dir string) []string {
	t.Helper()
	needFUSE(t)
	return []string{"exec 9<>/dev/fuse", fuseMount("9", dir)}
}

// fuseMount is the mount command for a FUSE file system served (never) on
// descriptor fd.
func fuseMount(fd, dir string) string {
	return "mount -t fuse -o fd=" + fd + ",rootmode=40000,user_id=0,group_id=0,allow_other hung " + shellQuote(dir)
}

// lazyRead reads a file only when a failure message is printed.
type lazyRead string

func (f lazyRead) String() string { return readString(string(f)) }

func needFUSE(t *testing.T) {
	t.Helper()
	_, err := os.Stat("/dev/fuse")
	fs, _ := os.ReadFile("/proc/filesystems")
	need(t, err == nil && strings.Contains(string(fs), "\tfuse\n"), "no FUSE here (/dev/fuse, fuse in /proc/filesystems): a hung volume cannot be made")
}
