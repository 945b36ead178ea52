package guard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// oddAccount is an httptest Runpod, in the shapes of the API's text,
// whose pod list holds, beside its pods, elements no Pod can be read
// from: GET /v2/pods (one page), GET and DELETE /v2/pods/{id}, and the
// secret calls createFailed makes.
type oddAccount struct {
	mu      sync.Mutex
	pods    map[string]string // id: raw pod object
	odd     []string          // raw elements listed after the pods
	deleted []string
}

func (a *oddAccount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	id, onePod := strings.CutPrefix(r.URL.Path, "/v2/pods/")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v2/pods":
		var all []string
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range a.pods {
				if !yield(k) {
					return
				}
			}
		}) {
			all = append(all, a.pods[k])
		}
		all = append(all, a.odd...)
		_, _ = w.Write([]byte(`{"pods": [` + strings.Join(all, ",") + `], "pagination": {"nextCursor": null, "hasNextPage": false}}`))
	case onePod && r.Method == http.MethodGet && a.pods[id] != "":
		_, _ = w.Write([]byte(a.pods[id]))
	case onePod && r.Method == http.MethodDelete && a.pods[id] != "":
		delete(a.pods, id)
		a.deleted = append(a.deleted, id)
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(r.URL.Path, "/v2/account/secrets") && r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"title": "Not Found", "status": 404, "detail": "resource not found"}`))
	}
}

func (a *oddAccount) deletes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.deleted)
}

const oddRunID = "20260301-120000-abcd"

// readablePod is a pod of the run in the shapes of the API's text.
func readablePod(id string, status runpod.PodStatus) string {
	return `{"id": "` + id + `", "name": "` + podenv.PodName(oddRunID) + `", "status": "` + string(status) +
		`", "disk": 50, "env": {}, "cost": 0.5, "createdAt": "2026-03-01T12:00:00Z", "startedAt": null}`
}

// oddFieldsGuard are fields in shapes no Pod reads, each one odd pod's.
var oddFieldsGuard = []string{
	`"createdAt": ""`,
	`"createdAt": "2020-01-01 00:00:00"`,
	`"startedAt": ""`,
	`"runtime": {"uptime": 12.5}`,
	`"env": {"X": 1}`,
	`"cost": "0.5"`,
}

// oddRun is a Run of oddRunID on a client of account a, on a fake clock.
func oddRun(t *testing.T, a *oddAccount, rec Record) *Run {
	t.Helper()
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	c, err := runpod.New("k", runpod.WithBaseURL(srv.URL+"/v2"), runpod.WithRetry(1, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.clock = &fakeClock{now: t0, trace: &trace{}}
	rec.ID, rec.PodName = oddRunID, podenv.PodName(oddRunID)
	return &Run{api: c, cfg: cfg, rec: rec}
}

// warnings collects r's warnings.
func warnings(r *Run) *[]error {
	var w []error
	r.cfg.events = func(e Event) {
		if e.Kind == EventWarning {
			w = append(w, e.Err)
		}
	}
	return &w
}

// TestListingPathsWithOddPod: someone else's pod that no Pod can be read
// from, in the account, blinds none of the paths that list the run's
// pods.
func TestListingPathsWithOddPod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, field := range oddFieldsGuard {
		odd := `{"id": "odd1", "name": "someone-elses-notebook", "status": "RUNNING", ` + field + `}`
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			t.Run("confirmGone", func(t *testing.T) {
				a := &oddAccount{pods: map[string]string{}, odd: []string{odd}}
				r := oddRun(t, a, Record{PodID: "pod-1"})
				if err := r.confirmGone(ctx); err != nil {
					t.Errorf("confirmGone of a pod GET and the list no longer show: %v", err)
				}
			})
			t.Run("goneForGood", func(t *testing.T) {
				a := &oddAccount{pods: map[string]string{"pod-2": readablePod("pod-2", runpod.StatusRunning)}, odd: []string{odd}}
				r := oddRun(t, a, Record{PodID: "pod-1"})
				if err := r.goneForGood(ctx); err != nil {
					t.Errorf("goneForGood: %v", err)
				}
				if d := a.deletes(); !slices.Equal(d, []string{"pod-2"}) {
					t.Errorf("deleted %v, want the run's other pod pod-2", d)
				}
			})
			t.Run("pendingPod", func(t *testing.T) {
				a := &oddAccount{pods: map[string]string{"pod-new": readablePod("pod-new", runpod.StatusRunning)}, odd: []string{odd}}
				r := oddRun(t, a, Record{Recovery: RecoveryState{Replacing: "pod-old"}})
				if adopt, err := r.pendingPod(ctx); err != nil || !adopt || r.rec.PodID != "pod-new" {
					t.Errorf("pendingPod: %v, %v, pod %q; want pod-new adopted", adopt, err, r.rec.PodID)
				}
			})
			t.Run("createFailed", func(t *testing.T) {
				a := &oddAccount{pods: map[string]string{"pod-1": readablePod("pod-1", runpod.StatusProvisioning)}, odd: []string{odd}}
				r := oddRun(t, a, Record{SecretID: "secret-1"})
				warned := warnings(r)
				_ = r.createFailed(ctx, errors.New("create failed"))
				if d := a.deletes(); !slices.Equal(d, []string{"pod-1"}) || len(*warned) > 0 {
					t.Errorf("deleted %v, warnings %v; want the maybe-made pod-1 deleted", d, *warned)
				}
			})
			t.Run("findPod", func(t *testing.T) {
				a := &oddAccount{pods: map[string]string{"pod-1": readablePod("pod-1", runpod.StatusRunning)}, odd: []string{odd}}
				r := oddRun(t, a, Record{})
				if err := r.findPod(ctx); err != nil || r.rec.PodID != "pod-1" {
					t.Errorf("findPod: %v, pod %q; want pod-1", err, r.rec.PodID)
				}
			})
		})
	}
}

