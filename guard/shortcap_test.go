package guard

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A job asked for the cost snapshot that does not stop before the cap:
// with WithEarlyResults, Follow downloads what it checkpointed while the
// pod lives, before the cap takes it; the pod then found gone names the
// cost cap as the rule due, and the run's cost runs to the cap, less the
// watchdog's rounding (the last look found the pod alive before it), not to
// the moment the pod was seen gone.
func TestAJobPastItsCapIsCollectedBeforeThePodGoes(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.MaxCostUSD = 0.69 // an hour at the fake's $0.69/h
	asked := running
	asked.Request = watchdog.ReasonCost
	var r *Run
	capAt := func() time.Time { return capOf(t, r) }
	var goneAt time.Time
	h.pod.looks = []look{{st: ready}, {st: running}, {st: asked},
		{st: asked, do: func() { h.jump(capAt().Add(-40 * time.Second)) }},
		{st: asked},
		{st: asked, do: func() { h.jump(capAt().Add(-10 * time.Second)) }},
		{st: asked},
		{err: io.ErrUnexpectedEOF, do: func() {
			goneAt = capAt().Add(20 * time.Second)
			h.jump(goneAt)
			h.api.setStatus("", true)
		}}}
	dir := t.TempDir()
	r = h.mustStart(spec, WithEarlyResults(dir))
	_, err := r.Follow(context.Background(), io.Discard)
	var gone *PodGoneError
	if !errors.As(err, &gone) {
		t.Fatalf("Follow: %v, want a *PodGoneError", err)
	}
	if gone.DeleteReason != "" || gone.Due != watchdog.DeleteCostCap || gone.Rule() != watchdog.DeleteCostCap {
		t.Errorf("error %+v: want the cost cap as the rule due", *gone)
	}
	downloads := h.pod.downloads
	if len(downloads) != 1 || downloads[0].Dir != dir {
		t.Fatalf("%d downloads (%+v), want one into %s", len(downloads), downloads, dir)
	}
	if es := h.eventsOf(EventCollected); len(es) != 1 || es[0].Dir != dir {
		t.Errorf("collected events %+v", es)
	}
	rec := r.Record()
	if want := capAt().Add(-ruleEarly); !rec.Ended.Equal(want) {
		t.Errorf("ended at cap%+v, want at the cap less ruleEarly (the pod was seen gone at cap+20s)", rec.Ended.Sub(capAt()))
	}
	if rec.CostUSD > spec.MaxCostUSD {
		t.Errorf("cost %v past the cap %v", rec.CostUSD, spec.MaxCostUSD)
	}
}

// The watchdog counts whole seconds, so its cap may take the pod a little
// before the cap's time on this machine's clock: a pod last seen alive
// 0.4 s before that time and found gone after it is told to have cost up
// to that look, never past a delete that may have come right after it.
func TestACapTakenEarlyIsNotCountedPastTheDelete(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.MaxCostUSD = 0.69
	asked := running
	asked.Request = watchdog.ReasonCost
	var r *Run
	capAt := func() time.Time { return capOf(t, r) }
	var lastAlive time.Time
	h.pod.looks = []look{{st: ready}, {st: running}, {st: asked},
		{st: asked, do: func() { lastAlive = capAt().Add(-400 * time.Millisecond); h.jump(lastAlive) }},
		{err: io.ErrUnexpectedEOF, do: func() {
			h.jump(capAt().Add(200 * time.Millisecond))
			h.api.setStatus("", true)
		}}}
	r = h.mustStart(spec)
	_, err := r.Follow(context.Background(), io.Discard)
	var gone *PodGoneError
	if !errors.As(err, &gone) || gone.Rule() != watchdog.DeleteCostCap {
		t.Fatalf("Follow: %v, want a *PodGoneError of the cost cap", err)
	}
	if rec := r.Record(); !rec.Ended.Equal(lastAlive) {
		t.Errorf("ended at cap%+v, want at the last look that found the pod alive (cap-400ms)", rec.Ended.Sub(capAt()))
	}
}

// Without WithEarlyResults nothing is downloaded before the end; a pod
// gone before any rule's time names none.
func TestNoEarlyResultsUnlessAsked(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.MaxCostUSD = 0.69
	asked := running
	asked.Request = watchdog.ReasonCost
	h.pod.looks = []look{{st: ready}, {st: running}, {st: asked}, {st: asked},
		{err: io.ErrUnexpectedEOF, do: func() { h.api.setStatus("", true) }}}
	r := h.mustStart(spec)
	_, err := r.Follow(context.Background(), io.Discard)
	var gone *PodGoneError
	if !errors.As(err, &gone) || gone.Due != "" {
		t.Fatalf("Follow: %v, want a *PodGoneError with no rule due", err)
	}
	if n := len(h.pod.downloads); n != 0 {
		t.Errorf("%d downloads, want none", n)
	}
	if rec := r.Record(); rec.Ended.After(h.clk.Now()) || rec.Ended.Before(rec.BillingStart) {
		t.Errorf("ended at %v, now %v", rec.Ended, h.clk.Now())
	}
}

// capOf is the time of r's cost cap on this machine's clock, as hardEnd
// has it: the plan the pod was given.
func capOf(t *testing.T, r *Run) time.Time {
	t.Helper()
	rec := r.Record()
	if rec.CostCapAt.IsZero() {
		t.Fatal("the run keeps no cost plan")
	}
	return rec.CostCapAt
}

// jump sets the harness's clock.
func (h *harness) jump(to time.Time) {
	h.clk.mu.Lock()
	h.clk.now = to
	h.clk.mu.Unlock()
}

// A record saved without its cost plan (before the Record kept one) gets
// the one its rules give once its follow begins, and keeps it: the looks
// read it rather than compute it again.
func TestAFollowKeepsTheCostPlanOfARecordWithout(t *testing.T) {
	h := newHarness(t, look{st: ready}, look{st: running}, look{st: running}, look{st: exited(0)})
	spec := h.spec()
	spec.MaxCostUSD = 2
	r := h.mustStart(spec)
	r.rec.SnapshotAt, r.rec.CostCapAt = time.Time{}, time.Time{}
	want, err := costplan.CostCap(r.rec.Rules, r.rec.BillingStart, r.rec.CostPerHr, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Follow(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	if rec := r.Record(); rec.CostCapAt.Unix() != want.CostCapAt || rec.SnapshotAt.Unix() != want.SnapshotAt {
		t.Errorf("the record's plan %v, %v; its rules give %d, %d", rec.SnapshotAt, rec.CostCapAt, want.SnapshotAt, want.CostCapAt)
	}
}
