package runpodtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// logLine is one line of a pod's output, as its log stream serves it.
type logLine struct {
	seq  int64
	ts   time.Time
	line string
}

// maxLogLines bounds what the fake keeps of a pod's output line by line.
const maxLogLines = 100_000

// addLocked adds text's lines; l.mu is held.
func (l *podLog) addLocked(text string) {
	now := l.s.cfg.now().UTC()
	for line := range strings.Lines(text) {
		next := int64(1)
		if n := len(l.lines); n > 0 {
			next = l.lines[n-1].seq + 1
		}
		l.lines = append(l.lines, logLine{seq: next, ts: now, line: strings.TrimSuffix(line, "\n")})
	}
	if len(l.lines) > maxLogLines {
		l.lines = append(l.lines[:0], l.lines[len(l.lines)-maxLogLines:]...)
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// after returns the lines a cursor asks for, the last line's sequence
// number, and a channel closed when more arrive. The cursor is a sequence
// number (the lines after it, when bySeq), a time (the lines from it) or,
// with neither, the last tail lines.
func (l *podLog) after(bySeq bool, seq int64, since time.Time, tail int) ([]logLine, int64, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	var last int64
	if n := len(l.lines); n > 0 {
		last = l.lines[n-1].seq
	}
	switch {
	case bySeq:
		for _, ln := range l.lines {
			if ln.seq > seq {
				out = append(out, ln)
			}
		}
	case !since.IsZero():
		for _, ln := range l.lines {
			if !ln.ts.Before(since) {
				out = append(out, ln)
			}
		}
	default:
		out = append(out, l.lines[max(len(l.lines)-tail, 0):]...)
	}
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return out, last, l.changed
}

// eventID is a line's SSE id: its time and sequence number, as Runpod's
// ids read ("2026-06-01T12:02:03Z/000000000001").
func (ln logLine) eventID() string {
	return fmt.Sprintf("%s/%012d", ln.ts.Format(time.RFC3339), ln.seq)
}

// podLogs serves GET /v2/pods/{id}/logs: the pod's output as Server-Sent
// Events, the backfill first (tail, since or Last-Event-ID), then each new
// line as it comes, until the pod is gone or the client leaves. The fake's
// pods have container output only; source=system streams nothing but
// stays open like the rest.
func (s *Server) podLogs(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	source := q.Get("source")
	if source != "" && source != "container" && source != "system" {
		writeProblem(w, http.StatusBadRequest, "invalid source", "source: must be container or system")
		return
	}
	tail := 100
	if v := q.Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 5000 {
			writeProblem(w, http.StatusBadRequest, "invalid tail", "tail: must be an integer from 0 to 5000")
			return
		}
		tail = n
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, "invalid since", "since: must be an RFC 3339 date-time")
			return
		}
		since = t
	}
	var seq int64
	bySeq := false
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		bySeq = true
		_, n, ok := strings.Cut(v, "/")
		if seq, _ = strconv.ParseInt(n, 10, 64); !ok || seq <= 0 {
			writeProblem(w, http.StatusBadRequest, "invalid Last-Event-ID")
			return
		}
	}
	s.mu.Lock()
	p, ok := s.pods[id]
	gone := !ok || p.status == StatusTerminated
	s.mu.Unlock()
	if gone {
		writeProblem(w, http.StatusNotFound, "pod not found")
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		lines, last, changed := p.log.after(bySeq, seq, since, tail)
		if source == "system" {
			lines = nil
		}
		for _, ln := range lines {
			data, _ := json.Marshal(map[string]string{"ts": ln.ts.Format(time.RFC3339), "source": "container", "line": ln.line})
			if _, err := fmt.Fprintf(w, "id: %s\ndata: %s\n\n", ln.eventID(), data); err != nil {
				return
			}
		}
		// From now on the lines after the last one there was, whatever
		// the backfill took.
		seq, bySeq = last, true
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-tick.C:
			s.mu.Lock()
			p, ok := s.pods[id]
			ended := !ok || p.status == StatusTerminated
			s.mu.Unlock()
			if ended {
				return
			}
		}
	}
}
