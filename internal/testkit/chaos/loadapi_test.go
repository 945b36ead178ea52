package chaos_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// flakyProxy stands between a client and the fake Runpod and breaks some of
// the calls the way Runpod's edge does.
type flakyProxy struct {
	srv *httptest.Server
	// every429 answers every n-th call with 429 and Retry-After (0: never).
	every429 int
	// everyLostCreate forwards every n-th POST /v2/pods to the fake, which
	// makes the pod, then drops the connection: the answer is lost.
	everyLostCreate int

	calls, limited, lost atomic.Int64
	creates              atomic.Int64
}

func newFlakyProxy(t *testing.T, target string, every429, everyLostCreate int) *flakyProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{every429: every429, everyLostCreate: everyLostCreate}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := p.calls.Add(1)
		if p.every429 > 0 && n%int64(p.every429) == 0 {
			p.limited.Add(1)
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"title":"Too Many Requests","status":429,"detail":"slow down"}`)
			return
		}
		if r.Method == http.MethodPost && r.URL.Path == "/v2/pods" && p.everyLostCreate > 0 &&
			p.creates.Add(1)%int64(p.everyLostCreate) == 0 {
			p.lost.Add(1)
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			panic(http.ErrAbortHandler) // the pod exists; its answer is lost
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// waitLog sums the waits the client logs before each retry.
type waitLog struct {
	mu      sync.Mutex
	total   time.Duration
	retries int
}

func (l *waitLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *waitLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *waitLog) WithGroup(string) slog.Handler            { return l }
func (l *waitLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "runpod: retrying" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "wait" {
			l.mu.Lock()
			l.total += a.Value.Duration()
			l.retries++
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestChaosLoadCreatePods launches 50 pods at once through one client
// against the fake Runpod while a fifth of all calls answer 429 with
// Retry-After (and, in a second run, while some create answers are lost
// after the pod was made): every pod is created exactly once, and the
// client deletes them all through the same faults.
func TestChaosLoadCreatePods(t *testing.T) {
	for _, run := range []struct {
		name                string
		every429, everyLost int
	}{
		{"429_on_20pct_of_calls", 5, 0},
		{"429_and_lost_create_answers", 5, 7},
	} {
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			srv := checkedfake.NewTestServer(t)
			proxy := newFlakyProxy(t, srv.URL, run.every429, run.everyLost)
			waits := &waitLog{}
			c, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(proxy.srv.URL+"/v2"),
				runpod.WithLogger(slog.New(waits)), runpod.WithRetry(10, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			ids := make([]string, loadPods)
			began := time.Now()
			var g errgroup.Group
			for i := range ids {
				g.Go(func() error {
					p, err := c.CreatePod(ctx, runpod.CreatePodRequest{
						Name: fmt.Sprintf("overbrainer-load-%02d", i), Image: "runpod/base",
						GPUTypeID: "NVIDIA RTX A5000", Ports: []string{"22/tcp"},
						Command: []string{"sleep", "infinity"},
					})
					if err != nil {
						return fmt.Errorf("pod %d: %w", i, err)
					}
					ids[i] = p.ID
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			took := time.Since(began)
			createCalls, createLimited := proxy.calls.Load(), proxy.limited.Load()
			byName := map[string][]string{}
			for _, p := range srv.Pods() {
				byName[p.Name] = append(byName[p.Name], p.ID)
			}
			for i, id := range ids {
				name := fmt.Sprintf("overbrainer-load-%02d", i)
				if got := byName[name]; len(got) != 1 || got[0] != id {
					t.Errorf("%s: pods %v, want exactly the one CreatePod returned (%s)", name, got, id)
				}
			}
			if len(byName) != loadPods {
				t.Errorf("%d pod names, want %d", len(byName), loadPods)
			}
			dups := 0
			for _, got := range byName {
				dups += len(got) - 1
			}
			if run.every429 > 0 && createLimited == 0 {
				t.Error("no call was rate limited: the test tested nothing")
			}
			// Delete them all through the same faults.
			if _, err := c.DeletePods(ctx, ids...); err != nil {
				t.Fatal(err)
			}
			if b := srv.Billing(); len(b) != 0 {
				t.Errorf("%d pods still billing", len(b))
			}
			waits.mu.Lock()
			total, retries := waits.total, waits.retries
			waits.mu.Unlock()
			record(t, "load", "create 50 pods: "+run.name,
				"%d pods, %d duplicates, %d requests (%d answered 429, %d create answers lost), %s wall; with the deletes: %d requests (%d answered 429), %d retries waiting %s in all",
				len(byName), dups, createCalls, createLimited, proxy.lost.Load(), seconds(took),
				proxy.calls.Load(), proxy.limited.Load(), retries, seconds(total))
		})
	}
}
