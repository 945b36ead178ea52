package guard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// api is what a Run needs of Runpod: a *runpod.Client, or a fake in the
// tests.
type api interface {
	CreatePod(ctx context.Context, req runpod.CreatePodRequest) (*runpod.Pod, error)
	GetPod(ctx context.Context, id string) (*runpod.Pod, error)
	ListPods(ctx context.Context, opts runpod.ListPodsOptions) ([]runpod.Pod, error)
	DeletePod(ctx context.Context, id string) (runpod.DeleteResult, error)
	PodCostPerHour(ctx context.Context, id string) (float64, error)
	GetGPUType(ctx context.Context, id string) (*runpod.GPUType, error)
	ListGPUTypes(ctx context.Context, opts ...runpod.CatalogOption) ([]runpod.GPUType, error)
	CreateSecretWithDescription(ctx context.Context, name, value, description string) (runpod.Secret, error)
	FindSecret(ctx context.Context, name string) (runpod.Secret, error)
	DeleteSecret(ctx context.Context, id string) error
	GetNetworkVolume(ctx context.Context, id string) (*runpod.NetworkVolume, error)
	GrowNetworkVolume(ctx context.Context, id string, sizeGB int) (*runpod.NetworkVolume, error)
	StreamPodLogs(ctx context.Context, id string, opts runpod.LogOptions, fn func(runpod.LogLine) error) error
	BaseURL() string
}

// Bounds of the client's own commands.
const (
	// maxChunk bounds the output one look reads.
	maxChunk = 1 << 20
	// shortCommand bounds a look, a write, the start: one that takes
	// longer is taken for a broken connection.
	shortCommand = 3 * time.Minute
	// writeTimeout bounds the write of one client file (a word): a
	// network volume that hangs under the run directory holds it, and
	// with it whatever waits on it, no longer than this.
	writeTimeout = 30 * time.Second
	// statusEvery is how often a running job's cost is told.
	statusEvery = 10 * time.Minute
	// teardownTimeout bounds a delete made after ctx ended.
	teardownTimeout = 3 * time.Minute
)

// Run is a run whose pod exists (Launch, Attach); use one goroutine at a time.
type Run struct {
	api  api
	cfg  config
	rec  Record
	key  *podssh.Key
	host ssh.PublicKey
	// hostDesc is the host key secret's description: on a network
	// volume, how long the run may need it with no pod (see launch).
	hostDesc string
	addr     string
	conn     conn
	// watch is the long-lived look at the run over conn, made on first
	// use and dropped when it breaks.
	watch watcher
	// ready says the verdict was ready: the watchdog's rules are armed.
	ready bool
	last  jobctl.State
	// runDirLost says the run directory is a new one although the job was
	// started: the container restarted on a disk that did not keep it.
	runDirLost bool
	ended      bool
	// filledWarned is the last filling warning's percent; diskAsked says
	// this Run asked the job for a disk snapshot.
	filledWarned int
	diskAsked    bool
	// costAsked says this Run asked for the cost cap's snapshot itself.
	costAsked bool
	// red redacts the job's secrets (redacting).
	red *redactor
	// stalled says the follow saw the job stalled (and not moving since):
	// a pod then found gone most likely went by the stalled rule.
	stalled bool
	// earlyFor is the foreseen end the results so far were last
	// downloaded before (WithEarlyResults), askedSeen when a snapshot
	// request was first seen; seen is the last look that found the pod
	// alive.
	earlyFor  time.Time
	askedSeen time.Time
	seen      time.Time
	// plog copies the pod's log (WithPodLog).
	plog *podLog
	// rightTold says EventDeleteRight was emitted; failedSeen is the pod
	// time of the last delete_failed line told (EventDeleteFailed).
	rightTold  bool
	failedSeen int64
}

// Record returns the run's record as it is now.
func (r *Run) Record() Record { return r.rec }

// State is what the last look at the pod saw.
func (r *Run) State() JobState { return JobState(r.last) }

