package runpod

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/termtext"
)

// LogSource selects what a pod's log stream carries.
type LogSource string

const (
	// LogsAll is both the container's output and Runpod's system lines.
	LogsAll LogSource = ""
	// LogsContainer is what the pod's command writes.
	LogsContainer LogSource = "container"
	// LogsSystem is Runpod's own lines about the pod (image pull, start).
	LogsSystem LogSource = "system"
)

// LogOptions selects where a pod's log stream starts.
type LogOptions struct {
	Source LogSource
	// Tail is how many past lines come first, 1 to 5000; 0 leaves it to
	// Runpod (100). NoBackfill asks for none: new lines only.
	Tail       int
	NoBackfill bool
	// Since starts the stream at a time instead of Tail lines back.
	Since time.Time
	// LastEventID resumes after a line already seen (its LogLine.ID);
	// it wins over Since and Tail.
	LastEventID string
}

// LogLine is one line of a pod's log.
type LogLine struct {
	// ID is the line's place in the stream, for LogOptions.LastEventID.
	ID     string
	Time   time.Time
	Source LogSource
	Line   string
}

// maxLogLine bounds one line of the event stream; a longer one is cut, and
// the rest of the stream still read.
const maxLogLine = 1 << 20

// logRetryMax caps the wait between two connections of a log stream.
const logRetryMax = 30 * time.Second

// StreamPodLogs follows a pod's log (GET /pods/{id}/logs, Server-Sent
// Events) and calls fn for each line, in order, until ctx ends (it returns
// ctx.Err()), fn returns an error (it returns that), or the pod is gone
// once a stream was open (it returns nil). A dropped connection is
// opened again after a pause, from the last line seen, so no line is
// delivered twice; the stream has no overall timeout. An answer that
// refuses for good fails the call with its *APIError (ErrNotFound for no
// pod); one that refuses for now (429, 502, 503, 504) is waited out, as
// long as its Retry-After or exhausted RateLimit window says.
func (c *Client) StreamPodLogs(ctx context.Context, id string, opts LogOptions, fn func(LogLine) error) error {
	if err := checkID("StreamPodLogs", "pod", id); err != nil {
		return err
	}
	if err := opts.check(); err != nil {
		return err
	}
	if fn == nil {
		return invalidf("StreamPodLogs: nil func")
	}
	connected := false
	wait := time.Second
	for {
		err := c.streamOnce(ctx, id, &opts, &connected, func(l LogLine) error {
			wait = time.Second
			return fn(l)
		})
		var cb callbackError
		switch {
		case errors.As(err, &cb):
			return cb.err
		case ctx.Err() != nil:
			return ctx.Err()
		case connected && errors.Is(err, ErrNotFound):
			return nil
		}
		// A stream has no overall timeout: it waits as long as the server
		// asks, an exhausted quota window included, rather than spend
		// requests on refusals.
		pause := wait
		var rl *RateLimitError
		var ae *APIError
		switch {
		case errors.As(err, &rl):
			pause = max(pause, rl.Wait)
		case errors.As(err, &ae) && !ae.Temporary():
			return err
		case ae != nil:
			pause = max(pause, ae.RetryAfter)
		}
		if err != nil {
			c.log.LogAttrs(ctx, slog.LevelDebug, "runpod: log stream broke",
				slog.String("pod", id), slog.Duration("wait", pause), slog.String("error", c.scrub(err.Error())))
		}
		if err := c.sleep(ctx, pause); err != nil {
			return err
		}
		wait = min(2*wait, logRetryMax)
	}
}

func (o *LogOptions) check() error {
	switch o.Source {
	case LogsAll, LogsContainer, LogsSystem:
	default:
		return invalidf("LogOptions.Source %q: must be container, system or empty", o.Source)
	}
	if o.Tail < 0 || o.Tail > 5000 {
		return invalidf("LogOptions.Tail %d: must be 0 to 5000", o.Tail)
	}
	if o.NoBackfill && o.Tail > 0 {
		return invalidf("LogOptions: Tail %d and NoBackfill both set", o.Tail)
	}
	return nil
}

// callbackError carries fn's error out of a stream unchanged.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// streamOnce opens the stream once and reads it to its end, moving opts'
// cursor past every line delivered, and setting *connected once a stream
// was opened. It returns nil when the server ended the stream.
func (c *Client) streamOnce(ctx context.Context, id string, opts *LogOptions, connected *bool, fn func(LogLine) error) error {
	q := url.Values{}
	if opts.Source != LogsAll {
		q.Set("source", string(opts.Source))
	}
	switch {
	case opts.LastEventID != "":
	case !opts.Since.IsZero():
		q.Set("since", opts.Since.UTC().Format(time.RFC3339))
	case opts.NoBackfill:
		q.Set("tail", "0")
	case opts.Tail > 0:
		q.Set("tail", strconv.Itoa(opts.Tail))
	}
	r := &call{method: http.MethodGet, path: "/pods/" + url.PathEscape(id) + "/logs"}
	u := c.baseURL + r.path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return permanentError{invalidf("StreamPodLogs: %v", err)}
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "text/event-stream, application/problem+json")
	req.Header.Set("User-Agent", c.userAgent)
	if opts.LastEventID != "" {
		req.Header.Set("Last-Event-ID", opts.LastEventID)
	}
	if c.pace != nil {
		if err := c.pace.wait(ctx, c, r); err != nil {
			return err
		}
	}
	resp, err := c.stream.Do(req)
	if err != nil {
		return &redactedError{msg: c.scrub(fmt.Sprintf("runpod: GET %s: %v", r.path, err)), err: err}
	}
	defer resp.Body.Close()
	if c.pace != nil {
		c.pace.observe(resp.Header, c.now())
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
		truncated := len(body) > maxErrorBody
		if truncated {
			body = body[:maxErrorBody]
		}
		return c.answerError(r, resp.StatusCode, resp.Header, body, truncated, 1)
	}
	*connected = true
	return readEvents(resp.Body, func(id string, data []byte) error {
		l := LogLine{ID: id}
		var wire struct {
			TS     string `json:"ts"`
			Source string `json:"source"`
			Line   string `json:"line"`
		}
		if json.Unmarshal(data, &wire) == nil {
			l.Line, l.Source = wire.Line, LogSource(wire.Source)
			l.Time, _ = time.Parse(time.RFC3339, wire.TS)
		} else {
			l.Line = string(data)
		}
		if id != "" {
			opts.LastEventID = id
		}
		if err := fn(l); err != nil {
			return callbackError{err}
		}
		return nil
	})
}

// readEvents reads a Server-Sent Events stream and calls fn for each event
// with data. Lines past maxLogLine are cut and marked; comments, event
// names and retry hints are skipped. It returns nil at the end of the stream.
func readEvents(r io.Reader, fn func(id string, data []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var id string
	var data []byte
	has := false
	for {
		line, _, err := termtext.ReadLine(br, maxLogLine)
		if line == "" {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		// A line past the bound keeps termtext's mark, so its reader sees
		// it was cut.
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if has {
				if err := fn(id, data); err != nil {
					return err
				}
			}
			data, has = data[:0], false
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "data":
			if has {
				data = append(data, '\n')
			}
			data, has = append(data, value...), true
		}
	}
}
