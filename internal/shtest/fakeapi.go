package shtest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one request the [FakeAPI] received.
type Request struct {
	Method string
	Path   string
	Body   string
	// Auth is the Authorization header as received.
	Auth   string
	Header http.Header
	Time   time.Time
}

// Forever makes an [Answer] hang until the test ends.
const Forever = time.Duration(-1)

// Answer is how the [FakeAPI] answers one request.
type Answer struct {
	Status int               // 0 means 200
	Body   string            // response body
	Header map[string]string // extra response headers
	// Hang delays the answer by this long; Forever hangs until the test ends
	// or the client goes away.
	Hang time.Duration
	// Drop closes the connection without any response (curl reports 000).
	Drop bool
}

// FakeAPI is an httptest server on 127.0.0.1 that records every request and
// answers as the test programs it. Unprogrammed, it shows a pod ended by a
// 2xx DELETE or action as the API does (see pick), so that a watchdog's
// confirming GET finds it gone. It is safe for concurrent use.
type FakeAPI struct {
	srv       *httptest.Server
	done      chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	reqs     []Request
	defaults map[string]Answer
	queues   map[string][]Answer
	handle   func(Request) (Answer, bool)
	// ended is what a 2xx DELETE, terminate or stop did to a pod path:
	// the status a later GET of it shows ("" for gone: 404).
	ended map[string]string
}

func routeKey(method, path string) string { return method + " " + path }

// NewFakeAPI starts the server; it is closed when the test ends (hanging
// answers are released first).
func NewFakeAPI(t testing.TB) *FakeAPI {
	t.Helper()
	f := &FakeAPI{done: make(chan struct{}), defaults: map[string]Answer{}, queues: map[string][]Answer{}, ended: map[string]string{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("shtest: listen: %v", err)
	}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Listener.Close()
	f.srv.Listener = l
	f.srv.Start()
	t.Cleanup(f.Close)
	return f
}

// Close releases hanging answers and stops the server. It is called on test
// cleanup; calling it twice is harmless.
func (f *FakeAPI) Close() {
	f.closeOnce.Do(func() {
		close(f.done)
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
}

// URL is the server's base URL, e.g. http://127.0.0.1:40123 (no trailing
// slash).
func (f *FakeAPI) URL() string { return f.srv.URL }

// SetDefault sets the answer to method and path when no queued answer is
// left. An empty method or path matches any.
func (f *FakeAPI) SetDefault(method, path string, a Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaults[routeKey(method, path)] = a
}

// Queue appends scripted answers for method and path, used one per request
// in order before the default applies. An empty method or path matches any.
func (f *FakeAPI) Queue(method, path string, answers ...Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := routeKey(method, path)
	f.queues[k] = append(f.queues[k], answers...)
}

// Revive forgets that a 2xx DELETE or action ended the pod at path (e.g.
// /pods/ID): its GETs answer as before, for a test that boots the same pod
// again.
func (f *FakeAPI) Revive(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ended, path)
}

// Handle installs a function consulted before queues and defaults; it answers
// the request when it returns true.
func (f *FakeAPI) Handle(fn func(Request) (Answer, bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handle = fn
}

// Requests returns a copy of every request received so far, in order.
func (f *FakeAPI) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

// Count returns how many requests matched method and path (empty = any).
func (f *FakeAPI) Count(method, path string) int {
	n := 0
	for _, r := range f.Requests() {
		if (method == "" || r.Method == method) && (path == "" || r.Path == path) {
			n++
		}
	}
	return n
}

// WaitFor polls the recorded requests until pred holds and returns them; it
// fails the test after timeout.
func (f *FakeAPI) WaitFor(t testing.TB, pred func([]Request) bool, timeout time.Duration) []Request {
	t.Helper()
	var reqs []Request
	Eventually(t, timeout, func() bool {
		reqs = f.Requests()
		return pred(reqs)
	}, "fake API: condition never met; requests: %v", lazyReqs{f})
	return reqs
}

type lazyReqs struct{ f *FakeAPI }

func (l lazyReqs) String() string {
	s := ""
	for _, r := range l.f.Requests() {
		s += "\n  " + r.Method + " " + r.Path + " " + r.Body
	}
	return s
}

// pick answers r: the Handle function, else a queued answer, else, for a
// GET of a pod that a 2xx DELETE, terminate or stop action ended, what the
// API shows of it then (404, TERMINATED or EXITED), else a default, else
// 204 for a DELETE and 200 {} for anything else.
func (f *FakeAPI) pick(r Request) Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.choose(r)
	if s := a.Status; !a.Drop && (s == 0 || s/100 == 2) {
		switch {
		case r.Method == http.MethodDelete:
			f.ended[r.Path] = ""
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/action") && strings.Contains(r.Body, `"terminate"`):
			f.ended[strings.TrimSuffix(r.Path, "/action")] = "TERMINATED"
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/action") && strings.Contains(r.Body, `"stop"`):
			f.ended[strings.TrimSuffix(r.Path, "/action")] = "EXITED"
		}
	}
	return a
}

func (f *FakeAPI) choose(r Request) Answer {
	if f.handle != nil {
		if a, ok := f.handle(r); ok {
			return a
		}
	}
	keys := []string{routeKey(r.Method, r.Path), routeKey(r.Method, ""), routeKey("", r.Path), routeKey("", "")}
	for _, k := range keys {
		if q := f.queues[k]; len(q) > 0 {
			f.queues[k] = q[1:]
			return q[0]
		}
	}
	if st, ok := f.ended[r.Path]; ok && r.Method == http.MethodGet {
		if st == "" {
			return Answer{Status: http.StatusNotFound, Body: `{"title":"Not Found","status":404,"detail":"pod not found"}`}
		}
		return Answer{Status: http.StatusOK, Body: `{"id":"` + path.Base(r.Path) + `","status":"` + st + `"}`}
	}
	for _, k := range keys {
		if a, ok := f.defaults[k]; ok {
			return a
		}
	}
	if r.Method == http.MethodDelete {
		return Answer{Status: http.StatusNoContent}
	}
	return Answer{Status: http.StatusOK, Body: "{}"}
}

func (f *FakeAPI) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r := Request{Method: req.Method, Path: req.URL.Path, Body: string(body),
		Auth: req.Header.Get("Authorization"), Header: req.Header.Clone(), Time: time.Now()}
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
	a := f.pick(r)
	if a.Hang != 0 {
		var timer <-chan time.Time
		if a.Hang > 0 {
			timer = time.After(a.Hang)
		}
		select {
		case <-timer:
		case <-f.done:
			return
		case <-req.Context().Done():
			return
		}
	}
	if a.Drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, a.Body)
}
