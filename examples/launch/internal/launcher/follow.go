package launcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// followOpts says how to follow a run.
type followOpts struct {
	followFlags
	// secrets are the job's, for a Start.
	secrets map[string]string
	// stop asks the job for a checkpoint (snapshot.request "stop") before
	// following it, and gives up waiting after stopWait.
	stop     bool
	stopWait time.Duration
	// poll and leaseEvery are run's; attach follows as its run did.
	poll, leaseEvery time.Duration
	// budget is run's --budget, checked again once the pod exists.
	budget float64
}

// driver is one launcher command over a guarded run: it says what the run
// does and turns its end into an exit status.
type driver struct {
	a   *app
	r   *state.Run
	o   followOpts
	run *guard.Run
	// live is the last progress line shown off a terminal; plainKey and
	// plainAt the stage and the time of the last plain progress line.
	live     string
	plainKey string
	plainAt  time.Duration
	// failed is the failure guard reported, once it did.
	failed    error
	costShown bool
	podLog    *cappedLog
	// asked is the last snapshot request the job was seen given, and
	// early says the results so far were downloaded while the job ran
	// (before a rule that ignores the lease took the pod).
	asked watchdog.SnapshotReason
	early bool
}

// options are the guard options of the driver's run.
func (d *driver) options() []guard.Option {
	opts := []guard.Option{
		guard.WithEvents(d.event),
		guard.WithSave(func(rec guard.Record) error {
			d.r.Record = rec
			return d.a.store.Save(d.r)
		}),
		guard.WithLogger(d.a.logger),
		guard.WithStartTimeout(d.o.startTimeout),
		guard.WithVerdictTimeout(d.o.verdictTimeout),
		guard.WithEarlyResults(d.r.OutDir),
	}
	if l := d.openPodLog(); l != nil {
		opts = append(opts, guard.WithPodLog(l))
	}
	if d.o.poll > 0 {
		opts = append(opts, guard.WithPoll(d.o.poll), guard.WithLeaseEvery(d.o.leaseEvery))
	}
	if len(d.o.secrets) > 0 {
		// For the job's start on a new pod, should the run recover.
		opts = append(opts, guard.WithSecrets(d.o.secrets))
	}
	if d.o.onFailure == "leave" {
		opts = append(opts, guard.WithLeaveOnFailure())
	}
	if d.o.detach && !d.o.downOnInterrupt && !d.a.inProcess() {
		opts = append(opts, guard.WithDetachOnCancel())
	}
	return opts
}

