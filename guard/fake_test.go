package guard

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The fakes of this file stand in for Runpod, the pod's SSH side and time,
// so that the whole cycle runs in-process without root, network or sshd.

// withClock and withDial set the test seams.
func withClock(c clock) Option   { return func(cfg *config) { cfg.clock = c } }
func withDial(d dialFunc) Option { return func(cfg *config) { cfg.dial = d } }

// trace is one timeline of what the fakes saw, so that a test can check
// the order of things across them (a write before the start, no sleep
// between two looks).
type trace struct {
	mu    sync.Mutex
	lines []string
}

func (t *trace) add(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

func (t *trace) all() []string { return copyLocked(&t.mu, &t.lines) }

// copyLocked copies *s under mu: the fakes are called from the lease
// holder's goroutine too.
func copyLocked[T any](mu *sync.Mutex, s *[]T) []T {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(*s)
}

// index is the position of the first line at or after from that starts
// with prefix, -1 when none does.
func (t *trace) index(prefix string, from int) int {
	lines := t.all()
	for i := max(from, 0); i < len(lines); i++ {
		if strings.HasPrefix(lines[i], prefix) {
			return i
		}
	}
	return -1
}

// t0 is the fake clock's start: any fixed instant does.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeClock's Sleep moves its time on at once. Sleeps of exactly park
// (the lease holder's period) wait instead for a wake or their context:
// holdLease's goroutine would otherwise spin beside the caller and move
// the clock under it.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	park  time.Duration
	wake  chan struct{}
	trace *trace
	// parked, when set, gets a token as a sleep parks.
	parked chan struct{}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.park > 0 && d == c.park {
		if c.parked != nil {
			select {
			case c.parked <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.wake:
		}
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	c.trace.add("sleep %s", d)
	return nil
}

// wakeParked lets one parked sleep end, failing the test when none comes
// within a few seconds of real time.
func (c *fakeClock) wakeParked(t *testing.T) {
	t.Helper()
	select {
	case c.wake <- struct{}{}:
	case <-time.After(5 * time.Second):
		t.Error("no parked sleep to wake")
	}
}

// States of the pod as a look sees them.
var (
	noVerdict = jobctl.State{ExitCode: -1, DuKiB: -1}
	ready     = jobctl.State{ExitCode: -1, DuKiB: -1, Verdict: watchdog.ParseVerdict("ready")}
	running   = jobctl.State{PID: 4242, ExitCode: -1, Alive: true, DuKiB: -1, Verdict: watchdog.ParseVerdict("ready")}
)

func exited(code int) jobctl.State {
	s := running
	s.Alive, s.ExitCode = false, code
	return s
}

// look is one step of the pod's script: its state, the job's output that
// appeared before it, and what else happens then.
type look struct {
	st  jobctl.State
	out string
	// err fails the look; one that is not a *podssh.CommandError breaks
	// the connection, as a dead network does.
	err error
	// do runs when the look is played, before it answers.
	do func()
}

type pollCall struct {
	Offset int64
	Touch  bool
	Max    int
	At     time.Time
}

type putCall struct{ Name, Value string }

// fakePod plays the pod's side of jobctl's protocol: each look that reads
// output (max > 0) plays the next step of its script, the last one again
// once they are all played; a look of the lease holder (max 0) only
// renews the lease. It outlives the connections, as a pod does.
type fakePod struct {
	t     *testing.T
	clk   *fakeClock
	trace *trace

	mu     sync.Mutex
	looks  []look
	next   int
	cur    jobctl.State
	log    []byte
	polls  []pollCall
	puts   []putCall
	extra  int
	leased chan struct{} // a token for each look of the lease holder

	// What the SSH commands answer.
	startOut    string
	startErr    error
	starts      []startCall
	uploaded    map[string]string
	uploadErr   error
	downloaded  podssh.Extracted
	downloadErr error
	onDownload  func()
	// putErrs fail the next marker writes, in order, each killing its
	// connection (fakeConn.dead).
	putErrs []error
	// downloadErrs fail the next downloads, in order; downloads are the
	// requests seen.
	downloadErrs []error
	downloads    []podssh.DownloadRequest
}

type startCall struct{ Cmd, Stdin string }

func (p *fakePod) poll(offset int64, touch bool, max int) (jobctl.State, []byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.polls = append(p.polls, pollCall{offset, touch, max, p.clk.Now()})
	if max == 0 {
		p.trace.add("lease look")
		select {
		case p.leased <- struct{}{}:
		default:
		}
		return p.state(), nil, nil
	}
	if p.next < len(p.looks) {
		l := p.looks[p.next]
		p.next++
		p.cur = l.st
		p.log = append(p.log, l.out...)
		if l.do != nil {
			l.do()
		}
		if l.err != nil {
			p.trace.add("poll %d failed: %v", offset, l.err)
			return jobctl.State{}, nil, l.err
		}
	} else {
		// A loop that never ends would hang the test.
		if p.extra++; p.extra > 1000 {
			p.t.Error("the pod's script was played out 1000 looks ago")
			return jobctl.State{}, nil, &podssh.CommandError{Status: 99, Stderr: "script played out"}
		}
	}
	st := p.state()
	end := min(offset+int64(max), int64(len(p.log)))
	b := bytes.Clone(p.log[min(offset, end):end])
	p.trace.add("poll %d touch=%v -> %d bytes", offset, touch, len(b))
	return st, b, nil
}

func (p *fakePod) state() jobctl.State {
	st := p.cur
	st.LogSize = int64(len(p.log))
	if st.PodNow == 0 {
		st.PodNow = p.clk.Now().Unix()
	}
	return st
}

func (p *fakePod) put(name, value string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.puts = append(p.puts, putCall{name, value})
	p.trace.add("put %s %s", name, value)
	return nil
}

func (p *fakePod) allPolls() []pollCall { return copyLocked(&p.mu, &p.polls) }
func (p *fakePod) allPuts() []putCall   { return copyLocked(&p.mu, &p.puts) }

// fakeConn is one SSH connection to the fake pod.
type fakeConn struct {
	pod  *fakePod
	once sync.Once
	done chan struct{}
	dead atomic.Bool // sessions fail, though done is not closed

	mu       sync.Mutex
	watchers []*fakeWatcher // its watch sessions, oldest first
}

var errConnClosed = errors.New("fake: connection closed")

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

func (c *fakeConn) Done() <-chan struct{} { return c.done }

func (c *fakeConn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *fakeConn) Watch(_ context.Context, runDir string) (watcher, error) {
	if c.closed() {
		return nil, errConnClosed
	}
	if c.dead.Load() {
		return nil, errors.New("podssh: new session: EOF")
	}
	w := &fakeWatcher{c: c, ended: make(chan struct{})}
	c.mu.Lock()
	c.watchers = append(c.watchers, w)
	c.mu.Unlock()
	return w, nil
}

func (c *fakeConn) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) error {
	c.pod.trace.add("run %s", cmd)
	return nil
}

func (c *fakeConn) Output(ctx context.Context, cmd string, stdin io.Reader) ([]byte, error) {
	if c.closed() {
		return nil, errConnClosed
	}
	in, err := io.ReadAll(stdin)
	if err != nil {
		return nil, err
	}
	p := c.pod
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts = append(p.starts, startCall{cmd, string(in)})
	p.trace.add("start")
	return []byte(p.startOut), p.startErr
}

func (c *fakeConn) UploadTar(ctx context.Context, remoteDir string, write func(*tar.Writer) error) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := write(tw); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	files := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
	}
	p := c.pod
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trace.add("upload %s", remoteDir)
	if p.uploadErr != nil {
		return p.uploadErr
	}
	p.uploaded = files
	return nil
}

