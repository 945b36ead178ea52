package guard

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A failed verdict means the watchdog cannot delete the pod: Launch
// deletes it, even when asked to leave pods on failure.
func TestFailedVerdictDeletesThePod(t *testing.T) {
	for _, leave := range []bool{false, true} {
		failed := noVerdict
		failed.Verdict = watchdog.ParseVerdict("failed http_401")
		h := newHarness(t, look{st: noVerdict}, look{st: failed})
		var opts []Option
		if leave {
			opts = append(opts, WithLeaveOnFailure())
		}
		r, err := h.launch(context.Background(), h.spec(), opts...)
		var v *VerdictError
		if r != nil || !errors.Is(err, ErrVerdictFailed) || !errors.As(err, &v) {
			t.Fatalf("leave %v: Launch = %v, %v; want no run and a *VerdictError", leave, r, err)
		}
		if *v != (VerdictError{Verdict: failed.Verdict}) || v.Verdict.Reason != "http_401" {
			t.Errorf("leave %v: %+v", leave, *v)
		}
		if n, m := h.api.count("DeletePod"), h.api.count("DeleteSecret"); n != 1 || m != 1 {
			t.Errorf("leave %v: %d pod and %d secret deletes, want 1 and 1", leave, n, m)
		}
		if got := h.lastSaved(); got.Phase != PhaseFailed || got.Verdict != failed.Verdict.String() {
			t.Errorf("leave %v: saved phase %s, verdict %q", leave, got.Phase, got.Verdict)
		}
	}
}

// Once the verdict was ready, a failure leaves the pod to its armed
// watchdog with WithLeaveOnFailure, and deletes it without.
func TestFailureAfterAReadyVerdict(t *testing.T) {
	for _, tc := range []struct {
		name  string
		looks []look
		setup func(*harness)
		act   func(context.Context, *Run) error
	}{
		{"upload fails", []look{{st: ready}},
			func(h *harness) { h.pod.uploadErr = errors.New("fake: no space left on device") },
			func(ctx context.Context, r *Run) error { return r.Start(ctx, Job{}) }},
		{"watch.sh fails", []look{{st: ready}, {err: &podssh.CommandError{Status: 2, Stderr: "sh: syntax error"}}},
			nil,
			func(ctx context.Context, r *Run) error {
				if err := r.Start(ctx, Job{}); err != nil {
					return err
				}
				_, err := r.Follow(ctx, io.Discard)
				return err
			}},
	} {
		for _, leave := range []bool{true, false} {
			h := newHarness(t, tc.looks...)
			if tc.setup != nil {
				tc.setup(h)
			}
			var opts []Option
			if leave {
				opts = append(opts, WithLeaveOnFailure())
			}
			ctx := context.Background()
			r, err := h.launch(ctx, h.spec(), opts...)
			if err != nil || r == nil {
				t.Fatalf("%s: Launch = %v, %v", tc.name, r, err)
			}
			if err := tc.act(ctx, r); err == nil {
				t.Fatalf("%s: no error", tc.name)
			}
			wantPhase, wantDeletes, wantThen, wantLeft := PhaseFailed, 1, ThenDelete, 0
			if leave {
				wantPhase, wantDeletes, wantThen, wantLeft = PhaseLeftToPod, 0, ThenLeave, 1
			}
			if got := h.lastSaved().Phase; got != wantPhase {
				t.Errorf("%s, leave %v: phase %s, want %s", tc.name, leave, got, wantPhase)
			}
			if n := h.api.count("DeletePod"); n != wantDeletes {
				t.Errorf("%s, leave %v: %d pod deletes, want %d", tc.name, leave, n, wantDeletes)
			}
			if es := h.eventsOf(EventFailed); len(es) != 1 || es[0].Then != wantThen {
				t.Errorf("%s, leave %v: failed events %+v", tc.name, leave, es)
			}
			if got := len(h.eventsOf(EventLeft)); got != wantLeft {
				t.Errorf("%s, leave %v: %d left events, want %d", tc.name, leave, got, wantLeft)
			}
		}
	}
}