// event says what guard reports, in the launcher's words.
func (d *driver) event(e guard.Event) {
	a := d.a
	// A kept pod bills until rm: said after the job-started line.
	if e.Kind == guard.EventJobStarted && d.r.Keep {
		cfg, _ := d.run.WriteSSHConfig(context.Background(), d.a.store.RunPath(d.r.ID))
		defer a.say("warning: pod %s is kept (--keep-pod): %s; reach it with \"launch ssh %s\" or %s", d.r.PodID, d.keptUntil(), d.r.ID, cfg.Command)
	}
	switch e.Kind {
	case guard.EventWaiting, guard.EventTransfer:
		d.progress(e)
	case guard.EventOutput, guard.EventLeaseRenewed, guard.EventJobEnded, guard.EventLeft:
		// Said by the driver, which knows more.
	case guard.EventDeleteFailed:
		a.say("warning: %s", eventText(e))
	case guard.EventCostPlan:
		a.say("%s", eventText(e))
		if lead := snapshotLead(d.r.Record); !e.SnapshotAt.After(time.Now()) || e.CostCapAt.Sub(e.SnapshotAt) < lead {
			a.say("warning: the cost cap of %s leaves the job until %s, less than the snapshot lead (%s): it is asked for its snapshot as soon as it starts, and the pod goes at the cap whether or not it stopped",
				money(e.MaxCostUSD), e.CostCapAt.Local().Format(time.TimeOnly), since(lead))
		}
	case guard.EventSnapshotRequested:
		d.asked = e.Snapshot
		if e.Snapshot != watchdog.ReasonStop || !d.o.stop {
			a.say("%s", eventText(e))
		}
	case guard.EventStalled:
		last := "it reported no progress"
		if e.ProgressLine != "" {
			last = "its last progress: " + termtext.Escape(e.ProgressLine, false)
		}
		if d.r.StallAfter == 0 {
			a.say("warning: no progress for %s: no new output, and no file changed under its outputs nor CPU used as far as its watchdog saw (%s); the stall rule is off, so nothing is deleted for it (--stall-after D would delete a job stuck that long)",
				since(e.Elapsed), last)
			break
		}
		then := "it is asked for its snapshot"
		if d.r.MinGPUUtil > 0 {
			then = "its watchdog asks for its snapshot unless the GPU is busy (--min-gpu-util)"
		}
		a.say("warning: the job has not moved for %s (--stall-after %s; %s): this launcher no longer renews the lease, %s, and the pod is deleted if it still does not move within --snapshot-wait",
			since(e.Elapsed), since(d.r.StallAfter), last, then)
	case guard.EventCollected:
		d.early = !d.run.PodGone() && !d.run.State().Ended()
		a.say("%s", eventText(e))
		a.listOutputs(filepath.Join(e.Dir, guard.OutputsDir))
		if len(e.Skipped) > 0 {
			a.say("skipped (links and special files): %s", strings.Join(e.Skipped, ", "))
		}
	case guard.EventFailed:
		d.failed = e.Err
		d.sayFailure(e)
	case guard.EventRecovering:
		// The run goes on: what was said of the lost pod's end is past.
		d.failed, d.costShown, d.early, d.asked, d.r.DueWhenGone = nil, false, false, "", nil
		a.say("%s", eventText(e))
	case guard.EventDeleted:
		a.sayDeleted(e, d.r.ID)
	case guard.EventSecretDeleted:
		a.saySecret(e, d.r.ID)
	default:
		a.say("%s", eventText(e))
	}
}

// sayFailure says why the run cannot go on, and what becomes of its pod.
func (d *driver) sayFailure(e guard.Event) {
	a := d.a
	var gone *guard.PodGoneError
	var verdict *guard.VerdictError
	var collect *guard.CollectError
	switch {
	case errors.As(e.Err, &gone) && d.early:
		a.say("%s: the results downloaded while the job ran (in %s) are all there is", d.goneText(gone), d.r.OutDir)
	case errors.As(e.Err, &gone):
		a.say("%s: the job's results were not collected", d.goneText(gone))
		switch {
		case gone.PodLog != "":
			// It died: the last lines of its log say why.
			for l := range strings.SplitSeq(gone.PodLog, "\n") {
				a.say("pod log: %s", termtext.Escape(watchdog.Readable(l), false))
			}
		case d.r.Verdict == "":
			// It died before its SSH answered: its log says why.
			for _, l := range a.lastLines(d.r.ID, 10) {
				a.say("pod log: %s", podLine(l))
			}
		}
	case errors.As(e.Err, &verdict):
		a.say("error: %v: %s", verdict, verdictText(verdict.Verdict))
	case errors.As(e.Err, &collect) && e.Then == guard.ThenDelete:
		a.say("error: %v", e.Err)
		a.say("pod %s is gone: its results were not collected", e.PodID)
	case errors.As(e.Err, &collect):
		a.say("error: %v", e.Err)
		a.say("pod %s is left to its watchdog, which deletes it %s after the job ended if nobody collects the results: retry with \"launch attach %s\" (--max-results-gb for a larger cap) before that",
			e.PodID, d.retrieveGrace(), d.r.ID)
	case e.Then == guard.ThenLeave:
		a.say("error: %v", e.Err)
		a.say("pod %s is left to its watchdog (--on-failure leave): %s", e.PodID, d.guarantees())
	default:
		a.say("error: %v", e.Err)
		if e.PodID != "" {
			a.say("deleting pod %s", e.PodID)
		}
	}
}

