package runpod

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stepOutcome is how the fake answers one step of DeletePod's chain.
type stepOutcome int

const (
	stepOK   stepOutcome = iota // the step works
	stepGone                    // 404: the pod is already gone
	stepFail                    // the step fails (kind chosen by failKind)
)

func (o stepOutcome) String() string { return [...]string{"ok", "404", "fail"}[o] }

// failKinds are the ways a step fails, from a plain 500 to a 503 that
// outlasts the retries and a dropped connection.
var failKinds = []struct {
	name    string
	retry   bool // the client retries it
	unknown bool // the step may have been done: an action is checked with GET
	write   func(t *testing.T, w http.ResponseWriter)
}{
	{"500", false, false, func(t *testing.T, w http.ResponseWriter) { writeProblem(w, 500, "internal error") }},
	{"409", false, false, func(t *testing.T, w http.ResponseWriter) { writeProblem(w, 409, "pod belongs to a cluster") }},
	{"503 storm", true, false, func(t *testing.T, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "2")
		writeProblem(w, 503, "unavailable")
	}},
	{"dropped connection", true, true, func(t *testing.T, w http.ResponseWriter) { dropConnection(t, w) }},
	{"401", false, false, func(t *testing.T, w http.ResponseWriter) { writeProblem(w, 401, "invalid bearer token") }},
}

// TestDeletePodFallbackChain runs DeletePod against every combination of
// outcomes of DELETE, terminate and stop, with every kind of failure, and
// checks the result, the error and exactly which requests were made.
func TestDeletePodFallbackChain(t *testing.T) {
	const maxAttempts = 3
	outcomes := []stepOutcome{stepOK, stepGone, stepFail}
	for _, del := range outcomes {
		for _, term := range outcomes {
			for _, stop := range outcomes {
				for fk, kind := range failKinds {
					if del != stepFail && term != stepFail && stop != stepFail && fk > 0 {
						continue // the failure kind makes no difference
					}
					name := fmt.Sprintf("delete=%s,terminate=%s,stop=%s,fail=%s", del, term, stop, kind.name)
					t.Run(name, func(t *testing.T) {
						testDeleteChain(t, maxAttempts, [3]stepOutcome{del, term, stop}, fk)
					})
				}
			}
		}
	}
}

func testDeleteChain(t *testing.T, maxAttempts int, steps [3]stepOutcome, fk int) {
	c, fs := setup(t, WithRetry(maxAttempts, 1))
	kind := failKinds[fk]
	// What GET shows: RUNNING until a step worked or found the pod gone.
	var mu sync.Mutex
	shows := StatusRunning
	answer := func(w http.ResponseWriter, o stepOutcome, okStatus int, then PodStatus) {
		mu.Lock()
		switch o {
		case stepOK:
			shows = then
		case stepGone:
			shows = ""
		}
		mu.Unlock()
		switch o {
		case stepOK:
			if okStatus == http.StatusNoContent {
				w.WriteHeader(okStatus)
			} else {
				writeJSON(w, okStatus, wirePod(Pod{ID: "p1", Name: "n", Status: StatusExited}))
			}
		case stepGone:
			writeProblem(w, http.StatusNotFound, "pod not found")
		case stepFail:
			kind.write(t, w)
		}
	}
	fs.handle("DELETE /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, steps[0], http.StatusNoContent, "")
	})
	// After a lost action the client looks at the pod (still running), and
	// after a step that worked (gone, TERMINATED or EXITED).
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		st := shows
		mu.Unlock()
		if st == "" {
			writeProblem(w, http.StatusNotFound, "pod not found")
			return
		}
		writeJSON(w, http.StatusOK, wirePod(Pod{ID: "p1", Name: "n", Status: st}))
	})
	fs.handle("POST /pods/{id}/action", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Action Action }
		_ = jsonDecode(r, &body)
		switch body.Action {
		case ActionTerminate:
			answer(w, steps[1], http.StatusNoContent, StatusTerminated)
		case ActionStop:
			answer(w, steps[2], http.StatusOK, StatusExited)
		default:
			t.Errorf("unexpected action %q", body.Action)
		}
	})

	// What DeletePod must do.
	tries := 1
	if kind.retry {
		tries = maxAttempts
	}
	var wantReqs []string
	wantResult, wantErr := NotDeleted, true
	add := func(req string, o stepOutcome) {
		n := 1
		if o == stepFail {
			n = tries
		}
		for range n {
			wantReqs = append(wantReqs, req)
			if o == stepFail && kind.unknown && req != "DELETE /pods/p1" {
				wantReqs = append(wantReqs, "GET /pods/p1")
			}
		}
	}
