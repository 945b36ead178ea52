package runpod

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Runpod limits each user over several windows at once (a minute, an hour,
// a day) and describes them on every authenticated answer with the IETF
// RateLimit header fields: RateLimit-Policy gives each window's quota q
// and length w, RateLimit its live state, r requests left and t seconds
// until it resets:
//
//	RateLimit-Policy: "minute";q=60;w=60, "hour";q=3000;w=3600
//	RateLimit: "minute";r=0;t=12, "hour";r=2890;t=1500
//
// A 429 lasts until every exhausted window has reset, so the wait is the
// longest t among the windows with r=0, which Retry-After may understate.

// RateLimitError is the error for a 429 that asks for a longer wait than
// the client's retry cap (WithRetry), by its Retry-After header or by an
// exhausted RateLimit window: retrying within the cap would only spend
// every attempt on more 429s, so the call fails at once, having sent one
// request. Wait says how long to wait before calling again. It matches
// ErrRateLimited, and unwraps to the 429's *APIError.
type RateLimitError struct {
	// Window names the exhausted window that resets last, as RateLimit
	// names it ("hour"); empty when the wait is Retry-After's. Wait is
	// how long until the server takes requests again.
	Window string
	Wait   time.Duration
	// MaxWait is the client's cap on one wait.
	MaxWait time.Duration
	Err     *APIError
}

func (e *RateLimitError) Error() string {
	if e.Window == "" {
		return fmt.Sprintf("runpod: %s %s: rate limited: Retry-After asks to wait %s, past the %s retry cap; not retried, call again after that wait",
			e.Err.Method, e.Err.Path, e.Wait, e.MaxWait)
	}
	return fmt.Sprintf("runpod: %s %s: rate limited: the %q window resets in %s, past the %s retry cap; not retried, call again after that wait",
		e.Err.Method, e.Err.Path, e.Window, e.Wait, e.MaxWait)
}

// Is makes a *RateLimitError match ErrRateLimited.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// Unwrap returns the 429's *APIError.
func (e *RateLimitError) Unwrap() error { return e.Err }

// exhaustedWindow reads the RateLimit header and returns the exhausted
// window (r=0) that resets last; ok is false when none is exhausted or the
// header is absent or unreadable.
func exhaustedWindow(h http.Header) (name string, wait time.Duration, ok bool) {
	for _, v := range h.Values("RateLimit") {
		for _, item := range splitList(v) {
			n, params := itemParams(item)
			r, hasR := params["r"]
			t, hasT := params["t"]
			if !hasR || !hasT || r != 0 {
				continue
			}
			if d := time.Duration(t) * time.Second; !ok || d > wait {
				name, wait, ok = oneLine(n, 40), d, true
			}
		}
	}
	return name, wait, ok
}

// splitList splits a structured-field list on commas outside quoted
// strings.
func splitList(v string) []string {
	var out []string
	inQuote, esc, start := false, false, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case esc:
			esc = false
		case inQuote && c == '\\':
			esc = true
		case c == '"':
			inQuote = !inQuote
		case c == ',' && !inQuote:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

// itemParams reads `"name";r=0;t=30` into its name and its integer
// parameters (others are skipped).
func itemParams(item string) (string, map[string]uint64) {
	parts := strings.Split(item, ";")
	name := strings.TrimSpace(parts[0])
	if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
		name = strings.ReplaceAll(name[1:len(name)-1], `\"`, `"`)
	}
	params := make(map[string]uint64, len(parts)-1)
	for _, p := range parts[1:] {
		k, v, found := strings.Cut(strings.TrimSpace(p), "=")
		if !found {
			continue
		}
		if n, err := parseUint(strings.TrimSpace(v)); err == nil {
			params[strings.TrimSpace(k)] = n
		}
	}
	return name, params
}
