package runpod

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/testkit/openapicheck"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	// testKey must never show up in a log line or an error.
	testKey = "rpa_TESTKEY_0123456789_never_printed_ZYX"
	// apiBase is the fake's REST root: a non-empty base path, as
	// https://api.runpod.io/v2 has, so a client that drops it fails.
	apiBase = "/fake-runpod/v2"
)

// exchange is one request the fake server saw and what it answered.
type exchange struct {
	method, path, query string
	header              http.Header
	body                []byte
	status              int // -1 when the handler dropped the connection
	respHeader          http.Header
	respBody            []byte
}

// fakeServer is an httptest server with a mux under apiBase that records
// every exchange and, when the test ends, checks each against Runpod's
// OpenAPI document.
type fakeServer struct {
	t       *testing.T
	mux     *http.ServeMux
	srv     *httptest.Server
	logBuf  *shtest.SyncBuffer
	secrets []string // strings that must not leak, besides testKey

	mu        sync.Mutex
	exchanges []exchange
	waits     []time.Duration
}

// setup starts a fake Runpod and a client for it (go-github style). The
// client logs at debug level with HTTP dumps into a buffer that must never
// hold the key, retries 4 times, and records its waits instead of sleeping
// (set c.sleep = sleepCtx to really wait).
func setup(t *testing.T, opts ...Option) (*Client, *fakeServer) {
	t.Helper()
	fs := &fakeServer{t: t, mux: http.NewServeMux(), logBuf: &shtest.SyncBuffer{}}
	fs.srv = httptest.NewServer(http.HandlerFunc(fs.serve))
	logger := slog.New(slog.NewTextHandler(fs.logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	all := append([]Option{
		WithBaseURL(fs.srv.URL + apiBase),
		WithLogger(logger),
		WithDebug(true),
		WithRetry(4, 10*time.Second),
		// The recorded sleep does not move the clock, which a pacer
		// would wait on for ever; pacing has its tests on the fake.
		WithPacing(false),
	}, opts...)
	c, err := New(testKey, all...)
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		fs.mu.Lock()
		fs.waits = append(fs.waits, d)
		fs.mu.Unlock()
		return ctx.Err()
	}
	t.Cleanup(func() {
		fs.checkAgainst()
		fs.checkNoLeak("log", fs.logBuf.String())
	})
	// Cleanups run last-in first-out: the server closes (and its handlers
	// return) before the exchanges are checked.
	t.Cleanup(fs.srv.Close)
	return c, fs
}

// handle registers h for a pattern relative to the REST root, such as
// "GET /pods/{id}".
func (fs *fakeServer) handle(pattern string, h http.HandlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	fs.mux.HandleFunc(method+" "+apiBase+path, h)
}

func (fs *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	// Record the request before answering it, so that it is in the log by
	// the time the client sees any answer.
	fs.mu.Lock()
	fs.exchanges = append(fs.exchanges, exchange{
		method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery,
		header: r.Header.Clone(), body: body,
	})
	rec := &recorder{ResponseWriter: w, fs: fs, idx: len(fs.exchanges) - 1}
	fs.mu.Unlock()
	fs.mux.ServeHTTP(rec, r)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	e := &fs.exchanges[rec.idx]
	switch {
	case e.status != 0:
	case r.Context().Err() != nil:
		e.status = -1 // the client had gone: nothing was answered
	default:
		e.status = http.StatusOK // implicit
	}
}

// requests returns the recorded exchanges, as "METHOD path" for the REST
// ones relative to the root.
func (fs *fakeServer) requests() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []string
	for _, e := range fs.exchanges {
		p := strings.TrimPrefix(e.path, apiBase)
		out = append(out, e.method+" "+p)
	}
	return out
}

func (fs *fakeServer) count(methodPath string) int {
	n := 0
	for _, r := range fs.requests() {
		if r == methodPath {
			n++
		}
	}
	return n
}

