package guard

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// Option configures Launch and Attach.
type Option func(*config)

type config struct {
	events         func(Event)
	log            *slog.Logger
	poll           time.Duration
	leaseEvery     time.Duration
	startTimeout   time.Duration
	verdictTimeout time.Duration
	leave          bool
	detachOnCancel bool
	save           func(Record) error
	podLog         io.Writer
	// pull is Recover.PullEvery's; prior the attempts of a run's earlier
	// pods, for Relaunch.
	pull  *puller
	prior []Attempt
	// worst is the run's worst case, planned before its first pod: a
	// Relaunch keeps it.
	worst *podenv.WorstCase
	// recovery is the run's recovery state, for Relaunch; secrets the
	// job's, for its start on a new pod (WithSecrets, Start).
	recovery RecoveryState
	// keptHost is the run's host key, kept for a recovery on its network
	// volume (Relaunch).
	keptHost keptHost
	// holdSecret keeps the run's host key secret when a pod goes: set
	// while a recovery on a network volume is under way, whose next pod
	// needs it (recover).
	holdSecret bool
	secrets    map[string]string
	// early is where Follow downloads the results so far before a rule
	// that ignores the lease takes the pod (WithEarlyResults).
	early string

	// Test seams: the clock, the SSH side and the catalog's cache; the
	// bound of a delete after its context ended.
	clock    clock
	dial     dialFunc
	stock    *stockCache
	teardown time.Duration
}

func defaultConfig() config {
	return config{
		events:         func(Event) {},
		log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		poll:           2 * time.Second,
		leaseEvery:     5 * time.Minute,
		startTimeout:   20 * time.Minute,
		verdictTimeout: 10 * time.Minute,
		clock:          realClock{},
		dial:           dialSSH,
		stock:          processStock,
		teardown:       teardownTimeout,
	}
}

// WithEvents calls f with each Event, on the goroutine that made it. Given
// more than once, it calls each f, in the order given.
func WithEvents(f func(Event)) Option {
	return func(c *config) {
		if f != nil {
			before := c.events
			c.events = func(e Event) { before(e); f(e) }
		}
	}
}

// WithLogger logs the run's steps at debug level, and its failures.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithPoll sets how often a pod or job is looked at: 2s, or the Record's.
func WithPoll(d time.Duration) Option { return func(c *config) { c.poll = d } }

// WithLeaseEvery sets how often a moving job's lease is renewed (5m); it
// must be shorter than the lease's lifetime.
func WithLeaseEvery(d time.Duration) Option { return func(c *config) { c.leaseEvery = d } }

// WithStartTimeout bounds the wait for the pod to run and answer SSH (20m).
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

// WithVerdictTimeout bounds the wait for the watchdog's verdict (10m).
func WithVerdictTimeout(d time.Duration) Option { return func(c *config) { c.verdictTimeout = d } }

// WithLeaveOnFailure leaves a failed run's armed pod to its watchdog.
func WithLeaveOnFailure() Option { return func(c *config) { c.leave = true } }

// WithDetachOnCancel makes Launch and Start leave the pod to its watchdog
// when ctx ends, instead of deleting it; Launch then returns the Run.
func WithDetachOnCancel() Option { return func(c *config) { c.detachOnCancel = true } }

// WithEarlyResults makes Follow CollectSoFar into dir once a job asked for a
// snapshot nears a delete it can foresee (the cost cap, the deadline plus
// its extension, the stalled rule SnapshotWait after its snapshot was
// asked), so that its checkpoint outlives the pod.
func WithEarlyResults(dir string) Option { return func(c *config) { c.early = dir } }

// WithSave calls f with each new Record, for Attach; its errors are warnings.
func WithSave(f func(Record) error) Option { return func(c *config) { c.save = f } }

// clock is time, for the tests.
type clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (its error).
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
