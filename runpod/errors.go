package runpod

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors. An *APIError matches the one that fits its status code
// with errors.Is, so callers need not compare status codes themselves.
var (
	// ErrNotFound matches a 404: the pod, volume or GPU type does not exist
	// (or is not visible to the key).
	ErrNotFound = errors.New("runpod: not found")
	// ErrUnauthorized matches a 401: the API key is missing, malformed or
	// revoked.
	ErrUnauthorized = errors.New("runpod: unauthorized")
	// ErrForbidden matches a 403: the key is valid but lacks the permission.
	ErrForbidden = errors.New("runpod: forbidden")
	// ErrRateLimited matches a 429 that outlasted the client's retries, and
	// a *RateLimitError: a 429 asking to wait past the retry cap (by
	// Retry-After or an exhausted window), not retried at all.
	ErrRateLimited = errors.New("runpod: rate limited")
	// ErrConflict matches a 409, e.g. an action not valid in the pod's
	// current status, or a cluster pod that cannot be deleted alone.
	ErrConflict = errors.New("runpod: conflict")
	// ErrInsufficientFunds matches a 402: the account's balance is spent;
	// it needs credits before any pod can be made.
	ErrInsufficientFunds = errors.New("runpod: insufficient funds: the account needs credits")

	// ErrRedirect is wrapped by the error of a call whose answer was a
	// redirect (3xx). The client follows none, so the API key and request
	// bodies go only to the URL they were meant for.
	ErrRedirect = errors.New("runpod: redirect refused")

	// ErrInvalid wraps every error about bad input detected before a request
	// is sent: a bad option, a malformed CreatePodRequest, a volume shrink,
	// an ID that is not plain (an *IDError).
	ErrInvalid = errors.New("runpod: invalid argument")

	// ErrStillBilling is wrapped by DeletePod's error when the pod could only
	// be stopped: compute is released but its disk keeps billing.
	ErrStillBilling = errors.New("runpod: pod stopped, not deleted: its volume still bills")

	// ErrUnconfirmed is wrapped by the step of DeletePod's error whose call
	// was answered (2xx, or a 404, which the API also gives a key that may
	// not see the pod) while GET still showed the pod: a delete counts only
	// once GET answers 404 or TERMINATED.
	ErrUnconfirmed = errors.New("runpod: answered, but GET still shows the pod")

	// ErrPodMayExist is wrapped by CreatePod's error when a create attempt
	// failed in a way that leaves it unknown whether Runpod made the pod, and
	// the client could not find out (listing pods failed too). Look for the
	// pod by name with ListPods before giving up on it.
	ErrPodMayExist = errors.New("runpod: create outcome unknown: the pod may exist")
)

// maxErrorBody bounds how much of an error response is read: enough for any
// problem document, small enough that a misbehaving proxy cannot make the
// client buffer an endless HTML page.
const maxErrorBody = 1 << 20

// APIError is a non-2xx answer from Runpod. It is built from an RFC 9457 problem document when the body is one
// and from the raw body text otherwise (an HTML page from a proxy's 502, for
// instance). Its strings never contain the API key or a secret value.
type APIError struct {
	// Method and Path name the request, Path relative to the base URL
	// ("/pods/abc").
	Method, Path string
	// StatusCode is the HTTP status.
	StatusCode int
	// Title is the problem's short summary, or the status text.
	Title string
	// Detail is the problem's explanation, or the raw body text.
	Detail string
	// Errors lists individual validation failures (the problem document's
	// errors[]).
	Errors []string
	// RequestID is Runpod's request identifier from the response headers,
	// for support tickets.
	RequestID string
	// RetryAfter is the wait the server asked for (Retry-After), zero when
	// it did not ask.
	RetryAfter time.Duration
	// Attempts is how many times the request was sent, retries included.
	Attempts int
}

// Error renders the error on one line.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("runpod: ")
	if e.Method != "" {
		b.WriteString(e.Method)
		b.WriteByte(' ')
	}
	b.WriteString(e.Path)
	fmt.Fprintf(&b, ": %d", e.StatusCode)
	title := oneLine(e.Title, 200)
	if title != "" {
		b.WriteString(" " + title)
	}
	if d := oneLine(e.Detail, 300); d != "" && d != title {
		b.WriteString(": " + d)
	}
	for i, m := range e.Errors {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(e.Errors)-i)
			break
		}
		b.WriteString("; " + oneLine(m, 200))
	}
	if e.RequestID != "" {
		b.WriteString(" (request id " + e.RequestID + ")")
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, ", retry after %s", e.RetryAfter)
	}
	return b.String()
}

