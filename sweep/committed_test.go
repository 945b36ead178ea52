package sweep

import (
	"math"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// The account's committed money: each running pod's worst case left by
// its own rules, a kept one running and one not judged apart, a stopped
// pod's storage not in it.
func TestReportCommitted(t *testing.T) {
	h := time.Hour
	p := Policy{Now: func() time.Time { return sweepNow }}
	// At $2/h: a deadline 2 h off (and its hour of extension, a tick)
	// leaves 3h1m; a cap of $1 on a pod an hour old leaves nothing of
	// the cap, but the boot grace's 30 min is past too: 0.
	tick := podenv.DefaultInterval
	pods := []runpod.Pod{
		guarded("deadline", runpod.StatusRunning, h, 0, podenv.DeadlineEnv, unix(sweepNow.Add(2*h))),
		guarded("capped", runpod.StatusRunning, h, 0, podenv.MaxCostEnv, "1"),
		guarded("kept", runpod.StatusRunning, h, 0, podenv.KeepEnv, "1"),
		guarded("stopped", runpod.StatusExited, h, 0),
		guarded("odd", runpod.StatusRunning, h, 0, podenv.DeadlineEnv, "soon"),
	}
	rep := judgeAll(pods, nil, p)
	usd, unbounded := rep.Committed()
	// The follow bound is the larger: a tick and FollowMargin.
	want := 2 * (3*h + tick + podenv.FollowMargin).Hours()
	if math.Abs(usd-want) > 1e-6 {
		t.Errorf("committed $%v, want $%v", usd, want)
	}
	var ids []string
	for _, d := range unbounded {
		ids = append(ids, d.RunID)
	}
	if len(ids) != 2 || ids[0] != "kept" || ids[1] != "odd" {
		t.Errorf("unbounded %v, want kept and odd", ids)
	}
}
