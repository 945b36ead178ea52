package runpod

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRedirectsAreRefused: a redirect, even to the same host on another
// port, must not carry the key or a secret's value anywhere; the client
// answers it with an error naming the refusal.
func TestRedirectsAreRefused(t *testing.T) {
	c, fs := setup(t, WithRetry(3, 1))
	fs.secrets = []string{hostKey}
	var reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		t.Errorf("the redirect was followed: %s %s with Authorization %q", r.Method, r.URL, r.Header.Get("Authorization"))
	}))
	defer other.Close()
	const marker = "LOCATION_MARKER"
	redirect := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", other.URL+r.URL.Path+"?"+marker)
			w.WriteHeader(code)
			_, _ = w.Write([]byte(marker))
		}
	}
	fs.handle("GET /pods/{id}", redirect(http.StatusTemporaryRedirect))
	fs.handle("DELETE /pods/{id}", redirect(http.StatusPermanentRedirect))
	fs.handle("POST /pods/{id}/action", redirect(http.StatusFound))
	fs.handle("POST /pods", redirect(http.StatusMovedPermanently))
	fs.handle("POST /account/secrets", redirect(http.StatusTemporaryRedirect))
	fs.handle("DELETE /account/secrets/{id}", redirect(http.StatusTemporaryRedirect))
	ctx := context.Background()
	var errs []error
	_, err := c.GetPod(ctx, "p1")
	errs = append(errs, err)
	_, err = c.DeletePod(ctx, "p1")
	errs = append(errs, err)
	_, err = c.CreatePod(ctx, simpleCreate("n"))
	errs = append(errs, err)
	_, err = c.CreateSecret(ctx, "k", hostKey)
	errs = append(errs, err)
	errs = append(errs, c.DeleteSecret(ctx, "s1"))
	for i, err := range errs {
		switch {
		case err == nil:
			t.Errorf("%d: no error", i)
			continue
		case !errors.Is(err, ErrRedirect):
			t.Errorf("%d: %v does not match ErrRedirect", i, err)
		case !strings.Contains(err.Error(), "redirect refused"):
			t.Errorf("%d: %q does not say the redirect was refused", i, err)
		case strings.Contains(err.Error(), marker):
			t.Errorf("%d: %q echoes the Location or the body", i, err)
		}
		fs.checkNoLeak("error", err.Error())
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the other server got %d requests", n)
	}
	// Not retried: a redirect does not go away.
	if n := fs.count("GET /pods/p1"); n != 1 {
		t.Errorf("GET sent %d times, want 1", n)
	}
}

// TestBadIDsAreRefused: an ID that is not plain would name another path
// ("DELETE /pods/.." answers 404, read as deleted), so it is refused with
// an *IDError before any request.
func TestBadIDsAreRefused(t *testing.T) {
	c, fs := setup(t)
	ctx := context.Background()
	bad := []string{"", ".", "..", "a/b", "../p1", "p1?x=1", "p1#f", "p%2F1", "p 1", " p1", "p1\n", "p1\t", strings.Repeat("p", 200)}
	calls := map[string]func(id string) error{
		"GetPod": func(id string) error { _, err := c.GetPod(ctx, id); return err },
		"DeletePod": func(id string) error {
			res, err := c.DeletePod(ctx, id)
			if res != NotDeleted {
				t.Errorf("DeletePod(%q) = %v", id, res)
			}
			return err
		},
		"PodAction":         func(id string) error { _, err := c.PodAction(ctx, id, ActionStop); return err },
		"PodCostPerHour":    func(id string) error { _, err := c.PodCostPerHour(ctx, id); return err },
		"GetNetworkVolume":  func(id string) error { _, err := c.GetNetworkVolume(ctx, id); return err },
		"GrowNetworkVolume": func(id string) error { _, err := c.GrowNetworkVolume(ctx, id, 100); return err },
	}
	for name, call := range calls {
		for _, id := range bad {
			err := call(id)
			var ie *IDError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) || ie.ID != id {
				t.Errorf("%s(%q): %v, want an *IDError matching ErrInvalid", name, id, err)
			}
		}
	}
	for _, id := range []string{"", ".", "..", "a/b", "x?y", "x#y", "x%y", " x", "x\n"} {
		if _, err := c.GetGPUType(ctx, id); !errors.Is(err, ErrInvalid) {
			t.Errorf("GetGPUType(%q): %v, want ErrInvalid", id, err)
		}
	}
	// The transport refuses a bad path parameter of any call, too.
	r := &call{method: http.MethodGet, path: "/pods/{id}", id: ".."}
	if _, err := c.do(ctx, r, true); !errors.Is(err, ErrInvalid) {
		t.Errorf("do with id \"..\": %v, want ErrInvalid", err)
	}
	if got := fs.requests(); len(got) != 0 {
		t.Errorf("requests sent: %q", got)
	}
}

// TestBadURLErrorsHideCredentials: a URL refused by WithBaseURL may carry a key in its user info, query or fragment, or
// anywhere when it does not parse; the error must quote none of it.
func TestBadURLErrorsHideCredentials(t *testing.T) {
	const pw = "SECRET_IN_URL_42"
	urls := []string{
		"https://user:" + pw + "@api.runpod.io/v2",
		"https://" + pw + "@api.runpod.io/v2",
		"https://user:" + pw + "@/v2",
		"https://api.runpod.io/v2?api_key=" + pw,
		"https://api.runpod.io/v2#" + pw,
		"ftp://user:" + pw + "@api.runpod.io/v2",
		"ftp://api.runpod.io/v2?api_key=" + pw,
		"https:///v2?api_key=" + pw,
		"https://user:" + pw + "@[::1/v2",
		"https://api.runpod.io:" + pw + "/v2",
		"https://api.runpod.io/v2?api_key=%zz" + pw,
		"https://user:%zz" + pw + "@api.runpod.io/v2",
		"\x7fhttps://api.runpod.io/v2?api_key=" + pw,
		"api.runpod.io/v2?api_key=" + pw,
	}
	for _, u := range urls {
		_, err := New(testKey, WithBaseURL(u))
		switch {
		case err == nil:
			t.Errorf("WithBaseURL(%q) accepted", u)
		case !errors.Is(err, ErrInvalid):
			t.Errorf("WithBaseURL(%q): %v does not match ErrInvalid", u, err)
		case strings.Contains(err.Error(), pw):
			t.Errorf("WithBaseURL: error %q echoes the credential", err)
		}
	}
}