// PodGone says the pod was deleted (or found gone) and the cost recorded.
func (r *Run) PodGone() bool { return r.ended }

// Ready says the watchdog's verdict was ready: its rules guard the pod.
func (r *Run) Ready() bool { return r.ready }

func (r *Run) emit(e Event) {
	e.Time = r.cfg.clock.Now()
	e.RunID, e.PodID = r.rec.ID, r.rec.PodID
	if e.PodName == "" {
		e.PodName = r.rec.PodName
	}
	if e.Kind == EventFailed || e.Kind == EventWarning {
		r.cfg.log.Info("guard: "+e.Kind.String(), "run", e.RunID, "pod", e.PodID, "err", e.Err)
	} else {
		r.cfg.log.Debug("guard: "+e.Kind.String(), "run", e.RunID, "pod", e.PodID)
	}
	r.cfg.events(e)
	r.podLogEvent(e)
}

func (r *Run) warn(err error) { r.emit(Event{Kind: EventWarning, Err: err}) }

// save hands the record to WithSave's function.
func (r *Run) save() {
	if r.cfg.save == nil {
		return
	}
	if err := r.cfg.save(r.rec); err != nil {
		r.warn(fmt.Errorf("saving the run's record: %w", err))
	}
}

func (r *Run) now() time.Time { return r.cfg.clock.Now() }

func (r *Run) since(t time.Time) time.Duration { return r.now().Sub(t) }

// ramp paces the waits for a pod coming up: the first after firstLook,
// each next one twice as long, up to limit. A pod ready within a second is
// seen within a quarter of a second of it, and a slow one is asked no more
// often than the poll interval.
type ramp struct{ next, limit time.Duration }

// firstLook starts the waits that cost an API request; firstSSHLook those
// that cost only a round trip on the pod's SSH connection (dialling it,
// reading the verdict), which Runpod's quota does not count.
const (
	firstLook    = 250 * time.Millisecond
	firstSSHLook = 50 * time.Millisecond
)

// podCheckEvery is how often dial reads a pod whose SSH does not answer.
const podCheckEvery = 5 * time.Second

// lostConnCheck is how often a redial reads the pod at first: a
// connection lost may be a pod lost, which the API shows only a moment
// after (its look's session ends first), so at the pace of the refused
// dials, then twice as long apart: a few reads per lost connection.
func lostConnCheck(poll time.Duration) time.Duration {
	return min(cmp.Or(poll, podCheckEvery), firstSSHLook)
}

func newRamp(limit time.Duration) *ramp { return newRampFrom(firstLook, limit) }

func newRampFrom(first, limit time.Duration) *ramp {
	return &ramp{next: min(first, limit), limit: limit}
}

// step returns the next wait and doubles the one after it.
func (p *ramp) step() time.Duration {
	d := p.next
	p.next = min(2*p.next, p.limit)
	return d
}

// podEnded says a pod in this status will not run the job any more.
func podEnded(s runpod.PodStatus) bool {
	return s == runpod.StatusExited || s == runpod.StatusError || s == runpod.StatusTerminated
}

// stillBills says a pod in this status is not running but still bills:
// its disk is kept until the pod is deleted.
func stillBills(s runpod.PodStatus) bool {
	return s == runpod.StatusExited || s == runpod.StatusError
}

func (r *Run) gone(status runpod.PodStatus, detail string) *PodGoneError {
	due, _ := r.ruleDue(r.now())
	if due == "" && r.stalled {
		due = watchdog.DeleteStalled
	}
	return &PodGoneError{PodID: r.rec.PodID, Status: status, DeleteReason: r.rec.DeleteReason, Due: due, Detail: detail}
}

// connect waits for the pod and dials it.
func (r *Run) connect(ctx context.Context) error {
	if err := r.waitRunning(ctx); err != nil {
		return err
	}
	return r.dial(ctx, r.cfg.startTimeout, podCheckEvery, podCheckEvery)
}

