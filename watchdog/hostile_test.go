package watchdog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The job runs as root in the run directory: whatever it leaves in .pod, the
// watchdog must go on and delete the pod when a rule says so.

// A redirection that fails (a directory where the watchdog writes a file, or
// .pod removed under it) never ends the watchdog.
func TestFailingRedirectionsNeverEndTheWatchdog(t *testing.T) {
	t.Run("du.running_is_a_directory", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			du := p.bin.Stub("du", `printf '10\t%s\n' "$3"`)
			p.setEnv("OVERBRAINER_VOLUME_DIR", t.TempDir(), "OVERBRAINER_VOLUME_GB", "1", "OVERBRAINER_DU", du,
				"OVERBRAINER_SNAPSHOT_LEAD", "0")
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
			du := p.bin.Stub("du", `printf '10\t%s\n' "$3"`)
			p.setEnv("OVERBRAINER_VOLUME_DIR", t.TempDir(), "OVERBRAINER_VOLUME_GB", "1", "OVERBRAINER_DU", du,
				"OVERBRAINER_SNAPSHOT_LEAD", "0", "OVERBRAINER_SNAPSHOT_WAIT", "0",
				"OVERBRAINER_DEADLINE", itoa(now()+8))
			p.startJob()
			p.start()
			p.waitEvent(watchdog.KindJobStarted)
			if err := os.RemoveAll(filepath.Join(p.dir, watchdog.PodDir)); err != nil {
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
