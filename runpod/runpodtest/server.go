package runpodtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Server is a fake Runpod: the REST v2 API under BaseURL (account secrets
// included), served on 127.0.0.1, with state a test can
// read and break. Create one with NewServer or NewTestServer; it is safe for
// concurrent use.
type Server struct {
	// URL is the root of the fake, http://127.0.0.1:port, without a
	// trailing slash.
	URL string

	hs      *httptest.Server
	api     *http.ServeMux // the API's operations (see route)
	cfg     config
	tmp     string
	closing chan struct{}
	once    sync.Once
	runs    sync.WaitGroup // pod launches in flight
	// podStarted, when set (by a test, before any pod), is called once a
	// launch has started the pod's processes and before it makes them
	// known to stop and kill: it lets a test put a stop in that window.
	podStarted func(l *launch)
	// terminating, when set (by a test, before any pod), is called by
	// each terminate once it knows whether it ends the pod (first) or
	// found another one ending it: it lets a test hold two DELETEs
	// together.
	terminating func(first bool)

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every pod state change
	pods     map[string]*pod
	order    []string          // pod ids, oldest first
	podKeys  map[string]string // pod-scoped key -> pod id
	cursors  map[string]listCursor
	secrets  []*Secret
	volumes  map[string]*volume
	volOrder []string
	// registries are the account's container registry credentials.
	registries []Registry
	faults     []*faultRule
	quota      map[string]*quotaState // by caller
	stock      stockState
	closed     bool

	// logMu guards the request log on its own, so that an answer written
	// while s.mu is held can still be logged. Order: s.mu, then logMu.
	logMu    sync.Mutex
	requests []Request
}

// Caller names who made a request in Request.Caller, besides a pod id.
const (
	// CallerAccount is the account key's caller.
	CallerAccount = "account"
	// CallerNone is the caller of a request without a valid key.
	CallerNone = ""
	// CallerAnyPod, as a Fault's Caller, matches every pod's own key.
	CallerAnyPod = "any pod"
)

// NewServer starts a fake Runpod. Close it when done; NewTestServer does so
// for a test. Without WithPodRunner, pods are API state only: they turn
// RUNNING after the provisioning delay and stay so until stopped or deleted.
func NewServer(opts ...Option) *Server {
	cfg := defaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.apiKey == "" {
		cfg.apiKey = newKey()
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	removeAbandoned(os.TempDir())
	tmp, err := os.MkdirTemp("", "runpodtest-")
	if err != nil {
		panic(fmt.Sprintf("runpodtest: %v", err))
	}
	writeOwner(tmp)
	s := &Server{
		cfg:     cfg,
		tmp:     tmp,
		closing: make(chan struct{}),
		changed: make(chan struct{}),
		pods:    map[string]*pod{},
		podKeys: map[string]string{},
		cursors: map[string]listCursor{},
		volumes: map[string]*volume{},
	}
	// Everything a handler may read is set before the server serves: a
	// request from another process is not ordered after NewServer's
	// writes (the race detector sees none of TCP's ordering).
	s.api = s.newAPI()
	var h http.Handler = http.HandlerFunc(s.serveHTTP)
	if cfg.drift.rewrites() {
		h = cfg.drift.driftAnswers(h)
	}
	for _, m := range cfg.middleware {
		h = m(h)
	}
	if st := cfg.drift.PodKeyDelete; st != 0 {
		s.Fail(http.MethodDelete, "/v2/pods/*", Fault{Status: st, Times: -1, Caller: CallerAnyPod})
	}
	s.hs = httptest.NewUnstartedServer(h)
	s.URL = "http://" + s.hs.Listener.Addr().String()
	s.hs.Start()
	return s
}

// BaseURL is the REST v2 base, URL + "/v2": what a client (and a pod's
// OVERBRAINER_API_URL) is given in place of https://api.runpod.io/v2.
func (s *Server) BaseURL() string { return s.URL + "/v2" }

// APIKey is the account key: the one WithAPIKey gave, or a generated one.
func (s *Server) APIKey() string { return s.cfg.apiKey }

// Now is the fake's clock, which bills the pods (see WithClock).
func (s *Server) Now() time.Time { return s.cfg.now() }

// Close kills every pod that still runs, waits for their processes and
// namespaces to be gone, then shuts the HTTP server down and removes the
// fake's files (network volumes included). Requests hanging on a fault are
// released. Close may be called more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.mu.Lock()
		s.closed = true
		var launches []*launch
		for _, id := range s.order {
			if l := s.pods[id].launch; l != nil {
				launches = append(launches, l)
			}
		}
		s.mu.Unlock()
		for _, l := range launches {
			l.kill()
		}
		s.runs.Wait()
		s.hs.CloseClientConnections()
		s.hs.Close()
		s.mu.Lock()
		now := s.cfg.now()
		for _, id := range s.order {
			p := s.pods[id]
			if p.status != StatusTerminated {
				// The fake's account is gone: nothing bills past Close.
				p.setStatus(StatusTerminated, now)
			}
			p.setSSHPort(0)
		}
		s.notifyLocked()
		s.mu.Unlock()
		_ = os.RemoveAll(s.tmp)
	})
}