func (c *fakeConn) Download(ctx context.Context, req podssh.DownloadRequest) (podssh.Extracted, error) {
	p := c.pod
	p.trace.add("download %s", req.RemoteDir)
	if p.onDownload != nil {
		p.onDownload()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.downloads = append(p.downloads, req)
	if len(p.downloadErrs) > 0 {
		err := p.downloadErrs[0]
		p.downloadErrs = p.downloadErrs[1:]
		return podssh.Extracted{}, err
	}
	return p.downloaded, p.downloadErr
}

// fakeWatcher is one watch session on a fakeConn.
type fakeWatcher struct {
	c      *fakeConn
	mu     sync.Mutex
	closed bool
	ended  chan struct{} // Done's; closed by end
	once   sync.Once
}

// end ends the session as a watch.sh that died does: Done closes, Polls fail.
func (w *fakeWatcher) end() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.once.Do(func() { close(w.ended) })
}

func (w *fakeWatcher) Done() <-chan struct{} { return w.ended }

func (w *fakeWatcher) usable(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case w.closed || w.c.closed():
		return errConnClosed
	}
	return nil
}

func (w *fakeWatcher) Poll(ctx context.Context, offset int64, touchLease bool, max int) (jobctl.State, []byte, error) {
	if err := w.usable(ctx); err != nil {
		return jobctl.State{}, nil, err
	}
	st, b, err := w.c.pod.poll(offset, touchLease, max)
	var ce *podssh.CommandError
	if err != nil && !errors.As(err, &ce) {
		w.c.Close()
	}
	return st, b, err
}

