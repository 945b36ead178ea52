package runpod

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// failThen answers the first n requests with fail, the rest with a pod.
func failThen(n int32, fail func(w http.ResponseWriter)) http.HandlerFunc {
	var seen atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) <= n {
			fail(w)
			return
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, wirePod(Pod{ID: r.PathValue("id"), Name: "n", Status: StatusRunning}))
	}
}

func retryAfter(status int, v string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if v != "" {
			w.Header().Set("Retry-After", v)
		}
		writeProblem(w, status, "slow down")
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	c, fs := setup(t, WithRetry(4, 30*time.Second))
	fs.handle("GET /pods/{id}", failThen(2, retryAfter(503, "7")))
	if _, err := c.GetPod(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{7 * time.Second, 7 * time.Second}, fs.recordedWaits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if n := fs.count("GET /pods/p1"); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	c, fs := setup(t, WithRetry(4, 30*time.Second))
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	fs.handle("GET /pods/{id}", failThen(1, retryAfter(429, now.Add(9*time.Second).Format(http.TimeFormat))))
	if _, err := c.GetPod(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{9 * time.Second}, fs.recordedWaits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"0":                               0,
		"12":                              12 * time.Second,
		" 3 ":                             3 * time.Second,
		"Tue, 01 Dec 2026 10:01:00 GMT":   time.Minute,
		"Tuesday, 01-Dec-26 10:00:30 GMT": 30 * time.Second, // RFC 850, still valid HTTP-date
		"Tue, 01 Dec 2026 09:00:00 GMT":   0,                // in the past
		"99999999999999999999":            -1,               // too long to be a number or a date
	} {
		got, ok := parseRetryAfter(in, now)
		if want < 0 {
			if ok {
				t.Errorf("%q: accepted as %v", in, got)
			}
			continue
		}
		if !ok || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-5", "soon", "1.5"} {
		if d, ok := parseRetryAfter(in, now); ok {
			t.Errorf("%q: accepted as %v", in, d)
		}
	}
}

// A 503's Retry-After past the cap is waited at the cap.
func TestRetryAfterIsCapped(t *testing.T) {
	c, fs := setup(t, WithRetry(3, 20*time.Second))
	fs.handle("GET /pods/{id}", failThen(1, retryAfter(503, "3600")))
	if _, err := c.GetPod(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{20 * time.Second}, fs.recordedWaits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

// TestRetryAfterPastCapFailsAtOnce: a 429 asking to wait an hour, past the
// retry cap, ends every call at once, after its one request, with
// ErrRateLimited and the hour to wait.
func TestRetryAfterPastCapFailsAtOnce(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(c *Client) error{
		"GetPod":    func(c *Client) error { _, err := c.GetPod(ctx, "p1"); return err },
		"ListPods":  func(c *Client) error { _, err := c.ListPods(ctx, ListPodsOptions{}); return err },
		"CreatePod": func(c *Client) error { _, err := c.CreatePod(ctx, simpleCreate("n")); return err },
		"PodAction": func(c *Client) error { _, err := c.PodAction(ctx, "p1", ActionStop); return err },
		"DeletePod": func(c *Client) error { _, err := c.DeletePod(ctx, "p1"); return err },
		"DeletePods": func(c *Client) error {
			_, err := c.DeletePods(ctx, "p1")
			return err
		},
		"CreateSecret":      func(c *Client) error { _, err := c.CreateSecret(ctx, "k", hostKey); return err },
		"UpdateSecretValue": func(c *Client) error { _, err := c.UpdateSecretValue(ctx, "s1", hostKey); return err },
		"DeleteSecret":      func(c *Client) error { return c.DeleteSecret(ctx, "s1") },
		"ListSecrets":       func(c *Client) error { _, err := c.ListSecrets(ctx); return err },
		"FindSecret":        func(c *Client) error { _, err := c.FindSecret(ctx, "k"); return err },
		"GetGPUType":        func(c *Client) error { _, err := c.GetGPUType(ctx, "g1"); return err },
		"ListGPUTypes":      func(c *Client) error { _, err := c.ListGPUTypes(ctx); return err },
		"ListDataCenters":   func(c *Client) error { _, err := c.ListDataCenters(ctx, false); return err },
		"GetNetworkVolume":  func(c *Client) error { _, err := c.GetNetworkVolume(ctx, "v1"); return err },
		"GrowNetworkVolume": func(c *Client) error { _, err := c.GrowNetworkVolume(ctx, "v1", 100); return err },
		"ListNetworkVolumes": func(c *Client) error {
			_, err := c.ListNetworkVolumes(ctx)
			return err
		},
		"CreateNetworkVolume": func(c *Client) error {
			_, err := c.CreateNetworkVolume(ctx, "v", 10, "EU-RO-1")
			return err
		},
		"DeleteNetworkVolume": func(c *Client) error { return c.DeleteNetworkVolume(ctx, "v1") },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			c, fs := setup(t) // cap 10s, 4 attempts
			fs.secrets = []string{hostKey}
			fs.mux.HandleFunc(apiBase+"/", func(w http.ResponseWriter, r *http.Request) {
				retryAfter(http.StatusTooManyRequests, "3600")(w)
			})
			err := call(c)
			var rl *RateLimitError
			if !errors.Is(err, ErrRateLimited) || !errors.As(err, &rl) || rl.Wait != time.Hour || rl.Window != "" {
				t.Fatalf("err %v, want a *RateLimitError asking for an hour", err)
			}
			if !strings.Contains(err.Error(), "1h0m0s") {
				t.Errorf("%q does not say how long to wait", err)
			}
			if got := fs.requests(); len(got) != 1 {
				t.Errorf("requests %q, want one", got)
			}
			if w := fs.recordedWaits(); len(w) != 0 {
				t.Errorf("waited %v", w)
			}
		})
	}
}

func TestBackoffScheduleWithJitter(t *testing.T) {
	c, fs := setup(t, WithRetry(6, 3*time.Second))
	fs.handle("GET /pods/{id}", failThen(100, retryAfter(502, "")))
	_, err := c.GetPod(context.Background(), "p1")
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 502 || ae.Attempts != 6 {
		t.Fatalf("err %v", err)
	}
	steps := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
	waits := fs.recordedWaits()
	if len(waits) != len(steps) {
		t.Fatalf("waits %v", waits)
	}
	for i, w := range waits {
		if w < steps[i]/2 || w > steps[i] {
			t.Errorf("wait %d = %v, want in [%v, %v]", i, w, steps[i]/2, steps[i])
		}
	}
	// Retry-After of 0 does not make the client hammer: the backoff holds.
	for range 50 {
		w := c.waitFor(1, &APIError{StatusCode: 429})
		if w < baseWait/2 || w > baseWait {
			t.Fatalf("waitFor(1) = %v", w)
		}
	}
}

func TestRateLimitStorm(t *testing.T) {
	c, fs := setup(t, WithRetry(4, time.Minute))
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "rl-1")
		retryAfter(429, "1")(w)
	})
	_, err := c.GetPod(context.Background(), "p1")
	var ae *APIError
	if !errors.As(err, &ae) || !errors.Is(err, ErrRateLimited) {
		t.Fatalf("err %v, want an *APIError matching ErrRateLimited", err)
	}
	if ae.Attempts != 4 || ae.RetryAfter != time.Second || ae.RequestID != "rl-1" {
		t.Errorf("APIError %+v", ae)
	}
	if n := fs.count("GET /pods/p1"); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
	// Never sooner than Retry-After; later only when the backoff has grown
	// past it (the third step is 2 s with jitter).
	waits := fs.recordedWaits()
	if len(waits) != 3 {
		t.Fatalf("waits %v", waits)
	}
	for i, w := range waits {
		if w < time.Second || w > max(time.Second, (500*time.Millisecond)<<i) {
			t.Errorf("wait %d = %v", i, w)
		}
	}
}

