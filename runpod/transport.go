package runpod

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// call describes one API request, sent once or several times.
type call struct {
	method string
	path   string // relative to the base URL; an {id} in it stands for id
	id     string // path-escaped when sent
	query  url.Values
	body   any // marshalled to JSON; nil for no body
	// into, when set, is where the answer's body is read, its old content
	// dropped: a caller that reads page after page keeps one buffer.
	into *[]byte
	// skipArgs reads a 2xx answer, a page of pods, without their start
	// commands (argsDropper) as it comes.
	skipArgs bool
	// secrets are strings (besides the API key) that must not appear in an
	// error or a log line; a debug dump leaves out the body of a call with
	// secrets.
	secrets []string
	// timeout, when set, bounds each attempt instead of the HTTP
	// client's own timeout; an attempt it ends is not retried (the
	// caller asks again differently: see ListPods).
	timeout time.Duration
}

// where is the request's path with its placeholders filled in, for logs and
// errors.
func (r *call) where() string { return r.fill("") }

// fill is prefix and the request's path with its {id} filled in, built in
// one allocation: the client hands resty a whole URL, which it then need
// not splice and parse twice.
func (r *call) fill(prefix string) string {
	before, after, ok := strings.Cut(r.path, "{id}")
	if !ok {
		return prefix + r.path
	}
	return prefix + before + url.PathEscape(r.id) + after
}

// noBody is the body of a request that has none (see once), held as an
// interface value so that passing it allocates nothing.
var noBody any = []byte{}

// response is a received answer with a 2xx status.
type response struct {
	status int
	header http.Header
	body   []byte
}

// permanentError marks a failure that retrying cannot fix (an oversized or
// undecodable body).
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// errBodyTooLarge is a 2xx answer over the client's bound on a body.
var errBodyTooLarge = errors.New("response body too large")

// do sends r, retrying when retry is set and the failure is transient: a
// transport error (connection refused or reset, timeout), 429, 502, 503 or
// 504. It waits between attempts with exponential backoff and jitter, never
// less than a Retry-After or an exhausted RateLimit window asks and never
// more than maxWait (a 429 that asks for longer ends the call, see
// RateLimitError). A cancelled ctx
// ends the call at once with ctx.Err(), in flight or mid-wait.
//
// The loop is ours rather than resty's: resty caps Retry-After at
// RetryMaxWaitTime (2 s unless set) without telling, and CreatePod must
// decide between attempts whether to resend at all (see CreatePod).
func (c *Client) do(ctx context.Context, r *call, retry bool) (response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, r, attempt)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return response{}, ctx.Err()
		}
		if !retry || attempt >= c.maxAttempts || !c.retryable(err) || (r.timeout > 0 && errors.Is(err, context.DeadlineExceeded)) {
			return response{}, c.finalError(r, err, attempt)
		}
		if err := c.pause(ctx, r, attempt, err); err != nil {
			return response{}, err
		}
	}
}

// pause waits before attempt+1 after err, logging why.
func (c *Client) pause(ctx context.Context, r *call, attempt int, err error) error {
	wait := c.waitFor(attempt, err)
	c.log.LogAttrs(ctx, slog.LevelDebug, "runpod: retrying",
		slog.String("method", r.method), slog.String("path", r.where()),
		slog.Int("attempt", attempt), slog.Duration("wait", wait),
		slog.String("reason", c.scrub(err.Error(), r.secrets...)))
	return c.sleep(ctx, wait)
}

func (c *Client) retryable(err error) bool {
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	var pe permanentError
	return !errors.As(err, &pe)
}

// waitFor is the pause after the given failed attempt: the backoff step
// with jitter, raised to the server's Retry-After, capped at maxWait.
func (c *Client) waitFor(attempt int, err error) time.Duration {
	step := min(baseWait, c.maxWait)
	for i := 1; i < attempt && step < c.maxWait; i++ {
		step *= 2
	}
	step = min(step, c.maxWait)
	// Jitter in [step/2, step]: clients that failed together do not retry
	// together.
	wait := step/2 + rand.N(step/2+1)
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > wait {
		wait = ae.RetryAfter
	}
	return min(wait, c.maxWait)
}