func (w *fakeWatcher) Put(ctx context.Context, name, value string) error {
	if err := w.usable(ctx); err != nil {
		return err
	}
	p := w.c.pod
	p.mu.Lock()
	var err error
	if len(p.putErrs) > 0 {
		err, p.putErrs = p.putErrs[0], p.putErrs[1:]
	}
	p.mu.Unlock()
	if err != nil {
		// The connection died under the session; its end is not seen
		// yet, and every new session on it fails.
		w.c.dead.Store(true)
		return err
	}
	return p.put(name, value)
}

func (w *fakeWatcher) Close() { w.end() }

// fakeAPI is Runpod: one pod at most, one secret, the GPU catalog and
// network volumes.
type fakeAPI struct {
	trace *trace

	mu    sync.Mutex
	calls []string
	// GetPod answers the boot statuses first, one a call, then status;
	// gone makes it answer 404.
	boot   []runpod.PodStatus
	status runpod.PodStatus
	gone   bool
	// lingers is how many GetPods still show a deleted pod (-1: every
	// one); notFound how many answer 404 for a pod that is there.
	lingers   int
	notFound  int
	deleted   bool
	podName   string // the name GetPod reports: the created pod's
	costPerHr float64
	podCost   float64 // PodCostPerHour's answer
	gpus      map[string]runpod.GPUType
	volumes   map[string]int
	growErr   error
	others    []runpod.Pod // other runs' pods, for a listing by prefix
	created   []runpod.CreatePodRequest
	secrets   map[string]string
	// secretDescs holds each created secret's description.
	secretDescs map[string]string
	// podLog is the pod's log, as StreamPodLogs serves it.
	podLog []string
}

const (
	fakePodID    = "pod-1"
	fakeSecretID = "secret-1"
	fakeAddr     = "192.0.2.7:40022"
)

func (a *fakeAPI) call(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	a.calls = append(a.calls, s)
	a.trace.add("api %s", s)
}

// called locks the fake and logs a call; the returned func unlocks it.
func (a *fakeAPI) called(format string, args ...any) (unlock func()) {
	a.mu.Lock()
	a.call(format, args...)
	return a.mu.Unlock
}

func (a *fakeAPI) allCalls() []string { return copyLocked(&a.mu, &a.calls) }

// methods is the names of the calls made, in order.
func (a *fakeAPI) methods() []string {
	var m []string
	for _, c := range a.allCalls() {
		m = append(m, strings.Fields(c)[0])
	}
	return m
}

func (a *fakeAPI) count(method string) int {
	n := 0
	for _, m := range a.methods() {
		if m == method {
			n++
		}
	}
	return n
}

func (a *fakeAPI) setStatus(s runpod.PodStatus, gone bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.gone = s, gone
}

func (a *fakeAPI) BaseURL() string { return "https://api.fake/v2" }

// StreamPodLogs plays podLog, then ends; WithPodLog is tested on the
// emulator (podlog_test.go).
func (a *fakeAPI) StreamPodLogs(_ context.Context, _ string, _ runpod.LogOptions, fn func(runpod.LogLine) error) error {
	a.mu.Lock()
	lines := slices.Clone(a.podLog)
	a.mu.Unlock()
	for _, l := range lines {
		if err := fn(runpod.LogLine{Line: l}); err != nil {
			return err
		}
	}
	return nil
}

func (a *fakeAPI) CreatePod(ctx context.Context, req runpod.CreatePodRequest) (*runpod.Pod, error) {
	defer a.called("CreatePod %s", req.Name)()
	a.created = append(a.created, req)
	a.podName = req.Name
	return &runpod.Pod{ID: fakePodID, Name: req.Name, Status: runpod.StatusProvisioning, CostPerHr: a.costPerHr}, nil
}