func (fs *fakeServer) recordedWaits() []time.Duration {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]time.Duration(nil), fs.waits...)
}

func (fs *fakeServer) last() exchange {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.exchanges) == 0 {
		fs.t.Fatal("no request reached the server")
	}
	return fs.exchanges[len(fs.exchanges)-1]
}

// checkNoLeak fails the test if s holds the API key or a registered secret.
func (fs *fakeServer) checkNoLeak(what, s string) {
	fs.t.Helper()
	for _, v := range append([]string{testKey}, fs.secrets...) {
		if v != "" && strings.Contains(s, v) {
			fs.t.Errorf("%s leaks the secret %q:\n%s", what, v, s)
		}
	}
}

// checkAgainst validates every exchange against Runpod's OpenAPI document
// with a well-kept validator (internal/testkit/openapicheck): the path, method,
// query and headers, the request body, and every 2xx answer the fixture
// gave (status and body), and checks that the key goes as a Bearer token and
// never in the URL.
func (fs *fakeServer) checkAgainst() {
	t := fs.t
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, e := range fs.exchanges {
		name := e.method + " " + e.path
		if got := e.header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("%s: Authorization %q, want the Bearer key", name, got)
		}
		if strings.Contains(e.path, testKey) || strings.Contains(e.query, testKey) {
			t.Errorf("%s: the key is in the URL", name)
		}
		if !strings.HasPrefix(e.path, apiBase+"/") {
			t.Errorf("%s: outside the REST root %s", name, apiBase)
			continue
		}
		status := e.status
		if status < 200 || status > 299 {
			// Only answers that claim success are held to the
			// document: the error fixtures (an HTML 502, a redirect,
			// an empty 403) are off it on purpose, to test the client.
			status = 0
		}
		for _, msg := range openapicheck.Exchange(e.method, e.path, e.query, e.header, e.body, status, e.respHeader, e.respBody) {
			t.Errorf("%s: %s\nrequest body: %.2000s\nanswer: %.2000s", name, msg, e.body, e.respBody)
		}
	}
}

// recorder notes the answer in the exchange as it is written.
type recorder struct {
	http.ResponseWriter
	fs  *fakeServer
	idx int
}