// goneText is a gone pod in words, with its watchdog's reason explained:
// the one seen, else the one the run directory's copy here names, else
// the rules whose time had come (saved with the run, for ls).
func (d *driver) goneText(g *guard.PodGoneError) string {
	bare := *g
	bare.PodLog = "" // said line by line after
	s := bare.Error()
	if rule := g.Rule(); rule != "" {
		return s + ": " + rule.Explain()
	}
	if g.Status != "" && g.Status != runpod.StatusTerminated {
		// EXITED or ERROR: it died, no rule deleted it.
		return s
	}
	end := endOf(d.r, time.Now())
	if end.rule == "" && len(end.due) > 0 {
		d.r.DueWhenGone = end.due
	}
	if t := end.text(); t != "" {
		s += "; " + t
	}
	return s
}

// sayDeleted says plainly how far a pod's delete got.
func (a *app) sayDeleted(e guard.Event, runID string) {
	switch e.Result {
	case runpod.Deleted, runpod.Terminated:
		a.say("%s", eventText(e))
	case runpod.Stopped:
		a.say("pod %s could only be STOPPED, not deleted: it no longer runs, but its volume STILL BILLS. "+
			"Remove it with \"launch rm %s\" or in the Runpod console (Pods, then Terminate). %v", e.PodID, runID, e.Err)
	default:
		a.say("pod %s could NOT be deleted: %v. It still bills until its watchdog deletes it; retry with \"launch rm %s\"", e.PodID, e.Err, runID)
	}
}

func (a *app) saySecret(e guard.Event, runID string) {
	if e.Err != nil {
		a.say("could not delete secret %s: %v; retry with \"launch rm %s\"", e.SecretName, e.Err, runID)
		return
	}
	a.say("%s", eventText(e))
}

// launch creates the run's pod and drives it to its end.
func (a *app) launch(ctx context.Context, r *state.Run, spec guard.Spec, o followOpts) error {
	d := &driver{a: a, r: r, o: o}
	defer d.closePodLog()
	run, err := guard.Launch(ctx, a.api, spec, d.options()...)
	d.run = run
	if err != nil && r.Phase == state.PhaseCreating {
		// It failed before guard saved anything (a bad Spec, no GPU
		// type to try): the run is over, not creating for ever.
		r.Phase, r.Note = state.PhaseFailed, err.Error()
		d.save()
	}
	if err != nil {
		return d.stopped(ctx, err)
	}
	if o.budget > 0 {
		if err := d.recheckBudget(ctx); err != nil {
			return err
		}
	}
	return d.steps(ctx, false)
}

// recheckBudget deletes the run's new pod when, with the pods made before
// it, it takes the account past --budget: another launcher passed the
// same check at the same time. A reading that fails leaves the pod.
func (d *driver) recheckBudget(ctx context.Context) error {
	a, rec := d.a, d.run.Record()
	over, sum, held, err := a.overBudget(ctx, d.o.budget, rec.PodID)
	if err != nil {
		a.say("budget: could not check it again now that the pod exists: %v (the pod stays)", err)
		return nil
	}
	if !over {
		return nil
	}
	a.say("budget: another launch took the account past --budget %s at the same time (%s committed with this run, held before it by %s): deleting this run's pod %s, the newer",
		money(d.o.budget), money(sum), held, rec.PodID)
	d.r.Note = "over --budget: its pod was the newer of two launches racing for it"
	if _, err := d.run.Delete(ctx); err != nil {
		return d.stopped(ctx, err)
	}
	d.run.Close()
	return &exitError{code: ExitUsage, msg: fmt.Sprintf("budget: run %s refused after its create: its pod %s is deleted (confirmed); nothing of it runs", rec.ID, rec.PodID)}
}

// attach takes a run up again from its state and drives it to its end.
func (a *app) attach(ctx context.Context, r *state.Run, o followOpts) error {
	d := &driver{a: a, r: r, o: o}
	defer d.closePodLog()
	run, err := guard.Attach(ctx, a.api, r.Record, d.options()...)
	d.run = run
	if err != nil {
		return d.stopped(ctx, err)
	}
	return d.steps(ctx, true)
}