// TestDebugDumpShowsRedactedBodies: WithDebug dumps response bodies, and a
// dump holds neither the account key, nor a secret's value, nor a pod's env
// values, even when the server echoes them.
func TestDebugDumpShowsRedactedBodies(t *testing.T) {
	c, fs := setup(t)
	const envValue = "hf_ENV_VALUE_in_the_pod"
	fs.secrets = []string{hostKey, envValue}
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		p := wirePod(Pod{ID: "p1", Name: "dump-marker-pod", Env: map[string]string{"HF_TOKEN": envValue}})
		p["image"] = "img-" + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		writeJSON(w, http.StatusOK, p)
	})
	fs.handle("POST /account/secrets", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Value string }
		_ = jsonDecode(r, &req)
		writeJSON(w, http.StatusCreated, map[string]any{"id": "secret-marker-id", "name": "k",
			"description": "echo " + req.Value, "createdAt": "2026-09-01T12:00:00Z"})
	})
	ctx := context.Background()
	if _, err := c.GetPod(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSecret(ctx, "k", hostKey); err != nil {
		t.Fatal(err)
	}
	log := fs.logBuf.String()
	for _, want := range []string{"dump-marker-pod", "secret-marker-id", "HF_TOKEN", "[REDACTED]", "Authorization: Bearer [REDACTED]"} {
		if !strings.Contains(log, want) {
			t.Errorf("the dump lacks %q:\n%s", want, log)
		}
	}
	// setup's cleanup fails the test if the log holds the key or a secret.
}

func rateLimited(state string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("RateLimit-Policy", `"minute";q=60;w=60, "hour";q=3000;w=3600, "day";q=50000;w=86400`)
		w.Header().Set("RateLimit", state)
		w.Header().Set("Retry-After", "1")
		writeProblem(w, http.StatusTooManyRequests, "rate limit exceeded")
	}
}

// TestRateLimitWaitsForLongestExhaustedWindow: with two windows exhausted,
// the 429 lasts until the later one resets, whatever Retry-After says.
func TestRateLimitWaitsForLongestExhaustedWindow(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /pods/{id}", failThen(1, rateLimited(`"minute";r=0;t=7, "hour";r=0;t=9, "day";r=4000;t=50000`)))
	if _, err := c.GetPod(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{9 * time.Second}, fs.recordedWaits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

// TestRateLimitPastCapFailsAtOnce: a window that resets past the retry cap
// would eat every attempt; the call fails at once with ErrRateLimited.
func TestRateLimitPastCapFailsAtOnce(t *testing.T) {
	c, fs := setup(t) // cap 10s
	fs.handle("GET /pods/{id}", failThen(100, rateLimited(`"minute";r=0;t=5, "hour";r=0;t=1800, "day";r=4000;t=50000`)))
	fs.handle("POST /pods", failThen(100, rateLimited(`"minute";r=0;t=5, "hour";r=0;t=1800`)))
	fs.handle("POST /account/secrets", failThen(100, rateLimited(`"day";r=0;t=40000`)))
	ctx := context.Background()
	_, err1 := c.GetPod(ctx, "p1")
	_, err2 := c.CreatePod(ctx, simpleCreate("n"))
	_, err3 := c.CreateSecret(ctx, "k", hostKey)
	for i, err := range []error{err1, err2, err3} {
		var rl *RateLimitError
		var ae *APIError
		if !errors.Is(err, ErrRateLimited) || !errors.As(err, &rl) || !errors.As(err, &ae) || ae.StatusCode != 429 {
			t.Errorf("%d: %v, want a *RateLimitError", i, err)
			continue
		}
		if want := []time.Duration{1800 * time.Second, 1800 * time.Second, 40000 * time.Second}[i]; rl.Wait != want {
			t.Errorf("%d: wait %v, want %v", i, rl.Wait, want)
		}
	}
	if got := fs.requests(); len(got) != 3 {
		t.Errorf("requests %q, want one each", got)
	}
	if w := fs.recordedWaits(); len(w) != 0 {
		t.Errorf("waited %v", w)
	}
}

func TestExhaustedWindow(t *testing.T) {
	for v, want := range map[string]time.Duration{
		`"minute";r=0;t=12, "hour";r=10;t=100`: 12 * time.Second,
		`"a,b";r=0;t=3, "c";r=0;t=4`:           4 * time.Second,
		`minute;r=0;t=2`:                       2 * time.Second,
		`"minute";r=1;t=12`:                    -1,
		`"minute";r=0`:                         -1,
		`"minute";r=0;t=x, "hour";r=0;t=-3`:    -1,
		``:                                     -1,
		`garbage;;;=,,"`:                       -1,
	} {
		h := http.Header{}
		if v != "" {
			h.Set("RateLimit", v)
		}
		_, got, ok := exhaustedWindow(h)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("%s: %v, want %v", v, got, want)
		}
	}
}
