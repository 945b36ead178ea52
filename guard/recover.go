package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Recovery: a run whose pod was lost under its job goes on on a new pod,
// one pod at a time, from the newest outputs pulled during the run
// (WithPullEvery), within the run's deadline and cost cap across its pods.

// Recoverable says a run that failed with err may go on on a new pod: the
// pod died by no rule (EXITED, ERROR), its bootstrap or verdict failed, or
// the job was lost.
func Recoverable(err error) bool {
	var gone *PodGoneError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrEnforced):
		return false
	case errors.As(err, &gone):
		return gone.DeleteReason == "" && stillBills(gone.Status)
	case errors.Is(err, ErrVerdictFailed), errors.Is(err, ErrJobLost):
		return true
	}
	return false
}

// Recoverable says a new pod may resume the job, lost with its container.
func (e End) Recoverable() bool { return e.How == Lost || e.How == RunDirLost }

// Relaunch makes the next pod of prev's run, whose pod was lost (see
// Recovery): once the lost pod is confirmed gone, deleted if need be, it
// launches as Launch does within the run's deadline and cost cap. spec is
// the run's, with Job.ResumeFrom at the newest pull (PulledOutputs); why
// says how the lost pod ended.
func Relaunch(ctx context.Context, c *runpod.Client, prev Record, spec Spec, why string, opts ...Option) (*Run, error) {
	if c == nil {
		return nil, &FieldError{Field: "api", Reason: "is nil"}
	}
	return relaunch(ctx, c, prev, spec, why, opts...)
}

func relaunch(ctx context.Context, c api, prev Record, spec Spec, why string, opts ...Option) (*Run, error) {
	if err := prev.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecordMismatch, err)
	}
	if prev.APIURL != "" && prev.APIURL != c.BaseURL() {
		return nil, fmt.Errorf("%w: run %s was created at %s, not %s", ErrRecordMismatch, prev.ID, prev.APIURL, c.BaseURL())
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	old := &Run{api: c, cfg: cfg, rec: prev}
	if err := old.goneForGood(ctx); err != nil {
		return nil, fmt.Errorf("recovering run %s: no new pod is made while the last one may still exist: %w", prev.ID, err)
	}
	var kept keptHost
	if prev.NetworkVolumeID != "" {
		// The run directory on the volume is claimed by the run's host
		// key: the new pod gets the same, from the secret still there.
		sec, err := c.FindSecret(ctx, prev.SecretName)
		if err != nil {
			return nil, fmt.Errorf("recovering run %s on network volume %s: its host key secret %s: %w (a new pod could not claim its run directory)",
				prev.ID, prev.NetworkVolumeID, prev.SecretName, err)
		}
		kept = keptHost{claim: prev.HostKey, secretID: sec.ID}
		// The outputs there are the job's newest: an upload of a pull
		// would go over them.
		spec.Job.ResumeFrom = ""
	} else {
		// The lost pod's secret, when its delete failed: the new pod gets
		// a new host key under the same name.
		old.deleteSecret(ctx)
	}
	ended := old.now()
	if !prev.Ended.IsZero() {
		ended = prev.Ended
	}
	attempts := slices.Clone(prev.Attempts)
	for i := range attempts {
		if a := &attempts[i]; a.PodID == prev.PodID && a.PodID != "" && a.Ended == "" {
			a.Ended = why
			if a.Ended == "" {
				a.Ended = "lost"
			}
			a.CostUSD = costplan.Spent(prev.CostPerHr, prev.BillingStart, ended)
		}
	}
	// The run's deadline and cap hold across its pods.
	spec.RunID, spec.Deadline, spec.MaxCostUSD, spec.Keep = prev.ID, prev.Deadline, prev.MaxCostUSD, prev.Keep
	spec.KeepIdle, spec.KeepUnbounded = prev.KeepIdle, prev.KeepUnbounded
	spec.DeadlineFromCreate = false
	recovery := prev.Recovery
	return launch(ctx, c, spec, append(opts, func(c *config) { c.prior, c.recovery, c.keptHost = attempts, recovery, kept })...)
}

// keptHost is the run's host key, public half and secret, that the next
// pod of a run on a network volume gets.
type keptHost struct{ claim, secretID string }

// goneForGood makes sure no pod of the run is left: the Record's, and
// any under the run's name (a create whose answer was lost), each deleted
// and confirmed gone.
func (r *Run) goneForGood(ctx context.Context) error {
	if r.rec.PodID != "" && r.stillListed(ctx) != "" {
		if _, err := r.deletePod(ctx); err != nil {
			return err
		}
	}
	pods, err := r.api.ListPods(ctx, runpod.ListPodsOptions{Name: r.rec.PodName})
	if err != nil {
		return fmt.Errorf("listing the run's pods: %w", err)
	}
	for _, p := range pods {
		if p.Status == runpod.StatusTerminated {
			continue
		}
		r.rec.PodID = p.ID
		if _, err := r.deletePod(ctx); err != nil {
			return err
		}
	}
	return nil
}

// WithPullEvery makes Follow Pull into dir every d while the job runs; a
// failed pull is a warning, and the last one is kept.
func WithPullEvery(d time.Duration, dir string) Option {
	return func(c *config) {
		if d > 0 && dir != "" {
			c.pull = &puller{every: d, dir: dir}
		}
	}
}

// puller is WithPullEvery's state.
type puller struct {
	every time.Duration
	dir   string
	last  time.Time
}

// pullName is the newest whole pull under WithPullEvery's dir.
const pullName = "latest"

// PulledOutputs is the outputs of the newest pull into dir, "" if none.
func PulledOutputs(dir string) string {
	// A process killed inside swapDir left the last whole pull aside.
	for _, name := range []string{pullName, pullName + ".old"} {
		out := filepath.Join(dir, name, jobctl.OutputsDir)
		if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
			return out
		}
	}
	return ""
}

// pullIfDue makes WithPullEvery's pull when it is due.
func (r *Run) pullIfDue(ctx context.Context, st jobctl.State) {
	p := r.cfg.pull
	if p == nil || !st.Started() || st.Ended() {
		return
	}
	if p.last.IsZero() {
		// The first pull comes a period after the follow began: the job
		// has nothing to keep before.
		p.last = r.now()
		return
	}
	if r.since(p.last) < p.every {
		return
	}
	p.last = r.now()
	if _, err := r.Pull(ctx, p.dir); err != nil && ctx.Err() == nil {
		r.warn(fmt.Errorf("pulling the outputs so far (the last pull is kept): %w", err))
	}
}

// Pull downloads the results so far into dir, as Download does, replacing
// the last pull only once complete. Pull before relaunching a failed job.
func (r *Run) Pull(ctx context.Context, dir string) (Collected, error) {
	tmp := filepath.Join(dir, ".pull")
	_ = os.RemoveAll(tmp)
	got, err := r.fetch(ctx, tmp, false)
	if err == nil {
		err = swapDir(tmp, filepath.Join(dir, pullName))
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return Collected{}, err
	}
	got.Dir = filepath.Join(dir, pullName)
	r.emit(Event{Kind: EventPulled, Dir: got.Dir, Files: got.Files, Bytes: got.Bytes})
	return got, nil
}

// swapDir replaces dir with tmp, never leaving no whole copy behind:
// the old one is moved aside first and removed last.
func swapDir(tmp, dir string) error {
	old := dir + ".old"
	_ = os.RemoveAll(old)
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.Rename(old, dir)
		return err
	}
	return os.RemoveAll(old)
}