// TestRateLimitStormConcurrent: many callers share a storm of 429s; each
// gets through once it passes.
func TestRateLimitStormConcurrent(t *testing.T) {
	// More attempts than 429s in all: however unevenly the storm falls on
	// the callers, none runs out.
	c, fs := setup(t, WithRetry(50, time.Second))
	const callers, limited = 16, 40
	fs.handle("GET /pods/{id}", failThen(limited, retryAfter(429, "1")))
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			p, err := c.GetPod(context.Background(), fmt.Sprint("p", i))
			if err == nil && p.ID != fmt.Sprint("p", i) {
				err = fmt.Errorf("got pod %s", p.ID)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := len(fs.requests()); got != callers+limited {
		t.Errorf("%d requests, want %d", got, callers+limited)
	}
	if got := len(fs.recordedWaits()); got != limited {
		t.Errorf("%d waits, want one per 429 (%d)", got, limited)
	}
}

func TestRetryTransportErrors(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /pods/{id}", failThen(2, func(w http.ResponseWriter) { dropConnection(t, w) }))
	if _, err := c.GetPod(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	if n := fs.count("GET /pods/p1"); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	// Exhausted: a transport error, not an *APIError, that says so.
	c2, fs2 := setup(t, WithRetry(2, time.Second))
	fs2.handle("GET /pods/{id}", failThen(100, func(w http.ResponseWriter) { dropConnection(t, w) }))
	_, err := c2.GetPod(context.Background(), "p1")
	var ae *APIError
	if err == nil || errors.As(err, &ae) {
		t.Fatalf("err %v", err)
	}
	fs2.checkNoLeak("error", err.Error())
	if want := "runpod: GET /pods/p1: "; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("error %q", err)
	}
}

func TestHTTPClientTimeoutIsRetried(t *testing.T) {
	c, fs := setup(t, WithHTTPClient(&http.Client{Timeout: 300 * time.Millisecond}))
	var seen atomic.Int32
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) == 1 {
			<-r.Context().Done() // hang until the client gives up on this attempt
			return
		}
		writeJSON(w, http.StatusOK, wirePod(Pod{ID: "p1", Name: "n"}))
	})
	if _, err := c.GetPod(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	if seen.Load() != 2 {
		t.Errorf("%d requests, want 2", seen.Load())
	}
}

func TestNoRetryOnPermanentErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 422, 500, 501} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			c, fs := setup(t)
			fs.handle("GET /pods/{id}", failThen(100, retryAfter(status, "1")))
			_, err := c.GetPod(context.Background(), "p1")
			var ae *APIError
			if !errors.As(err, &ae) || ae.StatusCode != status || ae.Attempts != 1 {
				t.Fatalf("err %v", err)
			}
			if n := len(fs.requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

func TestRetriedMethods(t *testing.T) {
	ctx := context.Background()
	c, fs := setup(t)
	fs.handle("DELETE /pods/{id}", failThen(2, retryAfter(504, "")))
	fs.handle("POST /pods/{id}/action", failThen(2, retryAfter(503, "")))
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) { writeProblem(w, 404, "pod not found") })
	if res, err := c.DeletePod(ctx, "p1"); res != Deleted || err != nil {
		t.Errorf("DeletePod: %v %v", res, err)
	}
	if _, err := c.PodAction(ctx, "p1", ActionStop); err != nil {
		t.Errorf("PodAction: %v", err)
	}
	want := []string{"DELETE /pods/p1", "DELETE /pods/p1", "DELETE /pods/p1", "GET /pods/p1",
		"POST /pods/p1/action", "POST /pods/p1/action", "POST /pods/p1/action"}
	if diff := cmp.Diff(want, fs.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	c, fs := setup(t, WithRetry(5, time.Hour))
	fs.handle("GET /pods/{id}", failThen(100, retryAfter(429, "3600")))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := make(chan time.Duration, 1)
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waiting <- d
		return sleepCtx(ctx, d) // the real wait: an hour
	}
	go func() {
		<-waiting
		cancel()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := c.GetPod(ctx, "p1")
		done <- err
	}()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("err %v, want exactly context.Canceled", err)
		}
	case <-time.After(30 * time.Second): // generous: the wait it cuts is an hour
		t.Fatal("cancelling the context did not end the backoff")
	}
	if n := len(fs.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestCancelledContext(t *testing.T) {
	c, fs := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.GetPod(ctx, "p1"); err != context.Canceled {
		t.Errorf("GetPod: %v", err)
	}
	if _, err := c.CreatePod(ctx, CreatePodRequest{Name: "n", Image: "i", GPUTypeID: "g"}); err != context.Canceled {
		t.Errorf("CreatePod: %v", err)
	}
	if res, err := c.DeletePod(ctx, "p1"); err != context.Canceled || res != NotDeleted {
		t.Errorf("DeletePod: %v %v", res, err)
	}
	if _, err := c.CreateSecret(ctx, "n", "v"); err != context.Canceled {
		t.Errorf("CreateSecret: %v", err)
	}
	if len(fs.requests()) != 0 {
		t.Errorf("requests %v", fs.requests())
	}
}

func TestCancelInFlight(t *testing.T) {
	c, fs := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	})
	if _, err := c.GetPod(ctx, "p1"); err != context.Canceled {
		t.Errorf("err %v, want context.Canceled", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	fs.handle("GET /pods", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	if _, err := c.ListPods(ctx2, ListPodsOptions{}); err != context.DeadlineExceeded {
		t.Errorf("err %v, want context.DeadlineExceeded", err)
	}
}