chain:
	for i, req := range []string{"DELETE /pods/p1", "POST /pods/p1/action", "POST /pods/p1/action"} {
		add(req, steps[i])
		if steps[i] != stepFail {
			wantReqs = append(wantReqs, "GET /pods/p1") // the look that confirms it
		}
		switch steps[i] {
		case stepGone:
			wantResult, wantErr = Deleted, false
			break chain
		case stepOK:
			wantResult = [...]DeleteResult{Deleted, Terminated, Stopped}[i]
			wantErr = wantResult == Stopped
			break chain
		}
	}

	res, err := c.DeletePod(context.Background(), "p1")
	if res != wantResult {
		t.Errorf("result %v, want %v", res, wantResult)
	}
	if (err != nil) != wantErr {
		t.Fatalf("err %v, want error: %v", err, wantErr)
	}
	if diff := cmp.Diff(wantReqs, fs.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if res.StillBilling() != (wantResult == Stopped || wantResult == NotDeleted) {
		t.Errorf("%v.StillBilling() = %v", res, res.StillBilling())
	}
	if err == nil {
		return
	}
	fs.checkNoLeak("error", err.Error())
	var de *DeleteError
	if !errors.As(err, &de) || de.PodID != "p1" || de.Result != res {
		t.Fatalf("err %v (%T), want a *DeleteError for p1 with result %v", err, err, res)
	}
	if errors.Is(err, ErrStillBilling) != (res == Stopped) {
		t.Errorf("errors.Is(err, ErrStillBilling) = %v with result %v", errors.Is(err, ErrStillBilling), res)
	}
	if de.Delete == nil || de.Terminate == nil || (de.Stop == nil) != (res == Stopped) {
		t.Errorf("steps in the error: %+v", de)
	}
	if kind.name == "401" && !errors.Is(err, ErrUnauthorized) {
		t.Errorf("a chain of 401s does not match ErrUnauthorized: %v", err)
	}
	if res == Stopped && !strings.Contains(err.Error(), "still bills") {
		t.Errorf("a stop reads as: %v", err)
	}
}

// A step answered 2xx or 404 while GET still shows the pod RUNNING (a 404
// is also the API's answer to a key that may not see the pod) does not
// count: the chain goes on, and the step's error says why.
func TestDeletePodConfirmsWithGET(t *testing.T) {
	for _, status := range []int{http.StatusNoContent, http.StatusNotFound} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			c, fs := setup(t)
			fs.handle("DELETE /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
				if status == http.StatusNotFound {
					writeProblem(w, status, "pod not found")
					return
				}
				w.WriteHeader(status)
			})
			fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, http.StatusOK, wirePod(Pod{ID: "p1", Name: "n", Status: StatusRunning}))
			})
			fs.handle("POST /pods/{id}/action", func(w http.ResponseWriter, r *http.Request) {
				writeProblem(w, http.StatusForbidden, "access denied")
			})
			res, err := c.DeletePod(context.Background(), "p1")
			var de *DeleteError
			if res != NotDeleted || !errors.As(err, &de) || !errors.Is(de.Delete, ErrUnconfirmed) || !strings.Contains(de.Delete.Error(), "RUNNING") {
				t.Fatalf("DeletePod = %v, %v; want NotDeleted with an unconfirmed DELETE", res, err)
			}
			looks := 1
			if status == http.StatusNoContent {
				looks = confirmLooks
			}
			want := []string{"DELETE /pods/p1"}
			for range looks {
				want = append(want, "GET /pods/p1")
			}
			want = append(want, "POST /pods/p1/action", "POST /pods/p1/action")
			if diff := cmp.Diff(want, fs.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeletePodCancelStopsChain(t *testing.T) {
	c, fs := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fs.handle("DELETE /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		cancel() // the caller gives up while DELETE is failing
		writeProblem(w, http.StatusServiceUnavailable, "unavailable")
	})
	fs.handle("POST /pods/{id}/action", func(w http.ResponseWriter, r *http.Request) {
		t.Error("the fallback ran after the context was cancelled")
	})
	res, err := c.DeletePod(ctx, "p1")
	if !errors.Is(err, context.Canceled) || res != NotDeleted {
		t.Errorf("DeletePod = %v, %v; want NotDeleted, context.Canceled", res, err)
	}
}

