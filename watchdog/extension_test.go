package watchdog_test

import (
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A fresh lease holds the deadline off for MAX_EXTENSION only: then the pod
// is deleted whatever the lease, after a snapshot asked SNAPSHOT_LEAD before.
// On the fake clock: on a real one a busy machine could start the watchdog
// past the deadline plus the extension, and nothing would be held.
func TestMaxExtensionEndsAFreshLease(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := p.fakeClock(fakeT0).Now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n-5), "OVERBRAINER_MAX_EXTENSION", "9",
			"OVERBRAINER_LEASE_TTL", "900", "OVERBRAINER_SNAPSHOT_LEAD", "60")
		p.lease(n)
		p.startJob()
		p.start()
		evs := p.deleted(watchdog.DeleteMaxExtension)
		h := find(evs, -1, watchdog.KindDeadlineHeld)
		r := find(evs, -1, watchdog.KindSnapshotRequested, "reason", "deadline", "hard_in_min", "1")
		d := find(evs, -1, watchdog.KindDeleteReason)
		if h < 0 || r < 0 || h > d || r > d {
			t.Fatalf("want deadline_held and a deadline snapshot before the delete\n%s", p.logText())
		}
		if at := evs[d].Time.Unix(); at < n+4 {
			t.Errorf("deleted at %d, before the deadline plus the extension (%d)", at, n+4)
		}
	})
}

// MAX_EXTENSION=0 makes the deadline hard: a fresh lease does not hold it.
func TestHardDeadline(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n+2), "OVERBRAINER_MAX_EXTENSION", "0", "OVERBRAINER_LEASE_TTL", "900")
		p.lease(n)
		p.start()
		evs := p.deleted(watchdog.DeleteMaxExtension)
		if at := evs[find(evs, -1, watchdog.KindDeleteReason)].Time.Unix(); at < n+2 {
			t.Errorf("deleted at %d, before the deadline %d", at, n+2)
		}
	})
}

// Without OVERBRAINER_MAX_EXTENSION the extension is a day: a fresh lease
// still holds a deadline that passed seconds ago.
func TestDefaultExtensionLetsALeaseHold(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n-5), "OVERBRAINER_LEASE_TTL", "900", "OVERBRAINER_INTERVAL", "1")
		p.lease(n)
		p.startJob()
		p.start()
		_, i := p.waitEvent(watchdog.KindDeadlineHeld)
		evs := p.waitTicks(i, 2)
		p.none(evs, 0, watchdog.KindDeleteReason)
	})
}
