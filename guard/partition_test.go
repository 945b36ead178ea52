package guard

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A host partition: the API says the pod runs, its SSH port answers
// nothing. The following client still holds it to the money rules on
// every turn of its reconnect loop: past the cost cap, or past the
// deadline with the lease lapsed, it deletes the pod and sees the delete
// confirmed.
func TestRulesAreEnforcedWhileSSHIsDown(t *testing.T) {
	for _, tc := range []struct {
		name string
		cost float64
		want watchdog.DeleteReason
	}{
		{"cost cap", 0.69, watchdog.DeleteCostCap}, // an hour at the fake's $0.69/h
		{"deadline", 0, watchdog.DeleteDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) { enforcedWhileSSHIsDown(t, tc.cost, tc.want) })
	}
}

func enforcedWhileSSHIsDown(t *testing.T, maxUSD float64, want watchdog.DeleteReason) {
	h := newHarness(t)
	spec := h.spec()
	spec.MaxCostUSD = maxUSD
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var r *Run
	// due is when the client's rule falls due, on this machine's clock.
	due := func() time.Time {
		rec := r.Record()
		if want == watchdog.DeleteCostCap {
			return capOf(t, r)
		}
		return rec.Deadline.Add(rec.EffectiveRules().SnapshotWait)
	}
	var down atomic.Bool
	dial := func(ctx context.Context, tg podssh.Target) (conn, error) {
		if !down.Load() {
			return h.dial(ctx, tg)
		}
		if h.clk.Now().After(due().Add(time.Hour)) {
			// An hour past the rule and still knocking: the client
			// enforces nothing while it reconnects.
			cancel()
		}
		return nil, errors.New("fake: connection timed out")
	}
	h.pod.looks = []look{{st: ready}, {st: running},
		{err: io.ErrUnexpectedEOF, do: func() { down.Store(true) }}}
	r = h.mustStart(spec, withDial(dial))
	_, err := r.Follow(ctx, io.Discard)
	var enforced *EnforcedError
	if !errors.As(err, &enforced) || enforced.Reason != want {
		t.Fatalf("Follow: %v, want an *EnforcedError of %s", err, want)
	}
	if n := h.api.count("DeletePod"); n != 1 {
		t.Errorf("%d pod deletes, want 1: %v", n, h.api.allCalls())
	}
	if es := h.eventsOf(EventDeleted); len(es) != 1 || es[0].Err != nil {
		t.Errorf("deleted events %+v, want one confirmed", es)
	}
	rec := r.Record()
	if !r.PodGone() || rec.Phase != PhaseFailed {
		t.Errorf("ended %v, phase %s", r.PodGone(), rec.Phase)
	}
	// Nothing is written to a pod SSH does not reach: no dial of its own
	// for the cost cap's snapshot, no warning of it at each turn.
	if es := h.eventsOf(EventWarning); len(es) != 0 {
		t.Errorf("warnings %v", es)
	}
	// Within a turn of the reconnect loop of the client's own time for it.
	if late := rec.Ended.Sub(due()); late > rec.EffectiveRules().Interval+enforceMargin+2*time.Minute {
		t.Errorf("the pod was deleted %s after the rule's time", late)
	}
}