// Pods returns every pod the fake has known, terminated ones included (with
// their final bill), oldest first.
func (s *Server) Pods() []Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.now()
	out := make([]Pod, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.pods[id].snapshot(s, now))
	}
	return out
}

// Pod returns one pod by id, terminated or not.
func (s *Server) Pod(id string) (Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[id]
	if !ok {
		return Pod{}, false
	}
	return p.snapshot(s, s.cfg.now()), true
}

// Billing returns the pods that still cost money: not terminated, and either
// running (or about to) or stopped with a persistent volume. A test ends
// with it empty when no pod was left behind.
func (s *Server) Billing() []Pod {
	var out []Pod
	for _, p := range s.Pods() {
		if p.Billing {
			out = append(out, p)
		}
	}
	return out
}

// TotalUSD is what every pod has cost so far.
func (s *Server) TotalUSD() float64 {
	var total float64
	for _, p := range s.Pods() {
		total += p.Bill.USD
	}
	return total
}

// PodKey returns the pod-scoped API key the fake gave the pod (its
// RUNPOD_API_KEY), so that a test can call the API as the pod would.
func (s *Server) PodKey(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pods[id]; ok {
		return p.key
	}
	return ""
}

// PodLog returns what the pod's command wrote to its stdout and stderr,
// with every key and secret value the fake knows replaced by [REDACTED].
func (s *Server) PodLog(id string) string {
	s.mu.Lock()
	p, ok := s.pods[id]
	s.mu.Unlock()
	if !ok {
		return ""
	}
	return p.log.String()
}

// WaitPod waits until cond holds for the pod, the pod is unknown, or ctx
// ends; it returns the pod as last seen. The fake wakes it on every change of
// a pod's state rather than polling.
func (s *Server) WaitPod(ctx context.Context, id string, cond func(Pod) bool) (Pod, error) {
	for {
		s.mu.Lock()
		p, ok := s.pods[id]
		var snap Pod
		if ok {
			snap = p.snapshot(s, s.cfg.now())
		}
		changed := s.changed
		s.mu.Unlock()
		if !ok {
			return Pod{}, fmt.Errorf("runpodtest: no pod %q", id)
		}
		if cond(snap) {
			return snap, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return snap, fmt.Errorf("runpodtest: pod %s still %s: %w", id, snap.Status, ctx.Err())
		case <-time.After(time.Second):
			// The fake clock may have moved (a provisioning delay ends
			// without any event), so look again now and then.
		}
	}
}

// WaitStatus waits until the pod has one of the statuses.
func (s *Server) WaitStatus(ctx context.Context, id string, statuses ...string) (Pod, error) {
	return s.WaitPod(ctx, id, func(p Pod) bool { return slices.Contains(statuses, p.Status) })
}