func (r *recorder) WriteHeader(code int) {
	r.fs.mu.Lock()
	if e := &r.fs.exchanges[r.idx]; e.status == 0 {
		e.status, e.respHeader = code, r.Header().Clone()
	}
	r.fs.mu.Unlock()
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.fs.mu.Lock()
	e := &r.fs.exchanges[r.idx]
	if e.status == 0 {
		e.status, e.respHeader = http.StatusOK, r.Header().Clone()
	}
	e.respBody = append(e.respBody, b...)
	r.fs.mu.Unlock()
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// dropConnection closes the connection without an answer: the client sees
// a transport error.
func dropConnection(t *testing.T, w http.ResponseWriter) {
	rec := w.(*recorder)
	conn, _, err := http.NewResponseController(rec.ResponseWriter).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	rec.fs.mu.Lock()
	rec.fs.exchanges[rec.idx].status = -1
	rec.fs.mu.Unlock()
	conn.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeProblem answers with an RFC 9457 problem document, as Runpod does.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
}

// wirePod renders p as the v2 Pod schema, every required field present.
func wirePod(p Pod) map[string]any {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if p.SSH == nil {
		m["ssh"] = map[string]any{"proxy": nil, "direct": nil}
	}
	if p.Actions == nil {
		m["actions"] = []string{}
	}
	if p.Env == nil {
		m["env"] = map[string]string{}
	}
	if p.Ports == nil {
		m["ports"] = []string{}
	}
	if p.Status == "" {
		m["status"] = string(StatusRunning)
	}
	if p.Cloud == "" {
		m["cloud"] = "SECURE"
	}
	if p.CreatedAt.IsZero() {
		m["createdAt"] = "2026-06-01T12:00:00Z"
	}
	if p.ContainerDiskGB == 0 {
		m["disk"] = 20 // the schema's minimum is 1
	}
	if g, ok := m["gpu"].(map[string]any); ok {
		// Allocated totals, required on a pod's gpu since 2026-09.
		if _, ok := g["vcpuCount"]; !ok {
			g["vcpuCount"] = 8
		}
		if _, ok := g["memory"]; !ok {
			g["memory"] = 31
		}
	}
	m["registry"] = nil
	m["globalNetworking"] = map[string]any{"enabled": false}
	return m
}

// podStore is a tiny pod backend for the fake server.
type podStore struct {
	mu   sync.Mutex
	pods map[string]*Pod
	seq  int
	// onCreate, when set, answers POST /pods instead of the default 201;
	// make() creates the pod.
	onCreate func(w http.ResponseWriter, r *http.Request, make func() Pod)
	// onList, when set, answers GET /pods.
	onList func(w http.ResponseWriter, r *http.Request) bool
	posts  atomic.Int32
}

func (s *podStore) add(p Pod) Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods == nil {
		s.pods = map[string]*Pod{}
	}
	if p.ID == "" {
		s.seq++
		p.ID = "pod" + strconv.Itoa(s.seq)
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
	s.pods[p.ID] = &p
	return p
}

func (s *podStore) all() []Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Pod
	for _, p := range s.pods {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// serve registers the store's handlers on fs.
func (s *podStore) serve(fs *fakeServer) {
	fs.handle("POST /pods", func(w http.ResponseWriter, r *http.Request) {
		s.posts.Add(1)
		var b createPodBody
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			writeProblem(w, http.StatusUnprocessableEntity, err.Error())
			return
		}
		mk := func() Pod {
			p := Pod{Name: b.Name, Image: b.Image, Args: b.Args, Env: b.Env, Ports: b.Ports, GPU: &GPUConfig{ID: b.GPU.ID, Count: b.GPU.Count},
				Cloud: b.Cloud, ContainerDiskGB: b.Disk, Status: StatusProvisioning, CostPerHr: 0.44,
				Actions: []Action{ActionStop, ActionTerminate}}
			if b.Mounts != nil {
				p.Mounts = *b.Mounts
			}
			return s.add(p)
		}
		if s.onCreate != nil {
			s.onCreate(w, r, mk)
			return
		}
		writeJSON(w, http.StatusCreated, wirePod(mk()))
	})
	fs.handle("GET /pods", func(w http.ResponseWriter, r *http.Request) {
		if s.onList != nil && s.onList(w, r) {
			return
		}
		pods := []map[string]any{}
		for _, p := range s.all() {
			pods = append(pods, wirePod(p))
		}
		writeJSON(w, http.StatusOK, map[string]any{"pods": pods, "pagination": lastPage})
	})
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		p, ok := s.pods[r.PathValue("id")]
		s.mu.Unlock()
		if !ok {
			writeProblem(w, http.StatusNotFound, "pod not found")
			return
		}
		writeJSON(w, http.StatusOK, wirePod(*p))
	})
}

func (s *podStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pods)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// testMethod and testHeader check a request in a handler, go-github style.
func testMethod(t *testing.T, r *http.Request, want string) {
	t.Helper()
	if r.Method != want {
		t.Errorf("method %s, want %s", r.Method, want)
	}
}

// testJSONBody compares the request body to want as JSON values.
func testJSONBody(t *testing.T, r *http.Request, want string) {
	t.Helper()
	b, _ := io.ReadAll(r.Body)
	var got, exp any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Errorf("body %q is not JSON: %v", b, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	if mustJSON(got) != mustJSON(exp) {
		t.Errorf("body\n got %s\nwant %s", mustJSON(got), mustJSON(exp))
	}
}

func jsonDecode(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }

// lastPage is the pagination block of a list's last page.
var lastPage = map[string]any{"nextCursor": nil, "hasNextPage": false}
