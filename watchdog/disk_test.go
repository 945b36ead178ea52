package watchdog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A job that consumed a disk snapshot request (removed snapshot.request)
// and kept running gets another one while the disk stays full, and none
// while the last one is still there.
func TestDiskSnapshotAskedAgainOnceConsumed(t *testing.T) {
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setDisk(98, 2)
		p.startJob()
		p.start()
		_, first := p.waitEvent(watchdog.KindSnapshotRequested, "reason", "disk", "adopted", "0")
		evs := p.waitTicks(first, 2)
		if i := find(evs, first, watchdog.KindSnapshotRequested); i >= 0 {
			t.Fatalf("asked again while snapshot.request was there: %v\nlog:\n%s", evs[i], p.logText())
		}
		if err := os.Remove(filepath.Join(p.dir, watchdog.SnapshotRequest)); err != nil {
			t.Fatal(err)
		}
		shtest.Eventually(t, wait, func() bool {
			return find(p.events(), first, watchdog.KindSnapshotRequested, "reason", "disk", "adopted", "0") >= 0 || p.proc.Exited()
		}, "a second disk request\nlog:\n%s", lazyLog{p})
		if got := p.read(watchdog.SnapshotRequest); got != "disk\n" {
			t.Errorf("snapshot.request %q", got)
		}
	})
}

// lazyLog prints the log when a failure message is formatted.
type lazyLog struct{ p *pod }

func (l lazyLog) String() string { return l.p.logText() }
