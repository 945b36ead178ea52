package runpodtest

import (
	"net/http"
	"path"
	"strings"
)

// Fault is how the fake answers a call instead of the API, for Server.Fail.
// Exactly one of Status, Hang, Drop and Lost says what happens.
type Fault struct {
	// Times is how many matching calls the fault answers; 0 means 1, and
	// a negative count means every matching call until ClearFaults.
	Times int
	// Status answers with this HTTP status and an RFC 9457 body (Detail,
	// or the status text).
	Status int
	Detail string
	// RetryAfter, when set, is sent as the Retry-After header (Runpod
	// gives integer seconds with a 429).
	RetryAfter string
	// Hang holds the call without an answer until the client gives up or
	// the server closes.
	Hang bool
	// Drop closes the connection without an answer.
	Drop bool
	// Lost runs the call as the API would, then closes the connection
	// without its answer: the change is made but the client cannot know.
	// With Status too, it answers that status instead (a 500 after the
	// pod was made).
	Lost bool
	// Caller, when set, limits the fault to calls made with that key:
	// CallerAccount, a pod id for the pod's own key, or CallerAnyPod.
	Caller string
}

type faultRule struct {
	method  string
	pattern string
	left    int // < 0: forever
	Fault
}

// Fail makes the next matching calls answer f instead of the API. method is
// an HTTP method, or "" for any. pattern is matched against the URL path with
// path.Match, so "/v2/pods/*" is any one pod but not its /action path;
// "/v2/pods/*/action" is any pod's action. Rules are tried in the order they
// were added, and a call uses up one time of the first rule it matches.
func (s *Server) Fail(method, pattern string, f Fault) {
	if _, err := path.Match(pattern, "/"); err != nil {
		panic("runpodtest: bad fault pattern " + pattern + ": " + err.Error())
	}
	if !f.Hang && !f.Drop && !f.Lost && (f.Status < 100 || f.Status > 599) {
		panic("runpodtest: a Fault needs a Status, Hang, Drop or Lost")
	}
	left := f.Times
	if left == 0 {
		left = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultRule{method: strings.ToUpper(method), pattern: pattern, left: left, Fault: f})
}

// ClearFaults removes every fault not used up yet.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// takeFaultLocked finds the fault for a call and uses one of its times.
// s.mu must be held.
func (s *Server) takeFaultLocked(method, urlPath, caller string) *Fault {
	for i, rule := range s.faults {
		if rule.method != "" && rule.method != method {
			continue
		}
		anyPod := rule.Caller == CallerAnyPod && caller != CallerAccount && caller != CallerNone
		if rule.Caller != "" && rule.Caller != caller && !anyPod {
			continue
		}
		if ok, _ := path.Match(rule.pattern, urlPath); !ok {
			continue
		}
		f := rule.Fault
		if rule.left > 0 {
			rule.left--
			if rule.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return &f
	}
	return nil
}

func (s *Server) serveFault(w http.ResponseWriter, r *http.Request, f *Fault, caller string) {
	switch {
	case f.Lost:
		// The handler's answer goes nowhere; the connection closes as
		// Drop's does.
		s.route(discardWriter{h: http.Header{}}, r, caller)
		s.serveFault(w, r, &Fault{Drop: f.Status == 0, Status: f.Status, Detail: f.Detail}, caller)
	case f.Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		// Not hijackable (HTTP/2): abort the handler, which resets the
		// stream without an answer.
		panic(http.ErrAbortHandler)
	case f.Hang:
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
			}
		}
	default:
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		detail := f.Detail
		if detail == "" {
			detail = "injected fault: " + strings.ToLower(http.StatusText(f.Status))
		}
		writeProblem(w, f.Status, detail)
	}
}

// discardWriter takes a handler's answer and keeps none of it.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