// waitRunning waits until the pod runs with its SSH port published.
func (r *Run) waitRunning(ctx context.Context) error {
	start, pace := r.now(), newRamp(r.rec.Poll)
	var lastErr error
	for {
		pod, err := r.lookPod(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, runpod.ErrNotFound):
			return r.gone("", "")
		case err != nil:
			if lastErr == nil {
				r.warn(fmt.Errorf("reading pod %s: %w (trying again)", r.rec.PodID, err))
			}
			lastErr = err
		case podEnded(pod.Status):
			return r.gone(pod.Status, "")
		default:
			lastErr = nil
			if pod.CostPerHr > 0 {
				r.rec.CostPerHr = pod.CostPerHr
			}
			if ip, port, ok := pod.PublicPort(22); ok && pod.Status == runpod.StatusRunning {
				r.addr = fmt.Sprintf("%s:%d", ip, port)
				r.emit(Event{Kind: EventRunning, Addr: r.addr})
				return nil
			}
			r.emit(Event{Kind: EventWaiting, Stage: StagePod, Status: pod.Status, Elapsed: r.since(r.rec.BillingStart), CostUSD: r.spent()})
		}
		if r.since(start) > r.cfg.startTimeout {
			if lastErr != nil {
				return fmt.Errorf("pod %s: no answer for %s: %w", r.rec.PodID, r.cfg.startTimeout, lastErr)
			}
			return fmt.Errorf("pod %s was not running with SSH after %s: %w", r.rec.PodID, r.cfg.startTimeout, ErrStartTimeout)
		}
		if err := r.cfg.clock.Sleep(ctx, pace.step()); err != nil {
			return err
		}
	}
}

// A 404 is looked at notFoundLooks times, notFoundEvery apart, before the
// pod is taken for gone.
const (
	notFoundLooks = 3
	notFoundEvery = 3 * time.Second
)

// lookPod reads the run's pod. An API that loses a pod for a moment must
// not end a run whose pod still runs: a 404 is believed only when the
// next looks say it too.
func (r *Run) lookPod(ctx context.Context) (*runpod.Pod, error) {
	for look := 1; ; look++ {
		pod, err := r.api.GetPod(ctx, r.rec.PodID)
		if !errors.Is(err, runpod.ErrNotFound) || look == notFoundLooks {
			return pod, err
		}
		if err := r.cfg.clock.Sleep(ctx, notFoundEvery); err != nil {
			return nil, err
		}
	}
}

// spent is the cost so far, from the pod's price.
func (r *Run) spent() float64 { return r.rec.costTo(r.now()) }

// dial connects with the run's host key pinned, retrying while sshd comes
// up. A host key mismatch is final: this is not the run's pod, or someone
// is in between. While dials fail, it reads the pod first after first,
// then every, then twice as long apart up to podCheckEvery, and ends with
// the pod.
func (r *Run) dial(ctx context.Context, timeout, first, every time.Duration) error {
	// A refused dial costs nothing of the API's quota, so it ramps up to
	// the run's poll pace, but no slower than a second.
	start, pace := r.now(), newRampFrom(firstSSHLook, min(time.Second, cmp.Or(r.rec.Poll, time.Second)))
	check := start.Add(first)
	var lastErr error
	for {
		c, err := r.cfg.dial(ctx, podssh.Target{Addr: r.addr, Key: r.key, HostKey: r.host, Timeout: 20 * time.Second})
		if err == nil {
			r.dropConn()
			r.conn = c
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, podssh.ErrHostKeyMismatch) {
			return fmt.Errorf("SSH to %s refused: the server's host key is not this run's host key (never trusted on first use): %w", r.addr, err)
		}
		lastErr = err
		if r.since(start) > timeout {
			return fmt.Errorf("SSH to pod %s at %s failed for %s: %w", r.rec.PodID, r.addr, timeout, lastErr)
		}
		r.waiting(StageSSH)
		if !r.now().Before(check) {
			// A pod whose bootstrap failed is deleted by its watchdog:
			// no need to knock until the timeout.
			check, every = r.now().Add(every), min(2*every, podCheckEvery)
			detail := fmt.Sprintf("SSH never answered: %v", lastErr)
			if pod, err := r.lookPod(ctx); errors.Is(err, runpod.ErrNotFound) {
				return r.gone("", detail)
			} else if err == nil && podEnded(pod.Status) {
				return r.gone(pod.Status, detail)
			}
		}
		if err := r.cfg.clock.Sleep(ctx, pace.step()); err != nil {
			return err
		}
	}
}