func (d *driver) steps(ctx context.Context, attached bool) error {
	a, run := d.a, d.run
	defer run.Close()
	st := run.State()
	switch {
	case !st.Started() && !d.r.JobStarted.IsZero():
		// Starting it now would run the job again from its beginning,
		// its earlier output and checkpoints gone.
		a.say("%s", endText(guard.End{How: guard.HowRunDirLost, RunDir: d.r.RunDir}))
		return d.end(ctx, guard.End{How: guard.HowRunDirLost, ExitCode: -1})
	case !st.Started() && d.o.stop:
		a.say("the job never started: nothing to checkpoint")
		return d.end(ctx, guard.End{How: guard.HowNeverStarted, ExitCode: -1})
	case !st.Started():
		d.sayNearDeadline()
		if err := run.Start(ctx, guard.Job{Dir: d.r.JobDir, Command: d.r.Command, Secrets: d.o.secrets, ResumeFrom: d.r.ResumeFrom}); err != nil {
			return d.stopped(ctx, err)
		}
	case attached && st.Lost():
		a.say("job lost: the pod's container restarted before the job wrote its exit code: reading the rest of its output from byte %d", d.r.LogOffset)
	case attached && st.Ended():
		a.say("the job has ended: reading the rest of its output from byte %d", d.r.LogOffset)
	case attached:
		a.say("the job is already running (process group %d): following its output from byte %d", st.PID, d.r.LogOffset)
	}
	if d.o.stop && !st.Ended() {
		if err := d.requestStop(ctx); err != nil {
			return d.stopped(ctx, err)
		}
	}
	fctx, cancel := ctx, context.CancelFunc(func() {})
	if d.o.stop && d.o.stopWait > 0 {
		fctx, cancel = context.WithTimeout(ctx, d.o.stopWait)
	}
	end, err := run.Follow(fctx, jobOutput{a})
	cancel()
	switch {
	case err != nil && ctx.Err() == nil && fctx.Err() != nil:
		// No proof of a checkpoint came within the wait: the job is
		// stopped without one, and what it left is collected.
		if _, err := run.Cancel(ctx); err != nil {
			a.say("cancelling the job: %v", err)
		}
		end = run.End()
		a.say("the job gave no proof of a checkpoint (snapshot.json) within %s of the stop request: it was cancelled (%s); collecting what there is", d.o.stopWait, endText(end))
	case err != nil:
		return d.stopped(ctx, err)
	default:
		a.say("%s", endText(end))
		d.sayEndedBy(end)
		d.sayCheckpointed(end)
	}
	return d.end(ctx, end)
}

// sayNearDeadline warns, before the job starts, of a deadline nearer than
// the snapshot lead: the job is asked for its snapshot at once.
func (d *driver) sayNearDeadline() {
	lead := snapshotLead(d.r.Record)
	if d.r.Deadline.IsZero() || d.r.Keep || time.Until(d.r.Deadline) >= lead {
		return
	}
	d.a.say("warning: the deadline %s is less than the snapshot lead (%s) away: the job is asked for its snapshot as soon as it starts and no launcher follows it",
		d.r.Deadline.Local().Format(time.TimeOnly), since(lead))
}

// snapshotLead is the run's snapshot lead as its watchdog has it.
func snapshotLead(rec guard.Record) time.Duration {
	return cmp.Or(rec.SnapshotLead, podenv.DefaultSnapshotLead)
}

// sayCheckpointed says whether a job given a snapshot request proved
// the checkpoint it made for it.
func (d *driver) sayCheckpointed(end guard.End) {
	switch {
	case end.Requested == "":
	case end.Checkpointed():
		d.a.say("the job checkpointed on request (%s): %s", end.Requested, proofText(*end.Proof))
	case end.Proof != nil:
		d.a.say("the job ended after the %s request without proof of a checkpoint for it: its last snapshot.json is of %s", end.Requested, proofText(*end.Proof))
	default:
		d.a.say("the job ended after the %s request without proof of a checkpoint (no snapshot.json)", end.Requested)
	}
}

