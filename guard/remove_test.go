package guard

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Remove of a run's own Record deletes its pod and secret.
func TestRemove(t *testing.T) {
	h := newHarness(t, look{st: ready})
	rec := launched(t, h)
	rec.PodID = "" // found by name
	got, res, err := remove(context.Background(), h.api, rec, false, h.options()...)
	if err != nil || res != runpod.Deleted {
		t.Fatalf("remove = %v, %v", res, err)
	}
	if got.Phase != PhaseRemoved || got.PodID != fakePodID || got.SecretID != "" {
		t.Errorf("record: phase %s, pod %q, secret %q", got.Phase, got.PodID, got.SecretID)
	}
	if n, m := h.api.count("DeletePod"), h.api.count("DeleteSecret"); n != 1 || m != 1 {
		t.Errorf("%d pod and %d secret deletes, want 1 and 1", n, m)
	}
}

// The same goes for Remove, which deletes without connecting: a Record
// that names another run's pod or secret must not delete them.
func TestRemoveRefusesARecordOfAnotherRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Record, *fakeAPI)
	}{
		{"another pod name", func(r *Record, a *fakeAPI) { r.PodName = podenv.PodNamePrefix + "run2"; a.podName = r.PodName }},
		{"another pod name, no pod id", func(r *Record, a *fakeAPI) {
			r.PodName, r.PodID = podenv.PodNamePrefix+"run2", ""
			a.podName = r.PodName
		}},
		{"another secret", func(r *Record, _ *fakeAPI) { r.SecretName, r.SecretID = "someone_elses", "" }},
		{"a pod of another name", func(_ *Record, a *fakeAPI) { a.podName = podenv.PodNamePrefix + "run2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, look{st: ready})
			rec := launched(t, h)
			h.api.secrets["someone_elses"] = "x"
			tc.edit(&rec, h.api)
			_, res, err := remove(context.Background(), h.api, rec, false, h.options()...)
			if !errors.Is(err, ErrRecordMismatch) || res != runpod.NotDeleted {
				t.Fatalf("remove = %v, %v; want ErrRecordMismatch", res, err)
			}
			if n, m := h.api.count("DeletePod"), h.api.count("DeleteSecret"); n != 0 || m != 0 {
				t.Errorf("remove deleted %d pods and %d secrets", n, m)
			}
		})
	}
}

// Remove refuses a run whose job was started and whose results were not
// collected while its pod is up: the results would go with it. force,
// collected results, or a pod that no longer runs let it delete.
func TestRemoveRefusesUncollectedResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*Record, *fakeAPI)
		force   bool
		refused bool
	}{
		{"job started", func(r *Record, a *fakeAPI) {}, false, true},
		{"job started, forced", func(r *Record, a *fakeAPI) {}, true, false},
		{"results collected", func(r *Record, a *fakeAPI) { r.Collected = t0 }, false, false},
		{"pod exited", func(r *Record, a *fakeAPI) { a.status = runpod.StatusExited }, false, false},
		{"pod gone", func(r *Record, a *fakeAPI) { a.gone = true }, false, false},
		{"no job", func(r *Record, a *fakeAPI) { r.JobStarted = time.Time{} }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, look{st: ready})
			rec := launched(t, h)
			rec.JobStarted = t0
			tc.edit(&rec, h.api)
			_, res, err := remove(context.Background(), h.api, rec, tc.force, h.options()...)
			deletes := h.api.count("DeletePod")
			if tc.refused {
				if !errors.Is(err, ErrNotCollected) || res != runpod.NotDeleted || deletes != 0 {
					t.Fatalf("remove = %v, %v with %d deletes, want a refusal", res, err, deletes)
				}
				if !strings.Contains(err.Error(), "not collected") || !strings.Contains(err.Error(), "RUNNING") {
					t.Errorf("the refusal %q does not say why", err)
				}
				return
			}
			if err != nil || deletes != 1 {
				t.Fatalf("remove = %v, %v with %d deletes, want the pod deleted", res, err, deletes)
			}
		})
	}
}

