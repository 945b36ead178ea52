package jobctl

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// hungPodDir is the command prefix that runs the rest of its arguments in a
// private mount namespace where the run directory's .pod is a FUSE file
// system whose server never answers, as a network volume that stopped
// answering: every access under it blocks in the kernel (killably) until
// the last holder of the /dev/fuse descriptor, the command's processes,
// ends.
func hungPodDir(t *testing.T, runDir string) []string {
	t.Helper()
	need := func(ok bool, msg string) {
		t.Helper()
		if ok {
			return
		}
		if shtest.Required() {
			t.Fatalf("%s (required: REQUIRE_SHELLS=1)", msg)
		}
		t.Skip(msg)
	}
	need(os.Geteuid() == 0, "a FUSE mount needs root")
	_, err := exec.LookPath("unshare")
	need(err == nil, "unshare (util-linux) is not installed")
	fs, _ := os.ReadFile("/proc/filesystems")
	_, err = os.Stat("/dev/fuse")
	need(err == nil && strings.Contains(string(fs), "\tfuse\n"), "no FUSE here: a hung volume cannot be made")
	setup := `exec 9<>/dev/fuse
mount -t fuse -o fd=9,rootmode=40000,user_id=0,group_id=0,allow_other hung "$0/.pod" || exit 1
exec "$@"`
	return []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", setup, runDir}
}

// A put that the volume never takes is answered with an error once the
// write wait is over, so the client goes on; and watch.sh, no longer
// stuck in the write, ends when the session closes.
func TestPutOnAHungVolume(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, _ := newRun(t, "")
		argv := append(hungPodDir(t, runDir), append(shell, "-c", watchOpen(), "sh", runDir, t.TempDir())...)
		w := startWatchArgv(t, argv, []string{"OVERBRAINER_WRITE_WAIT=1"})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := w.Put(ctx, watchdog.CostCapAt, "1700000000")
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not take it") {
			t.Fatalf("put on a hung volume: %v", err)
		}
		w.Close()
		ended := make(chan error, 1)
		go func() { ended <- w.wait() }()
		select {
		case <-ended:
		case <-time.After(2 * time.Minute):
			t.Fatal("watch.sh did not end when its session closed")
		}
	})
}