// sayEndedBy names the rule that ended a job which stopped at the
// watchdog's snapshot request (the cost cap, the deadline, a full disk).
func (d *driver) sayEndedBy(end guard.End) {
	if end.How != guard.HowExited {
		return
	}
	switch d.asked {
	case watchdog.ReasonCost:
		d.a.say("the cost cap of %s ended the run: the job was asked for its snapshot and stopped; collecting what it checkpointed", money(d.r.MaxCostUSD))
	case watchdog.ReasonDeadline:
		d.a.say("the deadline ended the run: the job was asked for its snapshot and stopped; collecting what it checkpointed")
	case watchdog.ReasonDisk:
		d.a.say("a full disk ended the run: the job was asked for its snapshot and stopped; collecting what it checkpointed")
	case watchdog.ReasonStall:
		d.a.say("a stall ended the run (--stall-after): the job was asked for its snapshot and stopped; collecting what it checkpointed")
	}
}

// end collects the results of a job that ended, deletes the pod (unless
// kept) and turns the job's end into the exit status.
func (d *driver) end(ctx context.Context, end guard.End) error {
	a, run := d.a, d.run
	if run.State().Started() {
		// Collect's event says what was downloaded, before the retrieved
		// marker lets the watchdog race the delete below.
		if _, err := run.Collect(ctx, d.r.OutDir); err != nil {
			return d.stopped(ctx, err)
		}
	}
	if d.r.Keep {
		d.r.Phase, d.r.Note = state.PhaseDone, "pod kept (--keep-pod)"
		d.save()
		a.say("pod %s is kept (--keep-pod): %s", d.r.PodID, d.keptUntil())
		return jobResult(end)
	}
	if res, _ := run.Delete(ctx); res != runpod.Stopped {
		d.r.Phase = state.PhaseDone
		d.save()
	}
	d.printCost()
	return jobResult(end)
}

func (d *driver) save() {
	if err := d.a.store.Save(d.r); err != nil {
		d.a.say("saving the run's state: %v", err)
	}
}

// requestStop asks the job for a checkpoint, unless a request is there.
func (d *driver) requestStop(ctx context.Context) error {
	already, err := d.run.Snapshot(ctx)
	if err != nil {
		return err
	}
	if already != "" {
		d.a.say("a snapshot was already requested (%s): waiting for the job", already)
		return nil
	}
	d.a.say("snapshot requested (stop): waiting for the job's checkpoint")
	return nil
}

// listOutputs names the first downloaded outputs.
func (a *app) listOutputs(dir string) {
	const most = 10
	var names []string
	n := 0
	_ = filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return nil
		}
		n++
		if len(names) < most {
			names = append(names, p)
		}
		return nil
	})
	for _, p := range names {
		a.say("  output: %s", p)
	}
	if n > most {
		a.say("  ... and %d more in %s", n-most, dir)
	}
}

// jobResult is the run's result from the job's end.
func jobResult(end guard.End) error {
	if err := end.Err(); err != nil {
		return &exitError{code: ExitFailed, msg: err.Error()}
	}
	return nil
}

