package chaos_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// TestChaosLoadWatchdogs runs 50 real watchdogs (bash, as on a pod) on this
// machine at once, each with a running job and ticking every second, all
// with the same cost cap: every one must delete its pod within the cap's
// bound.
func TestChaosLoadWatchdogs(t *testing.T) {
	sh, _ := shtest.Lookup("bash")
	shtest.Need(t, sh)
	api := shtest.NewFakeAPI(t)
	start := time.Now()
	wds := make([]*wd, loadPods)
	for i := range wds {
		w := newWD(t, sh, api, fmt.Sprintf("pod-load-%02d", i))
		w.env[podenv.IntervalEnv] = "1"
		w.startJob()
		w.start()
		wds[i] = w
	}
	// The cap is set once every watchdog runs, however long a loaded
	// machine took to start them, as a client sets it on a running pod;
	// the snapshot is asked 5 s before it.
	for _, w := range wds {
		shtest.Eventually(t, wait, func() bool { return w.started() }, "the start of %s", w.id)
	}
	started := time.Since(start)
	capAt := time.Now().Unix() + 10
	for _, w := range wds {
		w.write(watchdog.SnapshotAt, itoa(capAt-5)+"\n")
		w.write(watchdog.CostCapAt, itoa(capAt)+"\n")
	}
	delays := make([]time.Duration, loadPods)
	for i, w := range wds {
		delays[i] = w.waitDelete().Sub(time.Unix(capAt, 0))
	}
	for i, w := range wds {
		shtest.Eventually(t, wait, func() bool { return w.reason() != "" }, "delete_reason of %s", w.id)
		if r := w.reason(); r != string(watchdog.DeleteCostCap) {
			t.Errorf("%s: delete reason %q, want %s\n%s", w.id, r, watchdog.DeleteCostCap, w.logTail())
		}
		if delays[i] < 0 || delays[i] > ruleBound+Slack {
			t.Errorf("%s: deleted %s after the cap (bound %s + slack %s)", w.id, seconds(delays[i]), ruleBound, Slack)
		}
		if n := len(w.deletes()); n != 1 {
			t.Errorf("%s: %d DELETE calls", w.id, n)
		}
	}
	slices.Sort(delays)
	record(t, "load", "watchdogs at once (bash, 1 s tick)", "%d (started in %s)", loadPods, seconds(started))
	record(t, "load", "watchdog cost cap delay (median / worst)", "%s / %s", seconds(delays[len(delays)/2]), seconds(delays[len(delays)-1]))
}