// finalError dresses the last failure of r after attempts tries.
func (c *Client) finalError(r *call, err error, attempts int) error {
	var rl *RateLimitError
	if errors.As(err, &rl) {
		rl.Err.Attempts = attempts
		return rl
	}
	var ae *APIError
	if errors.As(err, &ae) {
		ae.Attempts = attempts
		return ae
	}
	msg := fmt.Sprintf("runpod: %s %s: %v", r.method, r.where(), err)
	if attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", attempts)
	}
	return &redactedError{msg: c.scrub(msg, r.secrets...), err: err}
}

// once sends r one time. A non-2xx answer comes back as an *APIError.
func (c *Client) once(ctx context.Context, r *call, attempt int) (response, error) {
	if err := ctx.Err(); err != nil {
		return response{}, err
	}
	rc := c.rc
	if r.timeout > 0 {
		rc = c.rcPaged
	}
	req := rc.R().
		SetContext(ctx).
		SetDoNotParseResponse(true)
	// The methods check their IDs; this catches a path parameter that
	// one of them forgot.
	if strings.Contains(r.path, "{id}") && !pathSegment(r.id) {
		return response{}, permanentError{invalidf("%s %s: path parameter id is not a plain segment", r.method, r.path)}
	}
	if r.query != nil {
		req.SetQueryParamsFromValues(r.query)
	}
	var reqBody []byte
	if r.body != nil {
		b, ok := r.body.(json.RawMessage) // encoded already (CreatePod)
		var err error
		if !ok {
			b, err = json.Marshal(r.body)
		}
		if err != nil {
			return response{}, permanentError{fmt.Errorf("encoding request: %w", err)}
		}
		reqBody = b
		req.SetHeader("Content-Type", "application/json").SetBody(b)
	} else if r.method != http.MethodGet {
		// An empty body of bytes, unlike none, reaches net/http as
		// http.NoBody, which it need not probe for data.
		req.SetBody(noBody)
	}
	target := r.fill(c.baseURL)
	if c.pace != nil {
		if err := c.pace.wait(ctx, c, r); err != nil {
			return response{}, err
		}
	}
	if r.timeout > 0 {
		// The call's own bound, from here: the wait for the quota does
		// not count.
		tctx, cancel := context.WithTimeout(ctx, r.timeout)
		defer cancel()
		req.SetContext(tctx)
	}
	start := time.Now()
	res, err := req.Execute(r.method, target)
	if err != nil {
		c.logAttempt(ctx, r, attempt, 0, start, err)
		return response{}, err
	}
	raw := res.RawResponse
	defer raw.Body.Close()
	if c.pace != nil {
		c.pace.observe(raw.Header, c.now())
	}
	code := raw.StatusCode
	limit := int64(maxSuccessBody)
	if code < 200 || code > 299 {
		limit = maxErrorBody
	}
	var body []byte
	var read int64
	if raw.ContentLength != 0 && code != http.StatusNoContent {
		body, read, err = readBody(r, io.LimitReader(raw.Body, limit+1), r.skipArgs && code <= 299)
	}
	if err != nil {
		err = fmt.Errorf("reading response body: %w", err)
		c.logAttempt(ctx, r, attempt, code, start, err)
		return response{}, err
	}
	truncated := read > limit
	if truncated {
		body = body[:min(int64(len(body)), limit)]
	}
	c.logAttempt(ctx, r, attempt, code, start, nil)
	if c.debug && c.log.Enabled(ctx, slog.LevelDebug) {
		c.dump(ctx, r, raw, reqBody, body)
	}
	if code >= 300 && code <= 399 {
		// Neither the Location nor the body is echoed: either may carry
		// what the server chose to put there.
		return response{}, permanentError{fmt.Errorf("%w (status %d)", ErrRedirect, code)}
	}
	if code < 200 || code > 299 {
		return response{}, c.answerError(r, code, raw.Header, body, truncated, attempt)
	}
	if truncated {
		return response{}, permanentError{fmt.Errorf("%w: more than %d bytes", errBodyTooLarge, limit)}
	}
	return response{status: code, header: raw.Header, body: body}, nil
}