// printCost says what the run cost and how that was computed, once.
func (d *driver) printCost() {
	r := d.r
	if d.costShown || r.Ended.IsZero() {
		return
	}
	d.costShown = true
	where := "Runpod's"
	if r.Local {
		where = "the local emulator's"
	}
	// After a recovery the total holds the lost pods' cost too: each part
	// is said, so that the arithmetic shown adds up.
	this, lost := costplan.Spent(r.CostPerHr, r.BillingStart, r.Ended), 0
	for _, at := range r.Attempts {
		if at.CostUSD > 0 {
			lost++
		}
	}
	if lost > 0 {
		d.a.say("cost: ~%s (this pod ~%s: %s/h x %s from its create call to its delete; the %s before it ~%s; an estimate from %s price, the bill is authoritative)",
			money(r.CostUSD), money(this), money(r.CostPerHr), since(r.Ended.Sub(r.BillingStart)),
			termtext.Count(int64(lost), "lost pod", "lost pods"), money(r.CostUSD-this), where)
	} else {
		d.a.say("cost: ~%s (%s/h x %s from the create call to the delete; an estimate from %s price, the bill is authoritative)",
			money(r.CostUSD), money(r.CostPerHr), since(r.Ended.Sub(r.BillingStart)), where)
	}
	switch b := r.Bill; {
	case b == nil || len(b.Pods) == 0:
		d.a.say("billed: not yet known (Runpod bills later than a pod runs); \"launch ls\" reads it")
	case len(b.Missing) > 0:
		d.a.say("billed: %s so far by %s billing, which has not billed all of the run yet; \"launch ls\" reads it again", money(b.USD), where)
	default:
		d.a.say("billed: %s by %s billing so far (it may still grow for a while; \"launch ls\" reads it again)", money(b.USD), where)
	}
}

// stopped ends a command whose run stopped on err: guard has already
// deleted the pod or left it to its watchdog, as its failure said; a done
// ctx detaches, or downs the run when asked or when the pod would die with
// this process anyway.
func (d *driver) stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return d.interrupted()
	}
	if d.failed == nil {
		// Nothing was created, or guard had nothing to clean up.
		return err
	}
	d.printCost()
	return &exitError{code: ExitFailed}
}

// interrupted ends a run on Ctrl-C: down when no job runs yet (unless
// --detach), when asked, or when the pod would die with this process
// anyway; else detach.
func (d *driver) interrupted() error {
	a, run := d.a, d.run
	if run == nil || run.PodGone() {
		// guard deleted the pod: its job had not started.
		d.printCost()
		return &exitError{code: ExitInterrupted}
	}
	// An attach cut short before the job started: nothing to detach for.
	started := run.State().Started() || !d.r.JobStarted.IsZero()
	if d.o.downOnInterrupt || a.inProcess() || (!started && !d.o.detach) {
		if a.inProcess() && !d.o.downOnInterrupt {
			a.say("the in-process local emulator ends with this launcher: collecting what there is and deleting the pod (run \"launch local-server\" to be able to detach)")
		}
		if run.State().Started() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if _, err := run.CollectSoFar(ctx, d.r.OutDir); err != nil {
				a.say("downloading the results: %v", err)
			}
			cancel()
		}
		_, _ = run.Delete(context.Background())
		d.r.Phase, d.r.Note = state.PhaseFailed, "interrupted"
		d.save()
		d.printCost()
		return &exitError{code: ExitInterrupted}
	}
	run.Detach()
	a.say("detached from pod %s: it goes on under its watchdog. %s", d.r.PodID, d.guarantees())
	a.say("resume with: launch attach %s   (or: launch stop %s; launch rm %s --force loses its results)", d.r.ID, d.r.ID, d.r.ID)
	a.say("its output meanwhile: launch logs %s --follow", d.r.ID)
	return &exitError{code: ExitInterrupted}
}

// hoursPerMonth is an average month's hours (365.25 × 24 / 12), for the
// price of a pod nothing deletes.
const hoursPerMonth = 730.5

// keptUntil says what ends a kept pod and what it bills until then: its
// idle bound, or, kept unbounded, nothing but rm, with its monthly price.
func (d *driver) keptUntil() string {
	if d.r.KeepUnbounded {
		return fmt.Sprintf("nothing deletes it (--keep-idle 0), it bills ~%s/h, ~%s a month, until \"launch rm %s\"",
			money(d.r.CostPerHr), money(d.r.CostPerHr*hoursPerMonth), d.r.ID)
	}
	verb, storage := "deletes it", ""
	if gb := d.r.PodVolumeGB; gb > 0 {
		verb, storage = "stops it (not deletes it)", ": "+storageText(gb)
	}
	return fmt.Sprintf("once its job ended, its watchdog %s after %s with no SSH session open (any user), no process of anyone's using CPU, no GPU busy (--min-gpu-util) and no launcher following (--keep-idle)%s; it bills ~%s/h until then or until \"launch rm %s\"",
		verb, since(d.r.EffectiveRules().KeepIdle), storage, money(d.r.CostPerHr), d.r.ID)
}