// A download that fails leaves the pod, which holds the only copy of the
// results, to its retrieve grace; when the pod is gone there is nothing
// to keep, and the run is torn down.
func TestCollectFailure(t *testing.T) {
	for _, gone := range []bool{false, true} {
		h := newHarness(t, look{st: ready}, look{st: running}, look{st: exited(0)})
		h.pod.downloadErr = errors.New("fake: connection reset")
		if gone {
			h.pod.onDownload = func() { h.api.setStatus("", true) }
		}
		ctx := context.Background()
		r := h.mustStart(h.spec())
		if _, err := r.Follow(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
		_, err := r.Collect(ctx, t.TempDir())
		var ce *CollectError
		if !errors.Is(err, ErrCollect) || !errors.As(err, &ce) {
			t.Fatalf("gone %v: Collect: %v, want a *CollectError", gone, err)
		}
		wantPhase, wantCalls := PhaseLeftToPod, []string{"GetPod"}
		if gone {
			// A 404 is looked at three times; the delete is confirmed.
			wantPhase, wantCalls = PhaseFailed, []string{"GetPod", "GetPod", "GetPod", "DeletePod", "GetPod", "ListPods", "DeleteSecret"}
		}
		if got := h.lastSaved().Phase; got != wantPhase {
			t.Errorf("gone %v: phase %s, want %s", gone, got, wantPhase)
		}
		calls := h.api.methods()
		calls = calls[len(calls)-len(wantCalls):]
		if diff := cmp.Diff(wantCalls, calls); diff != "" {
			t.Errorf("gone %v: the last API calls (-want +got):\n%s", gone, diff)
		}
		if len(h.pod.allPuts()) != 0 {
			t.Errorf("gone %v: retrieved written after a failed download: %v", gone, h.pod.allPuts())
		}
	}
}

// A cancelled context ends Follow with its error and leaves the pod and
// the secret; Delete still deletes with a context that is not cancelled.
func TestCancelledFollow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHarness(t, look{st: ready}, look{st: running, out: "a"}, look{st: running, out: "b", do: cancel}, look{st: running})
	r := h.mustStart(h.spec())
	before := len(h.api.methods())
	_, err := r.Follow(ctx, io.Discard)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow: %v, want context.Canceled", err)
	}
	if calls := h.api.methods()[before:]; len(calls) != 0 {
		t.Errorf("API calls after the cancel: %v", calls)
	}
	if es := h.eventsOf(EventFailed); len(es) != 0 {
		t.Errorf("a cancel is no failure: %v", es)
	}
	if got := r.Record().LogOffset; got != 2 {
		t.Errorf("offset %d, want 2: the output read before the cancel was written", got)
	}
	res, err := r.Delete(ctx)
	if err != nil || res != runpod.Deleted {
		t.Fatalf("Delete after the cancel = %v, %v", res, err)
	}
	if diff := cmp.Diff([]string{"DeletePod " + fakePodID, "GetPod " + fakePodID, "ListPods overbrainer-" + testRunID, "DeleteSecret " + fakeSecretID}, h.api.allCalls()[before:]); diff != "" {
		t.Errorf("API calls of the Delete (-want +got):\n%s", diff)
	}
	if got := r.Record().Phase; got != PhaseFailed {
		t.Errorf("phase %s, want failed: nothing was collected", got)
	}
}

// A Launch whose context ends deletes the pod, unless WithDetachOnCancel:
// then it returns the Run, the pod left to its watchdog.
func TestCancelledLaunch(t *testing.T) {
	for _, detach := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		h := newHarness(t, look{st: noVerdict, do: cancel})
		var opts []Option
		if detach {
			opts = append(opts, WithDetachOnCancel())
		}
		r, err := h.launch(ctx, h.spec(), opts...)
		cancel()
		if !errors.Is(err, context.Canceled) || (r != nil) != detach {
			t.Fatalf("detach %v: Launch = %v, %v", detach, r, err)
		}
		wantPhase, wantDeletes := PhaseFailed, 1
		if detach {
			wantPhase, wantDeletes = PhaseDetached, 0
		}
		if got := h.lastSaved().Phase; got != wantPhase {
			t.Errorf("detach %v: phase %s, want %s", detach, got, wantPhase)
		}
		if n := h.api.count("DeletePod"); n != wantDeletes {
			t.Errorf("detach %v: %d pod deletes, want %d (%v)", detach, n, wantDeletes, h.api.allCalls())
		}
	}
}