// readBody reads all of rd, into r's buffer when it has one, without the
// pods' start commands with skipArgs. It returns the body and the bytes
// read.
func readBody(r *call, rd io.Reader, skipArgs bool) ([]byte, int64, error) {
	var dst []byte
	if r.into != nil {
		dst = (*r.into)[:0]
	}
	var n int64
	var err error
	if skipArgs {
		d := argsDropper{out: dst}
		n, err = io.Copy(&d, rd)
		dst = d.out
	} else {
		b := bytes.NewBuffer(dst)
		n, err = b.ReadFrom(rd)
		dst = b.Bytes()
	}
	if r.into != nil {
		*r.into = dst
	}
	return dst, n, err
}

// answerError is the error of a non-2xx answer to r: an *APIError with
// the wait the server asked for, or a *RateLimitError for a 429 that asks
// for a longer wait than the client's cap, by its Retry-After or by an
// exhausted RateLimit window.
func (c *Client) answerError(r *call, code int, h http.Header, body []byte, truncated bool, attempt int) error {
	ae := parseAPIError(r.method, r.where(), code, h, body, truncated)
	if d, ok := parseRetryAfter(h.Get("Retry-After"), c.now()); ok {
		ae.RetryAfter = d
	}
	ae.Attempts = attempt
	c.scrubAPIError(ae, r.secrets)
	if code == http.StatusTooManyRequests {
		name, wait, ok := exhaustedWindow(h)
		if !ok || ae.RetryAfter > wait {
			name, wait = "", ae.RetryAfter
		}
		if wait > c.maxWait {
			return &RateLimitError{Window: name, Wait: wait, MaxWait: c.maxWait, Err: ae}
		}
		ae.RetryAfter = wait
	}
	return ae
}

func (c *Client) logAttempt(ctx context.Context, r *call, attempt, status int, start time.Time, err error) {
	if !c.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.method), slog.String("path", r.where()),
		slog.Int("attempt", attempt), slog.Duration("duration", time.Since(start)),
	}
	if status != 0 {
		attrs = append(attrs, slog.Int("status", status))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", c.scrub(err.Error(), r.secrets...)))
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "runpod: request", attrs...)
}

// decode reads a 2xx JSON body into out.
func decode(r *call, resp response, out any) error {
	if err := json.Unmarshal(resp.body, out); err != nil {
		return fmt.Errorf("runpod: %s %s: decoding %d response: %w", r.method, r.where(), resp.status, err)
	}
	return nil
}

// getList makes the GET r, whose JSON answer lists its items in member.
func getList[T any](ctx context.Context, c *Client, r *call, member string) ([]T, error) {
	resp, err := c.do(ctx, r, true)
	if err != nil {
		return nil, err
	}
	var out map[string]json.RawMessage
	if err := decode(r, resp, &out); err != nil {
		return nil, err
	}
	var items []T
	if raw, ok := out[member]; ok {
		resp.body = raw
		if err := decode(r, resp, &items); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// scrub replaces the API key and the given secrets in s, in their raw and
// their JSON-escaped forms.
func (c *Client) scrub(s string, secrets ...string) string {
	s = redact(s, c.key)
	for _, v := range secrets {
		s = redact(s, v)
	}
	return s
}

// redact replaces v in s, also as JSON would escape it. Every API answer's
// strings pass here: where nothing matches, nothing is allocated.
func redact(s, v string) string {
	if v == "" || s == "" {
		return s
	}
	s = strings.ReplaceAll(s, v, "[REDACTED]")
	if !jsonEscapes(v) {
		return s
	}
	if b, err := json.Marshal(v); err == nil {
		if esc := string(b[1 : len(b)-1]); esc != v {
			s = strings.ReplaceAll(s, esc, "[REDACTED]")
		}
	}
	return s
}

// jsonEscapes says whether json.Marshal may write v otherwise than as is:
// a control, a quote, a backslash, an HTML character or anything not ASCII.
func jsonEscapes(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || strings.IndexByte(`"\<>&`, c) >= 0 {
			return true
		}
	}
	return false
}

func (c *Client) scrubAPIError(e *APIError, secrets []string) {
	e.Title = c.scrub(e.Title, secrets...)
	e.Detail = c.scrub(e.Detail, secrets...)
	e.RequestID = c.scrub(e.RequestID, secrets...)
	for i := range e.Errors {
		e.Errors[i] = c.scrub(e.Errors[i], secrets...)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
