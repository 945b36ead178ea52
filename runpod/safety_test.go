package runpod

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
	fs.handleGraphQL(redirect(http.StatusTemporaryRedirect))
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