// Is lets errors.Is match an *APIError against the sentinel of its status.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrConflict:
		return e.StatusCode == http.StatusConflict
	case ErrInsufficientFunds:
		return e.StatusCode == http.StatusPaymentRequired
	case ErrNoCapacity:
		return e.isCapacity()
	}
	return false
}

// Temporary reports whether the failure is one the client retries (429, 502,
// 503, 504): the same request may succeed later.
func (e *APIError) Temporary() bool { return retryableStatus(e.StatusCode) }

func retryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// problem is the RFC 9457 body Runpod sends (the OpenAPI ErrorResponse),
// read loosely: any field may be missing or of an unexpected shape.
type problem struct {
	Title  string          `json:"title"`
	Status int             `json:"status"`
	Detail string          `json:"detail"`
	Errors json.RawMessage `json:"errors"`
}

// parseAPIError builds the error for a response with status code, header and
// the first maxErrorBody bytes of its body (truncated tells if there was
// more).
func parseAPIError(method, path string, code int, h http.Header, body []byte, truncated bool) *APIError {
	e := &APIError{
		Method:     method,
		Path:       path,
		StatusCode: code,
		RequestID:  requestID(h),
		RetryAfter: 0,
	}
	var p problem
	if json.Unmarshal(body, &p) == nil && (p.Title != "" || p.Detail != "" || len(p.Errors) > 0) {
		e.Title, e.Detail = p.Title, p.Detail
		e.Errors = errorList(p.Errors)
	} else {
		e.Detail = strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD"))
		if truncated {
			e.Detail += " [truncated]"
		}
	}
	if e.Title == "" {
		e.Title = http.StatusText(code)
	}
	return e
}

// errorList reads errors[] as RFC 9457 strings or as objects with a
// message (as some gateways send).
func errorList(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		return ss
	}
	var gs []struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &gs) == nil {
		out := make([]string, 0, len(gs))
		for _, g := range gs {
			out = append(out, g.Message)
		}
		return out
	}
	return []string{string(raw)}
}

func requestID(h http.Header) string {
	for _, k := range []string{"X-Request-Id", "Request-Id", "X-Runpod-Request-Id"} {
		if v := h.Get(k); v != "" {
			return oneLine(v, 100)
		}
	}
	return ""
}

// parseRetryAfter reads Retry-After as delay-seconds or as an HTTP-date
// (RFC 9110 §10.2.3). ok is false when the header is absent or unreadable.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := parseUint(v); err == nil {
		const maxSecs = int64(1<<63-1) / int64(time.Second)
		if n > uint64(maxSecs) {
			n = uint64(maxSecs)
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d = t.Sub(now); d < 0 {
		d = 0
	}
	return d, true
}

func parseUint(s string) (uint64, error) {
	if s == "" || len(s) > 19 {
		return 0, errors.New("not a number")
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + uint64(c-'0')
	}
	return n, nil
}

// oneLine makes s valid UTF-8, turns control characters into spaces,
// collapses whitespace and cuts s to at most max bytes (on a rune boundary),
// so a body or a header cannot spread an error over many lines or garble a
// terminal.
func oneLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// redactedError hides secrets in the text of an error that is not ours
// (a transport error), while errors.Is/As still see the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// IDError is the error for an ID refused before any request: one that is
// not a plain ID of letters, digits, '-' and '_' (a GPU type ID may also
// hold spaces, but nothing that would change the URL path). Sent as a path
// segment, ".." or "a/b" would name another resource: DELETE /pods/..
// answers 404, which would read as "deleted". It matches ErrInvalid.
type IDError struct {
	Op   string // the method, such as "DeletePod"
	Kind string // "pod", "volume", "GPU type"
	ID   string
}

func (e *IDError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("runpod: %s: empty %s ID", e.Op, e.Kind)
	}
	return fmt.Sprintf("runpod: %s: %s ID %q is not a plain ID", e.Op, e.Kind, oneLine(e.ID, 80))
}

// Is makes an *IDError match ErrInvalid.
func (e *IDError) Is(target error) bool { return target == ErrInvalid }

// maxIDLen is far above Runpod's ids (14 characters) and keeps a garbage
// argument out of a URL.
const maxIDLen = 128

// checkID refuses an ID that is not plain; see IDError.
func checkID(op, kind, id string) error {
	if id == "" || len(id) > maxIDLen {
		return &IDError{Op: op, Kind: kind, ID: id}
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return &IDError{Op: op, Kind: kind, ID: id}
		}
	}
	return nil
}

// pathSegment reports whether s can stand as one URL path segment and
// still name what it says: not empty, not a dot segment, no separator,
// query, fragment or escape, no control character, no space at either end.
func pathSegment(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > maxIDLen || strings.TrimSpace(s) != s {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || strings.IndexByte(`/\?#%`, c) >= 0 {
			return false
		}
	}
	return true
}