// Only a provably abandoned orphan (by Sweep's rules) is deleted, with its
// run's secret; a running one may be another machine's live run, and one
// without the run marker is never.
func TestRemoveOrphan(t *testing.T) {
	marked := testPodEnv(t, podenv.Settings{RunID: "elsewhere-1"})
	late := testPodEnv(t, podenv.Settings{RunID: "elsewhere-1", Rules: podenv.Rules{Deadline: t0.Add(-25 * time.Hour)}})
	kept := testPodEnv(t, podenv.Settings{RunID: "elsewhere-1", Rules: podenv.Rules{Keep: true}})
	for _, tc := range []struct {
		status  runpod.PodStatus
		env     map[string]string
		deleted bool
		started time.Duration // how long ago
	}{
		{runpod.StatusRunning, marked, false, time.Hour}, {runpod.StatusStarting, marked, false, time.Hour},
		{runpod.StatusExited, marked, true, time.Hour}, {runpod.StatusError, marked, true, time.Hour},
		{runpod.StatusExited, nil, false, time.Hour}, {runpod.StatusRunning, late, true, time.Hour},
		// Mid-restart: within the sweeper's exited grace. Kept: only rm RUN.
		{runpod.StatusExited, marked, false, time.Minute}, {runpod.StatusExited, kept, false, time.Hour},
	} {
		h := newHarness(t)
		h.api.status, h.api.podName = tc.status, podenv.PodNamePrefix+"elsewhere-1"
		started := t0.Add(-tc.started)
		pod := runpod.Pod{ID: fakePodID, Name: h.api.podName, Status: tc.status, Env: tc.env, CreatedAt: t0.Add(-time.Hour), StartedAt: &started}
		res, err := removeOrphan(context.Background(), h.api, pod, h.options()...)
		if tc.deleted {
			if err != nil || res != runpod.Deleted {
				t.Errorf("%s: removeOrphan = %v, %v", tc.status, res, err)
			}
		} else if !errors.Is(err, ErrNotAbandoned) || res != runpod.NotDeleted {
			t.Errorf("%s: removeOrphan = %v, %v, want ErrNotAbandoned", tc.status, res, err)
		}
		want := []string(nil)
		if tc.deleted {
			want = []string{"DeletePod " + fakePodID, "GetPod " + fakePodID, "ListPods overbrainer-elsewhere-1",
				"FindSecret overbrainer_host_key_elsewhere-1"}
		}
		if diff := cmp.Diff(want, h.api.allCalls()); diff != "" {
			t.Errorf("%s: API calls (-want +got):\n%s", tc.status, diff)
		}
	}
	h := newHarness(t)
	if _, err := removeOrphan(context.Background(), h.api, runpod.Pod{ID: "x", Name: "someone-else", Status: runpod.StatusExited}); !errors.Is(err, ErrNotAbandoned) || len(h.api.allCalls()) != 0 {
		t.Errorf("removeOrphan of another's pod: %v, calls %v", err, h.api.allCalls())
	}
}

// A delete is confirmed by the API: the run waits, on its clock, until the
// pod is gone from GET and from the list, up to a minute, and else says
// plainly that the delete is not confirmed and how to check.
func TestADeleteIsConfirmed(t *testing.T) {
	t.Run("gone after a while", func(t *testing.T) {
		h := newHarness(t, look{st: ready})
		h.api.lingers = 2
		r, err := h.launch(context.Background(), h.spec())
		if err != nil {
			t.Fatal(err)
		}
		before, at := len(h.api.methods()), h.clk.Now()
		if res, err := r.Delete(context.Background()); err != nil || res != runpod.Deleted {
			t.Fatalf("Delete = %v, %v", res, err)
		}
		want := []string{"DeletePod", "GetPod", "GetPod", "GetPod", "ListPods", "DeleteSecret"}
		if diff := cmp.Diff(want, h.api.methods()[before:]); diff != "" {
			t.Errorf("API calls of the Delete (-want +got):\n%s", diff)
		}
		if waited := h.clk.Now().Sub(at); waited < 2*confirmEvery || waited > time.Minute {
			t.Errorf("waited %s for the pod to go", waited)
		}
	})
	t.Run("never gone", func(t *testing.T) {
		h := newHarness(t, look{st: ready})
		h.api.lingers = -1
		r, err := h.launch(context.Background(), h.spec())
		if err != nil {
			t.Fatal(err)
		}
		at := h.clk.Now()
		res, err := r.Delete(context.Background())
		var ue *DeleteUnconfirmedError
		if !errors.Is(err, ErrDeleteUnconfirmed) || !errors.As(err, &ue) || res != runpod.Deleted {
			t.Fatalf("Delete = %v, %v, want an unconfirmed delete", res, err)
		}
		if waited := h.clk.Now().Sub(at); waited < time.Minute || waited > 2*time.Minute {
			t.Errorf("gave up after %s, want about a minute", waited)
		}
		es := h.eventsOf(EventDeleted)
		if len(es) != 1 || !errors.Is(es[0].Err, ErrDeleteUnconfirmed) {
			t.Fatalf("deleted events %v", es)
		}
		for _, want := range []string{"NOT confirmed", "GET still shows it RUNNING", "GET /v2/pods/" + fakePodID, "console"} {
			if !strings.Contains(es[0].Err.Error(), want) {
				t.Errorf("the event %q does not say %q", es[0].Err, want)
			}
		}
	})
}

// A single 404 is looked at again before the run is called gone: an API
// that loses a pod for a moment does not end a run whose pod still runs.
func TestASingle404IsLookedAtAgain(t *testing.T) {
	h := newHarness(t)
	h.pod.looks = []look{{st: ready}, {st: running, out: "a"},
		{err: io.ErrUnexpectedEOF, do: func() { h.api.mu.Lock(); h.api.notFound = 2; h.api.mu.Unlock() }},
		{st: exited(0), out: "b"}}
	r := h.mustStart(h.spec())
	var out strings.Builder
	end, err := r.Follow(context.Background(), &out)
	if err != nil || !end.OK() || out.String() != "ab" {
		t.Fatalf("Follow = %+v, %v (output %q), want the job's end after a reconnect", end, err, out.String())
	}
	if n := h.api.count("DeletePod"); n != 0 {
		t.Errorf("%d pod deletes", n)
	}
}