// dropConn closes the connection and its watcher.
func (r *Run) dropConn() {
	if r.watch != nil {
		r.watch.Close()
		r.watch = nil
	}
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
}

// liveConn makes sure the run has an open connection.
func (r *Run) liveConn(ctx context.Context) error {
	if r.conn != nil {
		select {
		case <-r.conn.Done():
		default:
			return nil
		}
	}
	if r.addr == "" {
		if err := r.waitRunning(ctx); err != nil {
			return err
		}
	}
	// Nothing read the pod since the connection broke: at the first
	// refused dial.
	return r.dial(ctx, 30*time.Second, 0, lostConnCheck(r.rec.Poll))
}

// reconnect replaces a broken SSH connection, unless the pod is gone.
// enforce, unless nil, runs on every turn and ends the loop with its
// error: a pod the API shows running but SSH cannot reach (a host
// partition) is still held to the rules of the one following it.
func (r *Run) reconnect(ctx context.Context, cause error, enforce func() error) error {
	r.dropConn()
	r.emit(Event{Kind: EventReconnecting, Err: cause})
	wait := r.rec.Poll
	for {
		if enforce != nil {
			if err := enforce(); err != nil {
				return err
			}
		}
		if err := r.waitRunning(ctx); err != nil {
			return err
		}
		// waitRunning has just read the pod.
		err := r.dial(ctx, 30*time.Second, lostConnCheck(r.rec.Poll), lostConnCheck(r.rec.Poll))
		if err == nil {
			r.emit(Event{Kind: EventReconnected})
			return nil
		}
		// The dial's read of the pod showed it ended: so would the next.
		var gone *PodGoneError
		if ctx.Err() != nil || errors.Is(err, podssh.ErrHostKeyMismatch) || errors.As(err, &gone) {
			return err
		}
		if err := r.cfg.clock.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// watcher returns the connection's watcher, made on first use (ctx bounds
// its start, and so does shortCommand: a pod whose sshd never answers the
// session's open must not hold a Collect for ever).
func (r *Run) watcher(ctx context.Context) (watcher, error) {
	if r.watch == nil {
		if r.conn == nil {
			return nil, errors.New("guard: no connection to the pod")
		}
		ctx, cancel := context.WithTimeout(ctx, shortCommand)
		defer cancel()
		w, err := r.conn.Watch(ctx, r.rec.RunDir)
		if err != nil {
			return nil, err
		}
		r.watch = w
	}
	return r.watch, nil
}

// poll is one look at the run over SSH.
func (r *Run) poll(ctx context.Context, touch bool) (jobctl.State, []byte, error) {
	return r.pollAt(ctx, r.rec.LogOffset, touch)
}

// pollAt is poll with the job's output read from offset.
func (r *Run) pollAt(ctx context.Context, offset int64, touch bool) (jobctl.State, []byte, error) {
	w, err := r.watcher(ctx)
	if err != nil {
		return jobctl.State{}, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, shortCommand)
	defer cancel()
	st, b, err := w.Poll(ctx, offset, touch, maxChunk)
	if err != nil {
		w.Close()
		r.watch = nil
		return st, nil, err
	}
	r.last = st
	r.seen = r.now()
	if touch {
		r.emit(Event{Kind: EventLeaseRenewed})
	}
	r.noteDeleteReason(st.DeleteReason)
	r.noteDeleteState(st)
	return st, b, nil
}

// noteDeleteState tells, once a run, that the watchdog's right to delete
// the pod is unproven, and each new delete of the watchdog that no GET
// confirmed: a refused delete would otherwise show on the pod only.
func (r *Run) noteDeleteState(st jobctl.State) {
	if st.Delete.Right == watchdog.UnprovenDeleteRight && !r.rightTold {
		r.rightTold = true
		r.emit(Event{Kind: EventDeleteRight})
	}
	if st.Delete.FailedAt > r.failedSeen {
		r.failedSeen = st.Delete.FailedAt
		r.emit(Event{Kind: EventDeleteFailed, DeleteReason: st.DeleteReason, DeleteCodes: st.Delete.Codes})
	}
}

// noteDeleteReason tells, once, that the pod's watchdog is deleting the pod
// and why, and keeps the reason.
func (r *Run) noteDeleteReason(reason watchdog.DeleteReason) {
	if reason == "" || reason == r.rec.DeleteReason {
		return
	}
	r.rec.DeleteReason = reason
	r.save()
	r.emit(Event{Kind: EventDeleteReason, DeleteReason: reason})
}

// put replaces one of the client's pod files with value, through the
// watcher. A write replaces the file whole, so it is tried up to three
// times: on a fresh watch session, and a new connection, when one broke.
func (r *Run) put(ctx context.Context, name, value string) error {
	var err error
	for try := 0; try < 3 && ctx.Err() == nil; try++ {
		if err = r.putOnce(ctx, name, value); err == nil {
			return nil
		}
		var ce *podssh.CommandError
		if !errors.As(err, &ce) {
			// The connection broke under the write. The pod may be gone
			// (its watchdog takes it at once on a retrieved marker that
			// got there): that ends the tries. Else the connection may
			// be dead before its end shows (a new session then fails
			// "EOF"): the next try dials again, since a missed retrieved
			// marker keeps the pod for its retrieve grace.
			r.dropConn()
			if r.cfg.clock.Sleep(ctx, time.Second) != nil || r.podGone(ctx) {
				break
			}
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	return fmt.Errorf("writing %s on the pod: %w", name, err)
}

func (r *Run) putOnce(ctx context.Context, name, value string) error {
	if err := r.liveConn(ctx); err != nil {
		return err
	}
	w, err := r.watcher(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if err := w.Put(ctx, name, value); err != nil {
		w.Close()
		r.watch = nil
		return err
	}
	return nil
}

// holdLease renews the lease every LeaseEvery through the watch session
// while the client works in other sessions (an upload, a download): the
// client is there, output or not. The returned function stops it.
func (r *Run) holdLease(ctx context.Context) (release func()) {
	w, err := r.watcher(ctx)
	if err != nil {
		return func() {}
	}
	// release stops the loop between looks and lets a look in flight end:
	// cancelling it would break the watcher the caller shares, and the
	// caller's next write (the retrieved marker) would fail with it.
	stop, done := make(chan struct{}), make(chan struct{})
	sctx, cancel := context.WithCancel(ctx)
	offset, every := r.rec.LogOffset, r.rec.LeaseEvery
	go func() {
		defer close(done)
		for {
			if r.cfg.clock.Sleep(sctx, every) != nil {
				return
			}
			select {
			case <-stop:
				return
			default:
			}
			lctx, lcancel := context.WithTimeout(ctx, shortCommand)
			_, _, err := w.Poll(lctx, offset, true, 0)
			lcancel()
			if err != nil {
				return
			}
		}
	}()
	return func() {
		close(stop)
		cancel()
		<-done
	}
}

// runPods sorts a listing by the run's pod name: mine is the pods that
// are the run's, named so and with an id, read whole or not (see
// runpod.Pod.Unreadable); unknown is the first listed pod whose name or
// id could not be read, which may be the run's too, and which nothing
// can be done to: it is neither gone nor a pod to adopt.
func (r *Run) runPods(pods []runpod.Pod) (mine []runpod.Pod, unknown error) {
	for _, p := range pods {
		switch {
		case p.Name == r.rec.PodName && p.ID != "":
			mine = append(mine, p)
		case p.Unreadable != nil && unknown == nil:
			unknown = p.Unreadable
		}
	}
	return mine, unknown
}
