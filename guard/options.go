package guard

import (
	"context"
	"io"
	"log/slog"
	"time"
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
	force          bool
	save           func(Record) error
	podLog         io.Writer
	// pull is WithPullEvery's; prior the attempts of a run's earlier
	// pods, for Relaunch.
	pull  *puller
	prior []Attempt
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

	// Test seams: the clock, the SSH side and the catalog's cache.
	clock clock
	dial  dialFunc
	stock *stockCache
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
	}
}

// WithEvents calls f with every Event of the run, on the goroutine of the
// method that made it. f may call the Run's Record.
func WithEvents(f func(Event)) Option {
	return func(c *config) {
		if f != nil {
			c.events = f
		}
	}
}

// WithLogger logs what the run does at debug level, and its failures; by
// default nothing is logged. The package never prints.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithPoll sets how often a pod coming up and a followed job are looked
// at (2s by default). Attach takes the Record's when this is not given.
func WithPoll(d time.Duration) Option { return func(c *config) { c.poll = d } }

// WithLeaseEvery sets how often the lease is renewed while the job
// moves (its progress once it reports some, else its output; 5m by
// default); it must be shorter than the lease's lifetime.
func WithLeaseEvery(d time.Duration) Option { return func(c *config) { c.leaseEvery = d } }

// WithStartTimeout bounds the wait for the pod to run and answer SSH (20m).
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

// WithVerdictTimeout bounds the wait for the watchdog's verdict (10m).
func WithVerdictTimeout(d time.Duration) Option { return func(c *config) { c.verdictTimeout = d } }

// WithLeaveOnFailure leaves the pod to its watchdog, instead of deleting
// it, when the run cannot go on once the verdict was ready (its rules are
// armed). A pod whose verdict is not ready is deleted whatever this says.
func WithLeaveOnFailure() Option { return func(c *config) { c.leave = true } }

// WithDetachOnCancel makes Launch and Start leave the pod to its watchdog
// when ctx ends, Launch returning the Run with ctx's error, instead of
// deleting the pod. Without it a pod whose job was not started yet is
// deleted; a Follow leaves the pod whatever this says.
func WithDetachOnCancel() Option { return func(c *config) { c.detachOnCancel = true } }

// WithEarlyResults makes Follow download the results so far into dir
// (as Download does) once the job was asked for a snapshot and still runs
// close to the cost cap or to the deadline plus its extension, which take
// the pod whatever the lease: what the job checkpointed for the request
// outlives the pod even when the job does not stop in time. Use the
// directory Collect is given: Collect later replaces what it holds.
func WithEarlyResults(dir string) Option { return func(c *config) { c.early = dir } }

// WithForce makes Remove delete a run's pod even when its job was started
// and its results were not collected: they are lost with it.
func WithForce() Option { return func(c *config) { c.force = true } }

// WithSave calls f with the run's Record each time it changes, so that a
// process killed at any moment leaves a Record to Attach from. An error
// from f is reported as an EventWarning, never ends the run.
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
