package watchdog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A job that consumed a disk snapshot request (removed snapshot.request)
// and kept running gets another one while the disk stays full, and none
// while the last one is still there.
func TestDiskSnapshotAskedAgainOnceConsumed(t *testing.T) {
	t.Parallel()
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

// df runs only every few ticks, fewer the emptier the disk, yet a disk
// that fills by 2 percentage points a tick is seen full at the very tick a
// df every tick would see it: here from 60% at t0, 98% (over DISK_ACT, 97)
// at the 20th tick, t0+19*60.
func TestDiskFillingSeenAtItsTick(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		const t0 = 1_800_000_000
		p := newPod(t, sh)
		p.fakeClock(t0)
		calls := filepath.Join(p.bin.Dir, ".df-calls")
		df := p.bin.Stub("df", fmt.Sprintf(`echo x >> %q
pct=$((60 + 2 * ($(date +%%s) - %d) / 60))
[ "$pct" -le 100 ] || pct=100
echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'
echo "/dev/vda1 1000000 $((pct * 10000)) $(((100 - pct) * 10000)) $pct%% /"`, calls, t0))
		p.setEnv("OVERBRAINER_INTERVAL", "60", "OVERBRAINER_BOOT_GRACE", "1000000", "OVERBRAINER_DF", df)
		p.startJob()
		p.start()
		evs, i := p.waitEvent(watchdog.KindSnapshotRequested, "reason", "disk")
		if got, want := evs[i].Time.Unix(), int64(t0+19*60); got != want {
			t.Errorf("disk request at t0%+d, want t0%+d\nlog:\n%s", got-t0, want-t0, p.logText())
		}
		ticks := 1
		for _, e := range evs[:i] {
			if e.Kind == "test_tick" {
				ticks++
			}
		}
		b, _ := os.ReadFile(calls)
		if n := strings.Count(string(b), "\n"); n*2 > ticks {
			t.Errorf("df ran %d times in %d ticks, want at most half as often", n, ticks)
		}
	})
}

// A disk that fills faster than that is still seen within diskEvery ticks
// (the script's DISK_EVERY) of filling: here from half full to 99% at once,
// right after a look.
const diskEvery = 5

func TestDiskFilledAtOnceSeenWithinDiskEvery(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		const t0, full = 1_800_000_000, 1_800_000_000 + 60
		p := newPod(t, sh)
		p.fakeClock(t0)
		df := p.bin.Stub("df", fmt.Sprintf(`used=50; [ "$(date +%%s)" -lt %d ] || used=99
echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'
echo "/dev/vda1 100 $used $((100 - used)) $used%% /"`, full))
		p.setEnv("OVERBRAINER_INTERVAL", "60", "OVERBRAINER_BOOT_GRACE", "1000000", "OVERBRAINER_DF", df)
		p.startJob()
		p.start()
		evs, i := p.waitEvent(watchdog.KindSnapshotRequested, "reason", "disk")
		if late := evs[i].Time.Unix() - full; late < 0 || late >= diskEvery*60 {
			t.Errorf("disk request %d s after the disk filled, want less than %d ticks (%d s)\nlog:\n%s",
				late, diskEvery, diskEvery*60, p.logText())
		}
	})
}