func (a *fakeAPI) GetPod(ctx context.Context, id string) (*runpod.Pod, error) {
	defer a.called("GetPod %s", id)()
	if a.gone || id != fakePodID || a.notFound > 0 {
		a.notFound = max(a.notFound-1, 0)
		return nil, fmt.Errorf("GET /pods/%s: %w", id, runpod.ErrNotFound)
	}
	if a.deleted && a.lingers > 0 {
		// A deleted pod that is still shown, this time.
		if a.lingers--; a.lingers == 0 {
			a.gone = true
		}
	}
	status := a.status
	if len(a.boot) > 0 {
		status, a.boot = a.boot[0], a.boot[1:]
	}
	pod := &runpod.Pod{ID: id, Name: a.podName, Status: status, CostPerHr: a.costPerHr}
	if status == runpod.StatusRunning {
		pod.Runtime = &runpod.PodRuntime{Ports: []runpod.PortMapping{{Private: 22, Public: 40022, Type: "tcp", IP: "192.0.2.7"}}}
	}
	return pod, nil
}

func (a *fakeAPI) ListPods(ctx context.Context, opts runpod.ListPodsOptions) ([]runpod.Pod, error) {
	defer a.called("ListPods %s%s", opts.Name, opts.NamePrefix)()
	if opts.NamePrefix != "" {
		return a.others, nil
	}
	if a.gone || a.podName == "" || opts.Name != a.podName {
		return nil, nil
	}
	return []runpod.Pod{{ID: fakePodID, Name: a.podName, Status: a.status, CreatedAt: t0}}, nil
}

func (a *fakeAPI) DeletePod(ctx context.Context, id string) (runpod.DeleteResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := ctx.Err(); err != nil {
		// A real client's call fails on a done context.
		a.call("DeletePod %s (context done)", id)
		return runpod.NotDeleted, err
	}
	a.call("DeletePod %s", id)
	a.deleted = true
	if a.lingers == 0 {
		a.gone = true
	}
	return runpod.Deleted, nil
}

func (a *fakeAPI) PodCostPerHour(ctx context.Context, id string) (float64, error) {
	defer a.called("PodCostPerHour %s", id)()
	return a.podCost, nil
}

func (a *fakeAPI) GetGPUType(ctx context.Context, id string) (*runpod.GPUType, error) {
	defer a.called("GetGPUType %s", id)()
	g, ok := a.gpus[id]
	if !ok {
		return nil, fmt.Errorf("GPU type %q: %w", id, runpod.ErrNotFound)
	}
	return &g, nil
}

func (a *fakeAPI) ListGPUTypes(ctx context.Context, opts ...runpod.CatalogOption) ([]runpod.GPUType, error) {
	defer a.called("ListGPUTypes")()
	var out []runpod.GPUType
	for _, g := range a.gpus {
		out = append(out, g)
	}
	return out, nil
}

func (a *fakeAPI) CreateSecretWithDescription(ctx context.Context, name, value, description string) (runpod.Secret, error) {
	defer a.called("CreateSecret %s", name)()
	if a.secrets == nil {
		a.secrets = map[string]string{}
	}
	a.secrets[name] = value
	if a.secretDescs == nil {
		a.secretDescs = map[string]string{}
	}
	a.secretDescs[name] = description
	return runpod.Secret{ID: fakeSecretID, Name: name, Description: description}, nil
}

func (a *fakeAPI) FindSecret(ctx context.Context, name string) (runpod.Secret, error) {
	defer a.called("FindSecret %s", name)()
	if _, ok := a.secrets[name]; !ok {
		return runpod.Secret{}, runpod.ErrNotFound
	}
	return runpod.Secret{ID: fakeSecretID, Name: name}, nil
}

func (a *fakeAPI) DeleteSecret(ctx context.Context, id string) error {
	defer a.called("DeleteSecret %s", id)()
	return nil
}

func (a *fakeAPI) GetNetworkVolume(ctx context.Context, id string) (*runpod.NetworkVolume, error) {
	defer a.called("GetNetworkVolume %s", id)()
	gb, ok := a.volumes[id]
	if !ok {
		return nil, fmt.Errorf("volume %s: %w", id, runpod.ErrNotFound)
	}
	return &runpod.NetworkVolume{ID: id, SizeGB: gb}, nil
}

func (a *fakeAPI) GrowNetworkVolume(ctx context.Context, id string, sizeGB int) (*runpod.NetworkVolume, error) {
	defer a.called("GrowNetworkVolume %s %d", id, sizeGB)()
	if a.growErr != nil {
		return nil, a.growErr
	}
	a.volumes[id] = sizeGB
	return &runpod.NetworkVolume{ID: id, SizeGB: sizeGB}, nil
}

// harness ties the fakes together and keeps what the run told.
type harness struct {
	t     *testing.T
	trace *trace
	clk   *fakeClock
	api   *fakeAPI
	pod   *fakePod

	mu       sync.Mutex
	events   []Event
	saved    []Record
	dials    []podssh.Target
	dialErrs []error // the next dials fail with these, in order
}

