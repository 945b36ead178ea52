package launcher

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/overbrainer/overbrainer-go/guard"
)

// recoverOpts are run's --recover and --pull-every: how a run goes on
// on a new pod when its pod is lost under the job.
type recoverOpts struct {
	// spec is the run's, for the next pod; nil (an attach) recovers
	// nothing.
	spec  *guard.Spec
	times int
	// onError recovers a job that exited non-zero by itself too.
	onError bool
}

// pullDir is where --pull-every keeps the outputs pulled during run id.
func (a *app) pullDir(id string) string { return filepath.Join(a.store.RunPath(id), "pulls") }

// mayRecover says the run may go on on a new pod after err.
func (d *driver) mayRecover(ctx context.Context, err error) bool {
	return d.o.recovery.spec != nil && d.recovered < d.o.recovery.times && ctx.Err() == nil && guard.Recoverable(err)
}

// mayRecoverEnd says the run may go on on a new pod after the job ended
// so: lost with its pod's container, or, with --recover-on-error, failed
// by itself.
func (d *driver) mayRecoverEnd(ctx context.Context, end guard.End) bool {
	if end.How == guard.Exited && end.ExitCode != 0 && d.o.recovery.onError {
		return d.o.recovery.spec != nil && d.recovered < d.o.recovery.times && ctx.Err() == nil
	}
	return end.Recoverable() && d.mayRecover(ctx, end.Err())
}

// recover makes the run's next pod, once its lost one is confirmed gone,
// and takes the job up there from the newest pulled outputs; a new pod
// whose bootstrap or verdict fails counts as one more recovery.
func (d *driver) recover(ctx context.Context, why error) error {
	a := d.a
	for {
		d.recovered++
		spec := *d.o.recovery.spec
		if out := guard.PulledOutputs(a.pullDir(d.r.ID)); out != "" {
			spec.Job.ResumeFrom = out
		}
		from := "from its beginning (no outputs were pulled: see --pull-every)"
		if spec.Job.ResumeFrom != "" {
			from = "from " + resumeText(spec.Job.ResumeFrom)
		}
		a.say("recovering (%d of %d): %v; a new pod takes the job up %s", d.recovered, d.o.recovery.times, why, from)
		d.failed, d.costShown = nil, false
		d.closePodLog()
		run, err := guard.Relaunch(ctx, a.api, d.r.Record, spec, why.Error(), d.options()...)
		d.run = run
		if err != nil {
			if d.mayRecover(ctx, err) {
				why = err
				continue
			}
			return d.stopped(ctx, err)
		}
		return d.steps(ctx, false)
	}
}

// resumeText says what a job resumes from: the step its snapshot.json
// proves, when the outputs hold one.
func resumeText(dir string) string {
	p, err := guard.ReadSnapshotProof(dir)
	switch {
	case err == nil:
		return p.String() + " in the outputs " + dir
	case errors.Is(err, guard.ErrNoSnapshotProof):
		return "the outputs in " + dir + " (no snapshot.json says which step)"
	}
	return "the outputs in " + dir + " (" + err.Error() + ")"
}