func TestDeletePods(t *testing.T) {
	c, fs := setup(t, WithRetry(1, 1))
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	seen := map[string]int{}
	enter := func(id string) func() {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		mu.Lock()
		seen[id]++
		mu.Unlock()
		return func() { inFlight.Add(-1) }
	}
	fs.handle("DELETE /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		defer enter(id)()
		switch {
		case strings.HasPrefix(id, "gone"):
			writeProblem(w, 404, "pod not found")
		case strings.HasPrefix(id, "ok"):
			w.WriteHeader(http.StatusNoContent)
		default:
			writeProblem(w, 500, "internal error")
		}
	})
	fs.handle("POST /pods/{id}/action", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Action Action }
		_ = jsonDecode(r, &body)
		id := r.PathValue("id")
		switch {
		case strings.HasPrefix(id, "term") && body.Action == ActionTerminate:
			w.WriteHeader(http.StatusNoContent)
		case strings.HasPrefix(id, "stop") && body.Action == ActionStop:
			writeJSON(w, 200, wirePod(Pod{ID: id, Name: id, Status: StatusExited}))
		default:
			writeProblem(w, 500, "internal error")
		}
	})
	// What the GET that confirms each step shows.
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		status := map[string]PodStatus{"term": StatusTerminated, "stop": StatusExited, "bad": StatusRunning}[id[:len(id)-1]]
		if status == "" {
			writeProblem(w, 404, "pod not found")
			return
		}
		writeJSON(w, 200, wirePod(Pod{ID: id, Name: id, Status: status}))
	})
	ids := []string{"ok1", "gone1", "term1", "stop1", "bad1", "ok2", "ok3", "ok4", "ok5", "ok6", "ok1"}
	res, err := c.DeletePods(context.Background(), ids...)
	want := map[string]DeleteResult{
		"ok1": Deleted, "gone1": Deleted, "term1": Terminated, "stop1": Stopped, "bad1": NotDeleted,
		"ok2": Deleted, "ok3": Deleted, "ok4": Deleted, "ok5": Deleted, "ok6": Deleted,
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if !errors.Is(err, ErrStillBilling) || !strings.Contains(err.Error(), "pod stop1") || !strings.Contains(err.Error(), "pod bad1") {
		t.Errorf("err %v", err)
	}
	if strings.Contains(err.Error(), "ok1") || strings.Contains(err.Error(), "term1") {
		t.Errorf("the error names pods that were deleted: %v", err)
	}
	if seen["ok1"] != 1 {
		t.Errorf("a duplicated ID was deleted %d times", seen["ok1"])
	}
	if p := peak.Load(); p > deleteConcurrency {
		t.Errorf("%d deletes in flight at once, limit %d", p, deleteConcurrency)
	}
	if res, err := c.DeletePods(context.Background()); len(res) != 0 || err != nil {
		t.Errorf("no IDs: %v, %v", res, err)
	}
}

func TestDeleteResultString(t *testing.T) {
	for r, want := range map[DeleteResult]string{
		Deleted: "deleted", Terminated: "terminated", Stopped: "stopped (volume still billing)",
		NotDeleted: "not deleted", DeleteResult(9): "DeleteResult(9)",
	} {
		if r.String() != want {
			t.Errorf("%d: %q, want %q", int(r), r.String(), want)
		}
	}
}