const (
	testRunID   = "run1"
	testCommand = "python train.py"
	testPoll    = 2 * time.Second
	testLease   = 5 * time.Minute
)

func newHarness(t *testing.T, looks ...look) *harness {
	tr := &trace{}
	clk := &fakeClock{now: t0, park: testLease, wake: make(chan struct{}), trace: tr}
	return &harness{
		t: t, trace: tr, clk: clk,
		api: &fakeAPI{trace: tr, status: runpod.StatusRunning, costPerHr: 0.69, volumes: map[string]int{},
			gpus: map[string]runpod.GPUType{DefaultGPU: {ID: DefaultGPU, Secure: true, SecurePrice: 0.69}}},
		pod: &fakePod{t: t, clk: clk, trace: tr, looks: looks, cur: noVerdict, startOut: "4242\n",
			leased: make(chan struct{}, 64)},
	}
}

func (h *harness) dial(ctx context.Context, t podssh.Target) (conn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dials = append(h.dials, t)
	h.trace.add("dial %s", t.Addr)
	if len(h.dialErrs) > 0 {
		err := h.dialErrs[0]
		h.dialErrs = h.dialErrs[1:]
		return nil, err
	}
	return &fakeConn{pod: h.pod, done: make(chan struct{})}, nil
}

func (h *harness) dialCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.dials)
}

// pins says the dial pinned the record's host key, and no other.
func pins(t *testing.T, d podssh.Target, rec Record) bool {
	t.Helper()
	want, err := podssh.ParsePublicKey(rec.HostKey)
	if err != nil {
		t.Fatal(err)
	}
	return d.HostKey != nil && bytes.Equal(d.HostKey.Marshal(), want.Marshal())
}

// options are the seams and the recorders, then extra.
func (h *harness) options(extra ...Option) []Option {
	return append([]Option{
		withClock(h.clk), withDial(h.dial), WithPoll(testPoll), WithLeaseEvery(testLease),
		WithEvents(func(e Event) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.events = append(h.events, e)
		}),
		WithSave(func(r Record) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.saved = append(h.saved, r)
			return nil
		}),
	}, extra...)
}

// spec is a valid Spec with a job directory of one file.
func (h *harness) spec() Spec {
	dir := h.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "train.py"), []byte("print('hi')\n"), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return Spec{RunID: testRunID, Job: Job{Dir: dir, Command: testCommand}, Rules: podenv.Rules{Deadline: t0.Add(2 * time.Hour)}}
}

func (h *harness) launch(ctx context.Context, spec Spec, extra ...Option) (*Run, error) {
	return launch(ctx, h.api, spec, h.options(extra...)...)
}

// mustStart launches the spec and starts its job.
func (h *harness) mustStart(spec Spec, extra ...Option) *Run {
	h.t.Helper()
	ctx := context.Background()
	r, err := h.launch(ctx, spec, extra...)
	if err != nil {
		h.t.Fatalf("Launch: %v", err)
	}
	if err := r.Start(ctx, Job{}); err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	return r
}

func (h *harness) allEvents() []Event { return copyLocked(&h.mu, &h.events) }
func (h *harness) allSaved() []Record { return copyLocked(&h.mu, &h.saved) }

func (h *harness) lastSaved() Record {
	s := h.allSaved()
	if len(s) == 0 {
		h.t.Fatal("no record was saved")
	}
	return s[len(s)-1]
}

// kinds names the events' kinds, leaving out the skipped ones.
func (h *harness) kinds(skip ...EventKind) []string {
	var ks []string
next:
	for _, e := range h.allEvents() {
		for _, s := range skip {
			if e.Kind == s {
				continue next
			}
		}
		ks = append(ks, e.Kind.String())
	}
	return ks
}

// eventsOf is the events of one kind.
func (h *harness) eventsOf(k EventKind) []Event {
	var es []Event
	for _, e := range h.allEvents() {
		if e.Kind == k {
			es = append(es, e)
		}
	}
	return es
}

// eventsAt are the events of kind k (EventWaiting, EventTransfer) at stage s.
func (h *harness) eventsAt(k EventKind, s Stage) []Event {
	var es []Event
	for _, e := range h.eventsOf(k) {
		if e.Stage == s {
			es = append(es, e)
		}
	}
	return es
}

// progress is the kinds that come any number of times in a run.
var progress = []EventKind{EventWaiting, EventOutput, EventLeaseRenewed, EventCost, EventTransfer}
