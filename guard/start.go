package guard

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Start uploads the job and starts it in its own process group, unless it
// was started already (nil then). A zero job is the Spec's (or Record's), a
// job with only Secrets takes the rest from there, and a job without secrets
// gets the Spec's or WithSecrets'. A job whose run directory a restart lost
// is not started again (ErrJobLost). Failures, and an ended ctx, end as
// Launch's.
func (r *Run) Start(ctx context.Context, job Job) error {
	if job.Dir == "" && job.Command == "" {
		job.Dir, job.Command, job.ResumeFrom = r.rec.JobDir, r.rec.Command, r.rec.ResumeFrom
	}
	if len(job.Secrets) == 0 {
		// Spec.Job's secrets (or WithSecrets'), which no Record holds.
		job.Secrets = r.cfg.secrets
	}
	if errs := job.check("Job.", r.rec.Results); len(errs) > 0 {
		return errors.Join(errs...)
	}
	if job.ResumeFrom != "" {
		// A link to the directory goes up as the directory it names.
		if dir, err := filepath.EvalSymlinks(job.ResumeFrom); err == nil {
			job.ResumeFrom = dir
		}
	}
	if r.last.Started() {
		return nil
	}
	if !r.rec.JobStarted.IsZero() {
		r.runDirLost = true
		return fmt.Errorf("%w: its run directory %s went with the pod's container", ErrJobLost, r.rec.RunDir)
	}
	r.rec.JobDir, r.rec.Command, r.rec.ResumeFrom = job.Dir, job.Command, job.ResumeFrom
	if s := job.secrets(); len(s) > 0 {
		// For the start on a new pod, should the run recover.
		r.cfg.secrets = s
	}
	if err := r.start(ctx, job); err != nil {
		switch {
		case ctx.Err() == nil:
			r.fail(ctx, err)
		case !r.cfg.detachOnCancel:
			// No job runs yet: left to its watchdog, the pod would bill
			// its boot grace for nothing.
			r.rec.Note = "interrupted before the job started"
			r.teardown(PhaseFailed)
		}
		return err
	}
	return nil
}

func (r *Run) start(ctx context.Context, job Job) error {
	if err := r.liveConn(ctx); err != nil {
		return err
	}
	if r.rec.MaxCostUSD > 0 {
		if err := r.planCost(ctx); err != nil {
			return err
		}
	}
	if err := r.upload(ctx, job); err != nil {
		return err
	}
	secrets := job.secrets()
	red := r.redacting()
	for _, v := range secrets {
		red.addSecret(v)
	}
	in, err := jobctl.JobInput(r.rec.jobDefaults(), secrets)
	if err != nil {
		return fmt.Errorf("the job's environment: %w", err)
	}
	defer r.holdLease(ctx)()
	sctx, cancel := context.WithTimeout(ctx, shortCommand)
	defer cancel()
	out, err := r.conn.Output(sctx, jobctl.StartCommand(r.rec.RunDir, podenv.JobEnv), in)
	var ce *podssh.CommandError
	if errors.As(err, &ce) && ce.Status == jobctl.StartAlreadyStarted {
		r.emit(Event{Kind: EventJobStarted, Already: true, Command: job.Command})
	} else if err != nil {
		return fmt.Errorf("starting the job: %w", err)
	} else {
		pid, _ := strconv.Atoi(jobctl.LastLine(out))
		r.emit(Event{Kind: EventJobStarted, PID: pid, Command: job.Command})
	}
	r.rec.JobStarted = r.now()
	r.rec.Phase = PhaseRunning
	// A recovery is over once the new pod's job runs.
	r.rec.Recovery.Replacing = ""
	r.save()
	return nil
}

// upload sends the job's directory, the outputs it resumes from and its
// command in one tar stream, telling its progress.
func (r *Run) upload(ctx context.Context, job Job) error {
	defer r.holdLease(ctx)()
	command := []byte(job.Command + "\n")
	total := int64(len(command))
	for _, dir := range []string{job.Dir, job.ResumeFrom} {
		if dir != "" {
			_, n, err := podssh.TreeSize(dir)
			if err != nil {
				return fmt.Errorf("uploading the job: %w", err)
			}
			total += n
		}
	}
	err := r.transfer(StageUpload, func(progress podssh.Progress) error {
		c := &podssh.Counter{Total: total, Progress: progress}
		return r.conn.UploadTar(ctx, r.rec.RunDir, func(tw *tar.Writer) error {
			if err := c.AddTree(tw, job.Dir, jobctl.JobDir+"/"); err != nil {
				return err
			}
			if job.ResumeFrom != "" {
				if err := c.AddTree(tw, job.ResumeFrom, jobctl.OutputsDir+"/"); err != nil {
					return err
				}
			}
			return c.AddFile(tw, jobctl.CommandFile, command, 0o644)
		})
	})
	if err != nil {
		return fmt.Errorf("uploading the job: %w", err)
	}
	r.emit(Event{Kind: EventUploaded, Dir: job.Dir, Remote: jobctl.RunFile(r.rec.RunDir, jobctl.JobDir)})
	if job.ResumeFrom != "" {
		r.resumeEvent(job.ResumeFrom)
	}
	return nil
}

// planCost writes .pod/snapshot_at and .pod/cost_cap_at on the pod's clock.
func (r *Run) planCost(ctx context.Context) error {
	if r.rec.CostPerHr <= 0 {
		perHr, err := r.api.PodCostPerHour(ctx, r.rec.PodID)
		if err != nil {
			return fmt.Errorf("reading the pod's price for the cost cap: %w", err)
		}
		r.rec.CostPerHr = perHr
	}
	// A look carries the pod's clock; its round trip bounds the error.
	sent := r.now()
	st, _, err := r.poll(ctx, false)
	received := r.now()
	if err != nil {
		return fmt.Errorf("reading the pod's clock: %w", err)
	}
	offset := costplan.ClockOffset(sent, received, st.PodNow)
	plan, err := costplan.CostCap(r.rec.Rules, r.rec.BillingStart, r.rec.CostPerHr, r.rec.earlierCost(), offset)
	if err != nil {
		return err
	}
	if err := r.put(ctx, watchdog.SnapshotAt, strconv.FormatInt(plan.SnapshotAt, 10)); err != nil {
		return err
	}
	if err := r.put(ctx, watchdog.CostCapAt, strconv.FormatInt(plan.CostCapAt, 10)); err != nil {
		return err
	}
	// The run keeps the plan: its follower acts at the instants the pod
	// was given.
	local := func(podUnix int64) time.Time { return time.Unix(podUnix, 0).Add(-offset) }
	r.rec.SnapshotAt, r.rec.CostCapAt = local(plan.SnapshotAt), local(plan.CostCapAt)
	r.emit(Event{Kind: EventCostPlan, MaxCostUSD: r.rec.MaxCostUSD, LeftUSD: r.rec.MoneyLeft(r.rec.earlierCost()), CostPerHr: r.rec.CostPerHr,
		SnapshotAt: r.rec.SnapshotAt, CostCapAt: r.rec.CostCapAt, ClockOffset: offset})
	r.save()
	return nil
}