// Once the results were collected the run's purpose is met, and the Record
// says so in every process: a Delete, a Remove, or a pod found gone (the
// watchdog's retrieved rule) all end it done, never failed or removed.
func TestACollectedRunEndsDone(t *testing.T) {
	ctx := context.Background()
	collected := func(t *testing.T) (*harness, Record) {
		h := newHarness(t, look{st: ready}, look{st: running}, look{st: exited(0)})
		r := h.mustStart(h.spec())
		if _, err := r.Follow(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Collect(ctx, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		rec := r.Record()
		if rec.Collected.IsZero() {
			t.Fatal("the Record does not say the results were collected")
		}
		r.Detach()
		return h, rec
	}
	t.Run("remove", func(t *testing.T) {
		h, rec := collected(t)
		got, _, err := remove(ctx, h.api, rec, false, h.options()...)
		if err != nil || got.Phase != PhaseDone {
			t.Errorf("remove: phase %s, %v", got.Phase, err)
		}
	})
	t.Run("attach and delete", func(t *testing.T) {
		h, rec := collected(t)
		h.pod.looks = append(h.pod.looks, look{st: exited(0)})
		r, err := attach(ctx, h.api, rec, h.options()...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Delete(ctx); err != nil || r.Record().Phase != PhaseDone {
			t.Errorf("delete: phase %s, %v", r.Record().Phase, err)
		}
	})
	t.Run("pod gone", func(t *testing.T) {
		h, rec := collected(t)
		h.api.setStatus("", true)
		if _, err := attach(ctx, h.api, rec, h.options()...); !errors.Is(err, ErrPodGone) {
			t.Fatalf("attach to a gone pod: %v", err)
		}
		if got := h.lastSaved(); got.Phase != PhaseDone || got.Note != "" {
			t.Errorf("saved phase %s, note %q", got.Phase, got.Note)
		}
	})
}

// A Start whose context ends before the job was started deletes the pod,
// as a cancelled Launch does: no job means the pod would only bill its
// boot grace. WithDetachOnCancel leaves it to its watchdog.
func TestCancelledStart(t *testing.T) {
	for _, detach := range []bool{false, true} {
		h := newHarness(t, look{st: ready})
		ctx, cancel := context.WithCancel(context.Background())
		var opts []Option
		if detach {
			opts = append(opts, WithDetachOnCancel())
		}
		r, err := h.launch(ctx, h.spec(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		h.pod.uploadErr = context.Canceled
		cancel()
		if err := r.Start(ctx, Job{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("detach %v: Start: %v, want context.Canceled", detach, err)
		}
		wantDeletes := 1
		if detach {
			wantDeletes = 0
		}
		if n := h.api.count("DeletePod"); n != wantDeletes || r.PodGone() != !detach {
			t.Errorf("detach %v: %d pod deletes (want %d), ended %v: %v", detach, n, wantDeletes, r.PodGone(), h.api.allCalls())
		}
		if len(h.pod.starts) != 0 {
			t.Errorf("detach %v: the job was started", detach)
		}
	}
}

// While it follows, the client backs up its watchdog's money rules: a
// watchdog that died or hangs does not leave the pod billing under its
// eyes. Each rule acts a tick and a margin after the watchdog's would.
func TestTheClientEnforcesTheMoneyRules(t *testing.T) {
	const poll = 10 * time.Second
	late := podenv.DefaultInterval + enforceMargin
	t.Run("cost cap", func(t *testing.T) {
		h := newHarness(t, look{st: ready}, look{st: ready}, look{st: running, out: "a"})
		spec := h.spec()
		spec.MaxCostUSD, spec.SnapshotLead = 0.69, 5*time.Minute // an hour, the snapshot 5m before
		// The job is silent for that hour: no stall rule before the cap.
		spec.StallAfter = 2 * time.Hour
		r := h.mustStart(spec, WithPoll(poll))
		_, err := r.Follow(context.Background(), io.Discard)
		var ee *EnforcedError
		if !errors.As(err, &ee) || !errors.Is(err, ErrEnforced) || ee.Reason != watchdog.DeleteCostCap {
			t.Fatalf("Follow: %v, want the cost cap enforced", err)
		}
		if at := h.clk.Now().Sub(t0); at < time.Hour+late || at > time.Hour+late+2*poll {
			t.Errorf("enforced %s after the create, want %s", at, time.Hour+late)
		}
		var asked []string
		for _, p := range h.pod.allPuts() {
			if p.Name == watchdog.SnapshotRequest {
				asked = append(asked, p.Value)
			}
		}
		if diff := cmp.Diff([]string{string(watchdog.ReasonCost)}, asked); diff != "" {
			t.Errorf("snapshot requests (-want +got):\n%s", diff)
		}
		if n := h.api.count("DeletePod"); n != 1 || r.Record().Phase != PhaseFailed {
			t.Errorf("%d pod deletes, phase %s", n, r.Record().Phase)
		}
	})
	t.Run("deadline, lease stale", func(t *testing.T) {
		h := newHarness(t, look{st: ready}, look{st: running, out: "a"})
		spec := h.spec()
		spec.Deadline = t0.Add(30 * time.Minute)
		r := h.mustStart(spec, WithPoll(poll))
		_, err := r.Follow(context.Background(), io.Discard)
		var ee *EnforcedError
		if !errors.As(err, &ee) || ee.Reason != watchdog.DeleteDeadline {
			t.Fatalf("Follow: %v, want the deadline enforced", err)
		}
		want := 30*time.Minute + podenv.DefaultSnapshotWait + late
		if at := h.clk.Now().Sub(t0); at < want || at > want+2*poll {
			t.Errorf("enforced %s after the create, want %s", at, want)
		}
		if n := h.api.count("DeletePod"); n != 1 {
			t.Errorf("%d pod deletes", n)
		}
	})
	t.Run("deadline, lease held", func(t *testing.T) {
		looks := []look{{st: ready}}
		for range 400 { // 66 minutes of output
			looks = append(looks, look{st: running, out: "x"})
		}
		h := newHarness(t, append(looks, look{st: exited(0)})...)
		spec := h.spec()
		spec.Deadline = t0.Add(30 * time.Minute)
		r := h.mustStart(spec, WithPoll(poll))
		if end, err := r.Follow(context.Background(), io.Discard); err != nil || !end.OK() {
			t.Fatalf("Follow = %v, %v: a held lease extends the deadline", end, err)
		}
		if n := h.api.count("DeletePod"); n != 0 {
			t.Errorf("%d pod deletes", n)
		}
	})
	// ... but only for MaxExtension: then the client deletes the pod
	// though it holds the lease itself.
	for _, c := range []struct {
		name string
		ext  time.Duration
		hard bool
		want time.Duration
	}{{"extension held", 20 * time.Minute, false, 50 * time.Minute}, {"hard deadline", 0, true, 30 * time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			looks := []look{{st: ready}}
			for range 600 { // 100 minutes of output
				looks = append(looks, look{st: running, out: "x"})
			}
			h := newHarness(t, append(looks, look{st: exited(0)})...)
			spec := h.spec()
			spec.Deadline = t0.Add(30 * time.Minute)
			spec.MaxExtension, spec.HardDeadline = c.ext, c.hard
			r := h.mustStart(spec, WithPoll(poll))
			_, err := r.Follow(context.Background(), io.Discard)
			var ee *EnforcedError
			if !errors.As(err, &ee) || ee.Reason != watchdog.DeleteMaxExtension {
				t.Fatalf("Follow: %v, want the extension's end enforced", err)
			}
			if at := h.clk.Now().Sub(t0); at < c.want+late || at > c.want+late+2*poll {
				t.Errorf("enforced %s after the create, want %s", at, c.want+late)
			}
			if n := h.api.count("DeletePod"); n != 1 {
				t.Errorf("%d pod deletes", n)
			}
		})
	}
}

// A network volume that hangs under the run directory makes every look
// time out: the client still enforces the cost cap, and the pod is
// deleted, instead of reconnecting for ever.
func TestTheClientEnforcesOnAHungVolume(t *testing.T) {
	h := newHarness(t)
	hung := look{err: errors.New("fake: the look timed out (a hung volume)"), do: func() {
		h.clk.mu.Lock()
		h.clk.now = h.clk.now.Add(shortCommand)
		h.clk.mu.Unlock()
	}}
	h.pod.looks = []look{{st: ready}, {st: ready}, {st: running, out: "a"}}
	for range 40 { // two hours of looks that time out
		h.pod.looks = append(h.pod.looks, hung)
	}
	spec := h.spec()
	spec.MaxCostUSD = 0.69 // an hour
	r := h.mustStart(spec)
	_, err := r.Follow(context.Background(), io.Discard)
	var ee *EnforcedError
	if !errors.As(err, &ee) || ee.Reason != watchdog.DeleteCostCap {
		t.Fatalf("Follow: %v, want the cost cap enforced", err)
	}
	if n := h.api.count("DeletePod"); n != 1 || r.Record().Phase != PhaseFailed {
		t.Errorf("%d pod deletes, phase %s", n, r.Record().Phase)
	}
}

// A Delete under a live context is not bounded by the teardown's time:
// that bound starts when the context ends. A crowd's deletes may wait
// minutes for the API's quota, and 19 of 200 runs under the quota failed
// at their delete when the bound counted from its start (issue 42).
func TestDeleteBoundStartsAtTheContextsEnd(t *testing.T) {
	h := newHarness(t, look{st: ready})
	// A bound that is over at once, were it counted from the start.
	r := h.mustStart(h.spec(), func(c *config) { c.teardown = 0 })
	res, err := r.Delete(context.Background())
	if err != nil || res != runpod.Deleted {
		t.Fatalf("Delete under a live context = %v, %v; want it deleted", res, err)
	}
}
