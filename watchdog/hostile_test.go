package watchdog_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The job runs as root in the run directory: whatever it leaves in .pod, the
// watchdog must go on and delete the pod when a rule says so.

// A redirection that fails (a directory where the watchdog writes a file, or
// .pod removed under it) never ends the watchdog.
func TestFailingRedirectionsNeverEndTheWatchdog(t *testing.T) {
	t.Parallel()
	t.Run("du.running_is_a_directory", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			p.onVolume(`printf '10\t%s\n' "$3"`)
			p.setEnv("OVERBRAINER_SNAPSHOT_LEAD", "0")
			if err := os.Mkdir(filepath.Join(p.dir, watchdog.DuRunning), 0o755); err != nil {
				t.Fatal(err)
			}
			p.write(watchdog.CostCapAt, itoa(now()+4))
			p.startJob()
			p.start()
			p.deleted(watchdog.DeleteCostCap)
		})
	})
	t.Run("pod_dir_removed", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			p.onVolume(`printf '10\t%s\n' "$3"`)
			p.setEnv("OVERBRAINER_SNAPSHOT_LEAD", "0", "OVERBRAINER_SNAPSHOT_WAIT", "0",
				"OVERBRAINER_DEADLINE", itoa(now()+8))
			p.startJob()
			p.start()
			p.waitEvent(watchdog.KindJobStarted)
			// Moved away at once, then removed: a RemoveAll in place
			// races the watchdog's own writes there.
			pod, gone := filepath.Join(p.dir, watchdog.PodDir), filepath.Join(p.dir, "gone")
			if err := os.Rename(pod, gone); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(gone); err != nil {
				t.Fatal(err)
			}
			if code := p.proc.Wait(t, wait); code != 0 {
				t.Fatalf("watchdog exit code %d\nstderr:\n%s", code, p.proc.Stderr())
			}
			if n := p.api.Count("DELETE", "/pods/"+podID); n != 1 {
				t.Fatalf("%d DELETE calls, want 1\nstderr:\n%s", n, p.proc.Stderr())
			}
		})
	})
}

// A FIFO where the watchdog writes its log or reads a file never blocks it:
// at the log before it starts, at du's output or the bootstrap's reason, or
// swapped in for a client's file between the regular-file test and the read
// (the head stub swaps it, once, just before reading). A cap once read holds
// even when the file goes.
func TestFIFOsNeverBlockTheWatchdog(t *testing.T) {
	t.Parallel()
	mkfifo := func(t *testing.T, path string) {
		t.Helper()
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("log", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			p.setEnv("OVERBRAINER_BOOT_GRACE", "2")
			mkfifo(t, filepath.Join(p.dir, watchdog.Log))
			p.start()
			p.deleted(watchdog.DeleteNeverStarted)
		})
	})
	t.Run("du_output", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			p.onVolume(`printf '10\t%s\n' "$3"; f=$OVERBRAINER_RUN_DIR/.pod/du.running; rm -f "$f"; mkfifo "$f"`)
			p.setEnv("OVERBRAINER_SNAPSHOT_LEAD", "0")
			p.write(watchdog.CostCapAt, itoa(now()+4))
			p.startJob()
			p.start()
			p.deleted(watchdog.DeleteCostCap)
		})
	})
	t.Run("bootstrap_failed", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			p.setEnv("OVERBRAINER_BOOT_FAILED", "1")
			mkfifo(t, filepath.Join(p.dir, watchdog.BootstrapFailed))
			p.start()
			if v := p.verdict(); v != "failed bootstrap: unknown" {
				t.Errorf("verdict %q", v)
			}
			p.deleted(watchdog.DeleteBootstrapFailed)
		})
	})
	t.Run("swapped_after_the_check", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			realHead, err := exec.LookPath("head")
			if err != nil {
				t.Fatal(err)
			}
			mark := filepath.Join(p.bin.Dir, ".swapped")
			p.bin.Stub("head", fmt.Sprintf(`if [ ! -e %[1]q ]; then : >%[1]q; f=$OVERBRAINER_RUN_DIR/.pod/cost_cap_at; rm -f "$f"; mkfifo "$f"; fi
exec %[2]q "$@"`, mark, realHead))
			p.write(watchdog.CostCapAt, itoa(now()-10))
			p.start()
			p.deleted(watchdog.DeleteCostCap)
		})
	})
	// The job removes the cap once the watchdog read it (the head stub
	// does, after its first read): the cap read still holds.
	t.Run("removed_after_the_read", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			realHead, err := exec.LookPath("head")
			if err != nil {
				t.Fatal(err)
			}
			mark := filepath.Join(p.bin.Dir, ".removed")
			p.bin.Stub("head", fmt.Sprintf(`%[2]q "$@"; s=$?
if [ ! -e %[1]q ]; then : >%[1]q; rm -f "$OVERBRAINER_RUN_DIR/.pod/cost_cap_at"; fi
exit "$s"`, mark, realHead))
			p.write(watchdog.CostCapAt, itoa(now()+3))
			p.start()
			p.deleted(watchdog.DeleteCostCap)
			if _, err := os.Stat(mark); err != nil {
				t.Errorf("the cap was never removed: %v", err)
			}
		})
	})
}