// notifyLocked wakes every WaitPod. s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Request is one call the fake received, in the order received.
type Request struct {
	// ID is the X-Request-Id the fake answered it with.
	ID       string
	Time     time.Time // on the fake's clock
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	// Caller is CallerAccount, the id of the pod whose key made the call,
	// or CallerNone.
	Caller string
	// Status is the HTTP status answered; 0 for a fault that hung,
	// dropped the connection or lost the answer.
	Status int
	// Fault is set when an injected fault answered instead of the API.
	Fault bool
}

// Requests returns the request log so far.
func (s *Server) Requests() []Request {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

// Secret is a Runpod account secret, as created by POST
// /v2/account/secrets or AddSecret. Value is the fake's to show a test;
// the API never returns it.
type Secret struct {
	ID             string
	Name           string
	Value          string
	Description    string
	CreatedAt      time.Time // on the fake's clock
	ValueUpdatedAt time.Time
}

// AddSecret creates a secret as POST /v2/account/secrets would, without its
// checks, and returns its id. It replaces the value of a secret of the
// same name (ignoring case, as the fake's names are unique so).
func (s *Server) AddSecret(name, value string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.now()
	if sec := s.secretByNameLocked(name); sec != nil {
		sec.Value, sec.ValueUpdatedAt = value, now
		return sec.ID
	}
	sec := &Secret{ID: newID(), Name: name, Value: value, CreatedAt: now, ValueUpdatedAt: now}
	s.secrets = append(s.secrets, sec)
	return sec.ID
}

// Secrets returns the account's secrets, oldest first.
func (s *Server) Secrets() []Secret {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Secret, len(s.secrets))
	for i, sec := range s.secrets {
		out[i] = *sec
	}
	return out
}

// NetworkVolume is a network volume of the fake. Dir is the host directory
// that holds its files, bind-mounted into every pod that mounts the volume.
type NetworkVolume struct {
	ID         string
	Name       string
	SizeGB     int
	DataCenter string
	Dir        string
}

type volume struct {
	NetworkVolume
}

// AddNetworkVolume creates a network volume (a directory under the fake's
// temporary directory) and returns it. An empty id gets a generated one.
func (s *Server) AddNetworkVolume(id string, sizeGB int) NetworkVolume {
	if id == "" {
		id = newID()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.volumes[id]; ok {
		return v.NetworkVolume
	}
	dir := s.tmp + "/volumes/" + id
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(fmt.Sprintf("runpodtest: %v", err))
	}
	v := &volume{NetworkVolume{ID: id, Name: id, SizeGB: sizeGB, DataCenter: fakeDataCenter, Dir: dir}}
	s.volumes[id] = v
	s.volOrder = append(s.volOrder, id)
	return v.NetworkVolume
}

// NetworkVolumes returns the network volumes, oldest first.
func (s *Server) NetworkVolumes() []NetworkVolume {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NetworkVolume, 0, len(s.volOrder))
	for _, id := range s.volOrder {
		out = append(out, s.volumes[id].NetworkVolume)
	}
	return out
}

// secretValues lists what a pod log must never show.
func (s *Server) secretValues() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secretValuesLocked()
}

// secretValuesLocked is secretValues with s.mu held.
func (s *Server) secretValuesLocked() []string {
	vals := []string{s.cfg.apiKey}
	for k := range s.podKeys {
		vals = append(vals, k)
	}
	for _, sec := range s.secrets {
		vals = append(vals, sec.Value)
	}
	// Longest first, so that a secret containing another is redacted whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	return vals
}

const (
	keyAlphabet    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	idAlphabet     = "abcdefghijklmnopqrstuvwxyz0123456789"
	fakeDataCenter = "FAKE-LOCAL-1"
)

func randomString(alphabet string, n int) string {
	b := make([]byte, n)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// newKey makes an API key shaped like Runpod's (rpa_ and 40 characters).
func newKey() string { return "rpa_" + randomString(keyAlphabet, 40) }

// newRequestID makes an X-Request-Id, a UUID-shaped random one.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// newID makes a resource id shaped like Runpod's pod ids.
func newID() string { return randomString(idAlphabet, 14) }

// hasPrefixPath reports whether p is dir or lies under it.
func hasPrefixPath(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
