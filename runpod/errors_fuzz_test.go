package runpod

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzKey is the account key of the fuzzed client: whatever an error body
// holds, it must not reach an error string.
const fuzzKey = "rpa_FUZZKEY0123456789abcdefghij"

// maxErrorLine bounds APIError.Error(): the parser cuts the detail (300),
// each listed error (200, five at most) and the request id (100); the rest
// is ours. A body of any size must not make a longer error line.
const maxErrorLine = 4096

// checkErrorLine asserts what every *APIError string must be: one line of
// bounded, valid UTF-8 without the account key.
func checkErrorLine(t *testing.T, ae *APIError) {
	t.Helper()
	msg := ae.Error()
	if strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("error spreads over several lines: %q", msg)
	}
	if len(msg) > maxErrorLine {
		t.Fatalf("error is %d bytes long (max %d): %.200q...", len(msg), maxErrorLine, msg)
	}
	if !utf8.ValidString(msg) {
		t.Fatalf("error is not valid UTF-8: %q", msg)
	}
	if strings.Contains(msg, fuzzKey) {
		t.Fatalf("error holds the API key: %q", msg)
	}
}

// FuzzParseAPIError feeds arbitrary error answers (status, body, the
// Retry-After and request id headers) through the parser and the key scrub,
// as the client does for every non-2xx answer.
func FuzzParseAPIError(f *testing.F) {
	problemBody := func(title, detail string, errs any) []byte {
		b, _ := json.Marshal(map[string]any{"title": title, "status": 422, "detail": detail, "errors": errs})
		return b
	}
	f.Add(422, problemBody("Unprocessable Entity", "Request validation failed.", []string{"$.gpu.count: minimum 1"}), "", "req-1")
	f.Add(429, []byte(`{"title":"Too Many Requests","status":429}`), "7", "")
	f.Add(503, []byte("<html><body>502 Bad Gateway\n\n</body></html>"), "Wed, 21 Oct 2015 07:28:00 GMT", "")
	f.Add(401, []byte(`{"errors":[{"message":"bad key `+fuzzKey+`","extensions":{"code":"UNAUTHENTICATED"}}]}`), "", "")
	f.Add(400, []byte(`{"detail":"key \"`+fuzzKey+`\" echoed"}`), "-1", fuzzKey)
	f.Add(500, []byte(`{"title":"line one\nline two","detail":"x"}`), "", "")
	f.Add(500, []byte(`{"errors":{"nested":["`+fuzzKey+`"]}}`), "99999999999999999999", "a\nb")
	f.Add(502, []byte("\xff\xfe bytes \x00 nul"), "", "")
	f.Add(400, []byte("0"), "0", "\x80")
	f.Add(418, []byte(`{"title":`+strings.Repeat(`"x`, 3)+`}`), "", "")
	f.Fuzz(func(t *testing.T, code int, body []byte, retryAfter, reqID string) {
		c, err := New(fuzzKey)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		if reqID != "" {
			h.Set("X-Request-Id", reqID)
		}
		ae := parseAPIError(http.MethodPost, "/pods", code, h, body, len(body) > 1000)
		if d, ok := parseRetryAfter(retryAfter, time.Unix(1_790_000_000, 0)); ok {
			if d < 0 {
				t.Fatalf("Retry-After %q gave a negative wait %v", retryAfter, d)
			}
			ae.RetryAfter = d
		}
		c.scrubAPIError(ae, nil)
		if ae.StatusCode != code {
			t.Fatalf("status %d became %d", code, ae.StatusCode)
		}
		for sentinel, status := range map[error]int{
			ErrNotFound: 404, ErrUnauthorized: 401, ErrForbidden: 403, ErrRateLimited: 429, ErrConflict: 409,
		} {
			if errors.Is(ae, sentinel) != (code == status) {
				t.Fatalf("status %d: errors.Is(%v) = %v", code, sentinel, !(code == status))
			}
		}
		checkErrorLine(t, ae)
	})
}

// FuzzProblemFields checks that a well-formed problem document keeps its
// title and detail (the fields a caller shows) and still renders as one
// safe line whatever they hold.
func FuzzProblemFields(f *testing.F) {
	f.Add(400, "Bad Request", "gpuTypeIds: unknown type", "e1", "e2")
	f.Add(500, "multi\nline\ttitle", "detail with the key "+fuzzKey, "", strings.Repeat("é", 400))
	f.Add(409, "", "", "only\rerrors", "")
	f.Fuzz(func(t *testing.T, code int, title, detail, e1, e2 string) {
		c, err := New(fuzzKey)
		if err != nil {
			t.Fatal(err)
		}
		var errs []string
		for _, e := range []string{e1, e2} {
			if e != "" {
				errs = append(errs, e)
			}
		}
		body, err := json.Marshal(map[string]any{"title": title, "status": code, "detail": detail, "errors": errs})
		if err != nil {
			t.Skip()
		}
		ae := parseAPIError(http.MethodGet, "/pods/p1", code, http.Header{}, body, false)
		// json.Marshal writes each invalid UTF-8 byte as U+FFFD; compare
		// with what JSON carried.
		valid := func(s string) string {
			b, _ := json.Marshal(s)
			var out string
			_ = json.Unmarshal(b, &out)
			return out
		}
		if title != "" || detail != "" || len(errs) > 0 {
			if title != "" && ae.Title != valid(title) {
				t.Fatalf("title %q read as %q", title, ae.Title)
			}
			if ae.Detail != valid(detail) {
				t.Fatalf("detail %q read as %q", detail, ae.Detail)
			}
			if len(ae.Errors) != len(errs) {
				t.Fatalf("errors %q read as %q", errs, ae.Errors)
			}
		}
		c.scrubAPIError(ae, nil)
		checkErrorLine(t, ae)
	})
}
