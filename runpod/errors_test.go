package runpod

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAPIErrorFromProblem(t *testing.T) {
	c, fs := setup(t)
	fs.handle("POST /pods", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-9")
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"title": "Unprocessable Entity", "status": 422, "detail": "Request validation failed.",
			"errors": []string{"$: additional properties 'bogus' not allowed", "$.gpu.count: minimum 1"},
		})
	})
	_, err := c.CreatePod(context.Background(), simpleCreate("n"))
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err %T %v", err, err)
	}
	want := &APIError{
		Method: "POST", Path: "/pods", StatusCode: 422, Title: "Unprocessable Entity",
		Detail: "Request validation failed.", RequestID: "req-9", Attempts: 1,
		Errors: []string{"$: additional properties 'bogus' not allowed", "$.gpu.count: minimum 1"},
	}
	if diff := cmp.Diff(want, ae); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	wantMsg := "runpod: POST /pods: 422 Unprocessable Entity: Request validation failed.; $: additional properties 'bogus' not allowed; $.gpu.count: minimum 1 (request id req-9)"
	if err.Error() != wantMsg {
		t.Errorf("Error()\n got %q\nwant %q", err.Error(), wantMsg)
	}
}

func TestAPIErrorSentinels(t *testing.T) {
	sentinels := []error{ErrNotFound, ErrUnauthorized, ErrForbidden, ErrRateLimited, ErrConflict}
	for status, want := range map[int]error{
		401: ErrUnauthorized, 403: ErrForbidden, 404: ErrNotFound, 409: ErrConflict, 429: ErrRateLimited,
		400: nil, 500: nil, 502: nil,
	} {
		c, fs := setup(t, WithRetry(1, time.Second))
		fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) { writeProblem(w, status, "x") })
		_, err := c.GetPod(context.Background(), "p")
		for _, s := range sentinels {
			if errors.Is(err, s) != (s == want) {
				t.Errorf("%d: errors.Is(err, %v) = %v", status, s, errors.Is(err, s))
			}
		}
		// Wrapped by a caller, it still matches.
		if want != nil && !errors.Is(errors.Join(errors.New("launch"), err), want) {
			t.Errorf("%d: wrapped error lost its sentinel", status)
		}
	}
}

// A proxy's HTML 502 is not a problem document: the raw text is the detail.
func TestAPIErrorFromHTML(t *testing.T) {
	c, fs := setup(t, WithRetry(1, time.Second))
	page := "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>cloudflare</center>\n</body>\n</html>\n"
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(page))
	})
	_, err := c.GetPod(context.Background(), "p")
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err %v", err)
	}
	if ae.StatusCode != 502 || ae.Title != "Bad Gateway" || ae.Detail != strings.TrimSpace(page) || !ae.Temporary() {
		t.Errorf("%+v", ae)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("Error() spans lines: %q", err.Error())
	}
}

// An endless error body is read through a 1 MiB limit.
func TestAPIErrorBodyLimit(t *testing.T) {
	c, fs := setup(t, WithRetry(1, time.Second))
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 64 { // 4 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	_, err := c.GetPod(context.Background(), "p")
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err %v", err)
	}
	if !strings.HasSuffix(ae.Detail, " [truncated]") || len(ae.Detail) != maxErrorBody+len(" [truncated]") {
		t.Errorf("detail of %d bytes, want the first %d and a mark", len(ae.Detail), maxErrorBody)
	}
	if len(err.Error()) > 1000 {
		t.Errorf("Error() is %d bytes long", len(err.Error()))
	}
}

func TestAPIErrorEmptyBody(t *testing.T) {
	c, fs := setup(t, WithRetry(1, time.Second))
	fs.handle("DELETE /pods/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) })
	fs.handle("POST /pods/{id}/action", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) })
	_, err := c.DeletePod(context.Background(), "p")
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("err %v", err)
	}
	var ae *APIError
	errors.As(err, &ae)
	if ae.Title != "Forbidden" || ae.Detail != "" {
		t.Errorf("%+v", ae)
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a\n\t b  c", 100); got != "a b c" {
		t.Errorf("%q", got)
	}
	if got := oneLine("héllo wörld", 2); got != "h…" {
		t.Errorf("cut inside a rune: %q", got)
	}
}