// storageText says what a stopped pod's pod volume of gb GB keeps and
// costs a month, an estimate from Runpod's documented price.
func storageText(gb int) string {
	return fmt.Sprintf("its %d GB pod volume stays, with its data, until \"launch rm\", billed as storage at ~%s a month (an estimate at Runpod's $%.2f/GB)",
		gb, money(storageMonthly(gb)), runpod.StoppedVolumeUSDPerGBMonth)
}

// storageMonthly is what a stopped pod's pod volume of gb GB costs a month.
func storageMonthly(gb int) float64 { return float64(gb) * runpod.StoppedVolumeUSDPerGBMonth }

// guarantees says what the watchdog will do with a pod left to it: every
// rule that may end the pod (guard's Record.Dues), with its time.
func (d *driver) guarantees() string {
	rec := d.r.Record
	started := !rec.JobStarted.IsZero() || d.run != nil && d.run.State().Started()
	if started && rec.JobStarted.IsZero() {
		rec.JobStarted = time.Now()
	}
	eff := rec.EffectiveRules()
	var parts []string
	if started && rec.Keep {
		parts = append(parts, "the pod is kept (--keep-pod): "+d.keptUntil())
	}
	capTimed, stallOn := false, false
	for _, due := range rec.Dues() {
		switch due.Rule {
		case watchdog.DeleteNeverStarted:
			parts = append(parts, fmt.Sprintf("no job runs yet, so the watchdog deletes the pod %s after it booted (boot grace)", since(due.After)))
		case watchdog.DeleteStalled:
			stallOn = true
			parts = append(parts, fmt.Sprintf("should the job not move for %s (--stall-after: no new output or progress line, no file changed under its outputs, no CPU or GPU use), it is asked for a snapshot, and the pod is deleted %s later if it still has not moved (--snapshot-wait)",
				since(eff.StallAfter), since(due.After-eff.StallAfter)))
		case watchdog.DeleteAbandoned:
			parts = append(parts, fmt.Sprintf("once the job ends, the pod goes %s later unless its results are collected (or later, while a launcher downloading them holds the lease)", since(due.After)))
		case watchdog.DeleteDeadline:
			parts = append(parts, fmt.Sprintf("the lease is no longer renewed, so at the deadline (%s) it asks the job for a snapshot and deletes the pod",
				due.At.Local().Format(time.DateTime)))
		case watchdog.DeleteMaxExtension:
			parts = append(parts, fmt.Sprintf("at the deadline plus its extension (%s, --max-extension) it does so whatever the lease", due.At.Local().Format(time.DateTime)))
		case watchdog.DeleteCostCap:
			capTimed = true
			parts = append(parts, fmt.Sprintf("the cost cap of %s still holds: the pod goes at %s at the latest", money(rec.MaxCostUSD), due.At.Local().Format(time.DateTime)))
		}
	}
	if rec.MaxCostUSD > 0 && !rec.Keep && !capTimed {
		parts = append(parts, fmt.Sprintf("the cost cap of %s still holds", money(rec.MaxCostUSD)))
	}
	if started && !rec.Keep && !stallOn {
		parts = append(parts, "the stall rule is off (--stall-after): a job that stops moving runs on until another rule ends it")
	}
	return strings.Join(parts, "; ")
}

// retrieveGrace is the run's retrieve grace, as the pod's env has it.
func (d *driver) retrieveGrace() string {
	if d.r.RetrieveGrace <= 0 {
		return "the retrieve grace"
	}
	return since(d.r.RetrieveGrace)
}
