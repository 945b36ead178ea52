package sweep_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/sweep"
)

// oddFields are pods' fields in shapes the API's text does not give
// them, each one odd pod's. Whole numbers written as 50.0 are read; the
// rest make the pod unreadable.
var oddFields = []struct {
	name, field string
	readable    bool // read as a whole pod, not merely reported
}{
	{"disk 50.0", `"disk": 50.0`, true},
	{"gpu count 1.0", `"gpu": {"id": "NVIDIA A40", "count": 1.0}`, true},
	{"createdAt empty", `"createdAt": ""`, false},
	{"createdAt not RFC 3339", `"createdAt": "2020-01-01 00:00:00"`, false},
	{"startedAt empty", `"startedAt": ""`, false},
	{"uptime 12.5", `"runtime": {"uptime": 12.5}`, false},
	{"env number", `"env": {"X": 1}`, false},
	{"cost string", `"cost": "0.5"`, false},
}

// oddAccount is an httptest Runpod answering GET /v2/pods (one page),
// GET /v2/account/secrets and DELETE /v2/pods/{id}, in the shapes of the
// API's text, and recording the deletes.
type oddAccount struct {
	mu      sync.Mutex
	pods    []string // raw pod objects
	deleted []string
}

func (a *oddAccount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v2/pods":
		_, _ = w.Write([]byte(`{"pods": [` + strings.Join(a.pods, ",") + `], "pagination": {"nextCursor": null, "hasNextPage": false}}`))
	case r.Method == http.MethodGet && r.URL.Path == "/v2/account/secrets":
		_, _ = w.Write([]byte(`{"secrets": []}`))
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v2/pods/"):
		a.deleted = append(a.deleted, strings.TrimPrefix(r.URL.Path, "/v2/pods/"))
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"title": "Not Found", "status": 404, "detail": "resource not found"}`))
	}
}

// abandonedPod is a guarded pod of runID past its deadline, extension and
// margin: a sweep must delete it.
func abandonedPod(t *testing.T, id, runID string) string {
	t.Helper()
	s := podenv.Settings{RunID: runID, Rules: podenv.Rules{Deadline: time.Date(2020, 1, 1, 4, 0, 0, 0, time.UTC)},
		APIURL: "http://x/v2", Workdir: "/workspace/overbrainer"}
	s.Claim = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	s.AuthorizedKey = s.Claim
	env, err := s.Env()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := json.Marshal(env)
	return `{"id": "` + id + `", "name": "` + podenv.PodName(runID) + `", "status": "RUNNING", "disk": 50, "env": ` + string(e) +
		`, "createdAt": "2020-01-01T00:00:00Z", "startedAt": "2020-01-01T00:01:00Z", "cost": 0.5}`
}

// TestSweepOddPod: one pod that the API describes oddly, someone else's
// or named like a guarded run's, blinds no sweep: the abandoned guarded
// pod beside it is deleted, and the odd one is left, reported as one
// that cannot be judged when it cannot be read.
func TestSweepOddPod(t *testing.T) {
	t.Parallel()
	for _, odd := range oddFields {
		for _, name := range []string{"someone-elses-pod", podenv.PodName("20200101-000000-0dd0")} {
			t.Run(odd.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				oddPod := `{"id": "odd1", "name": "` + name + `", "status": "RUNNING", ` + odd.field + `}`
				a := &oddAccount{pods: []string{oddPod, abandonedPod(t, "good1", "20200101-000000-abcd")}}
				srv := httptest.NewServer(a)
				t.Cleanup(srv.Close)
				c, err := runpod.New("k", runpod.WithBaseURL(srv.URL+"/v2"), runpod.WithRetry(1, time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
				rep, err := sweep.Once(context.Background(), c, sweep.Policy{Now: func() time.Time { return now }})
				if err != nil {
					t.Fatalf("Once: %v", err)
				}
				a.mu.Lock()
				deleted := strings.Join(a.deleted, " ")
				a.mu.Unlock()
				if deleted != "good1" {
					t.Errorf("deleted %q, want the abandoned pod good1 only", deleted)
				}
				var seen *sweep.Decision
				for i, d := range rep.Decisions {
					if d.PodID == "odd1" {
						seen = &rep.Decisions[i]
					}
				}
				switch {
				case !strings.HasPrefix(name, podenv.PodNamePrefix):
					// Not named like a guarded run's pod: not the sweep's.
					if seen != nil {
						t.Errorf("someone else's pod judged: %+v", *seen)
					}
				case seen == nil:
					t.Error("the odd pod is not in the report")
				case odd.readable && seen.Rule == sweep.RuleCannotJudge:
					t.Errorf("a whole number written %s was not read: %s", odd.field, seen.Why)
				case !odd.readable && (seen.Rule != sweep.RuleCannotJudge || !strings.Contains(seen.Why, "could not be read")):
					t.Errorf("odd pod judged %s (%s), want cannot_judge: could not be read", seen.Rule, seen.Why)
				}
				if seen != nil && seen.Delete {
					t.Errorf("odd pod to be deleted: %+v", *seen)
				}
			})
		}
	}
}

// A listed pod whose name cannot be read may be any run's: no secret
// whose pod is not seen is deleted beside it, each is cannot_judge.
func TestSweepUnnamedPodKeepsSecrets(t *testing.T) {
	t.Parallel()
	a := &oddAccount{pods: []string{`{"id": "odd1", "name": 7, "status": "RUNNING"}`}}
	mux := http.NewServeMux()
	mux.Handle("/", a)
	mux.HandleFunc("GET /v2/account/secrets", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"secrets": [{"id": "s1", "name": "` + podenv.HostKeySecretName("20200101-000000-abcd") + `"}]}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := runpod.New("k", runpod.WithBaseURL(srv.URL+"/v2"), runpod.WithRetry(1, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sweep.Once(context.Background(), c, sweep.Policy{Now: func() time.Time { return time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, d := range rep.Decisions {
		rules = append(rules, d.PodID+d.SecretID+"="+d.Rule.String())
		if d.Delete {
			t.Errorf("%s%s deleted: %s", d.PodID, d.SecretID, d.Why)
		}
	}
	if got := strings.Join(rules, " "); got != "odd1=cannot_judge s1=cannot_judge" {
		t.Errorf("decisions %s, want the pod and the secret cannot_judge", got)
	}
}