// TestListingPathsWithOddRunPod: a pod of the run's name (or of a name
// that cannot be read) that cannot be read is neither taken for gone nor
// for a pod read: a delete is not confirmed while the list shows it, a
// recovery makes no new pod beside it, and an attach does not start
// another.
func TestListingPathsWithOddRunPod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := podenv.PodName(oddRunID)
	t.Run("confirmGone/same id", func(t *testing.T) {
		a := &oddAccount{pods: map[string]string{}, odd: []string{`{"id": "pod-1", "name": "` + name + `", "status": "RUNNING", "createdAt": ""}`}}
		r := oddRun(t, a, Record{PodID: "pod-1"})
		err := r.confirmGone(ctx)
		var ue *DeleteUnconfirmedError
		if !errors.As(err, &ue) || !strings.Contains(ue.Seen, "RUNNING") {
			t.Errorf("confirmGone: %v; want unconfirmed, the list showing it RUNNING", err)
		}
	})
	t.Run("confirmGone/unknown id", func(t *testing.T) {
		a := &oddAccount{pods: map[string]string{}, odd: []string{`{"id": 7, "name": "` + name + `", "createdAt": ""}`}}
		r := oddRun(t, a, Record{PodID: "pod-1"})
		var ue *DeleteUnconfirmedError
		if err := r.confirmGone(ctx); !errors.As(err, &ue) || !strings.Contains(ue.Seen, "cannot read") {
			t.Errorf("confirmGone: %v; want unconfirmed, a pod it cannot read listed", err)
		}
	})
	t.Run("confirmGone/terminated", func(t *testing.T) {
		a := &oddAccount{pods: map[string]string{}, odd: []string{`{"id": "pod-1", "name": "` + name + `", "status": "TERMINATED", "cost": "0"}`}}
		r := oddRun(t, a, Record{PodID: "pod-1"})
		if err := r.confirmGone(ctx); err != nil {
			t.Errorf("confirmGone: %v; want gone, the list showing it TERMINATED", err)
		}
	})
	t.Run("goneForGood", func(t *testing.T) {
		// An unreadable pod of the run is deleted by its id like any;
		// one whose id cannot be read fails the recovery.
		a := &oddAccount{pods: map[string]string{"pod-2": `{"id": "pod-2", "name": "` + name + `", "status": "RUNNING", "env": {"X": 1}}`}}
		r := oddRun(t, a, Record{PodID: "pod-1"})
		if err := r.goneForGood(ctx); err != nil || !slices.Equal(a.deletes(), []string{"pod-2"}) {
			t.Errorf("goneForGood: %v, deleted %v; want pod-2 deleted", err, a.deletes())
		}
		b := &oddAccount{pods: map[string]string{}, odd: []string{`{"id": null, "name": "` + name + `"}`}}
		if err := oddRun(t, b, Record{PodID: "pod-1"}).goneForGood(ctx); err == nil {
			t.Error("goneForGood took a pod of the run it cannot read for none")
		}
	})
	t.Run("pendingPod", func(t *testing.T) {
		a := &oddAccount{pods: map[string]string{}, odd: []string{`{"id": 9, "name": 9}`}}
		r := oddRun(t, a, Record{Recovery: RecoveryState{Replacing: "pod-old"}})
		if adopt, err := r.pendingPod(ctx); err == nil {
			t.Errorf("pendingPod: %v, no error: a new pod would be made beside one it cannot read", adopt)
		}
	})
	t.Run("createFailed", func(t *testing.T) {
		a := &oddAccount{pods: map[string]string{}, odd: []string{`{"name": "` + name + `", "disk": "big"}`}}
		r := oddRun(t, a, Record{SecretID: "secret-1"})
		warned := warnings(r)
		_ = r.createFailed(ctx, errors.New("create failed"))
		if len(*warned) == 0 || !strings.Contains((*warned)[0].Error(), "could not check") {
			t.Errorf("warnings %v; want one saying the pod could not be checked", *warned)
		}
	})
	t.Run("findPod", func(t *testing.T) {
		a := &oddAccount{pods: map[string]string{}, odd: []string{`{"id": [], "name": "` + name + `"}`}}
		r := oddRun(t, a, Record{})
		if err := r.findPod(ctx); err == nil || errors.Is(err, ErrNoPod) {
			t.Errorf("findPod: %v; want an error other than ErrNoPod", err)
		}
	})
}
