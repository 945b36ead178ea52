package guard

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A job asked for a stall snapshot has its results downloaded before the
// stalled rule's delete; when the job moved again and that time passed
// with the pod still there, the cost cap's end is foreseen next, and the
// results are downloaded again before it.
func TestEarlyResultsBeforeEachForeseenEnd(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.MaxCostUSD = 0.69 // an hour at the fake's $0.69/h
	spec.StallAfter = 10 * time.Minute
	asked := running
	asked.Request = watchdog.ReasonStall
	script := []look{{st: ready}, {st: running}}
	for range 2000 { // past the cap, 2 s apart
		script = append(script, look{st: asked, out: "."})
	}
	h.pod.looks = script
	var at []time.Time
	h.pod.onDownload = func() { at = append(at, h.clk.Now()) }
	r := h.mustStart(spec, WithEarlyResults(t.TempDir()))
	askedAt := h.clk.Now()
	_, err := r.Follow(context.Background(), io.Discard)
	if !errors.Is(err, ErrEnforced) {
		t.Fatalf("Follow: %v, want the cost cap enforced", err)
	}
	if len(at) != 2 {
		t.Fatalf("downloads at %v, want two", at)
	}
	wait := r.Record().EffectiveRules().SnapshotWait
	if stallEnd := askedAt.Add(wait - testPoll); !at[0].Before(stallEnd) || at[0].Before(askedAt.Add(wait/3)) {
		t.Errorf("first download %s after the stall snapshot was asked, want before its delete at %s and after the job had a third of the wait",
			at[0].Sub(askedAt), wait-testPoll)
	}
	if capAt := capOf(t, r); !at[1].Before(capAt) || at[1].Before(capAt.Add(-10*time.Minute)) {
		t.Errorf("second download %s before the cap, want within 10 min before it", capAt.Sub(at[1]))
	}
}
