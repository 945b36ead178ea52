package guard

import (
	"archive/tar"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
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
	plan, err := costplan.CostCap(r.rec.BillingStart, r.rec.CostPerHr, r.rec.budget(), r.rec.EffectiveRules().SnapshotLead, offset)
	if err != nil {
		return err
	}
	if err := r.put(ctx, watchdog.SnapshotAt, strconv.FormatInt(plan.SnapshotAt, 10)); err != nil {
		return err
	}
	if err := r.put(ctx, watchdog.CostCapAt, strconv.FormatInt(plan.CostCapAt, 10)); err != nil {
		return err
	}
	local := func(podUnix int64) time.Time { return time.Unix(podUnix, 0).Add(-offset) }
	r.emit(Event{Kind: EventCostPlan, MaxCostUSD: r.rec.MaxCostUSD, CostPerHr: r.rec.CostPerHr,
		SnapshotAt: local(plan.SnapshotAt), CostCapAt: local(plan.CostCapAt), ClockOffset: offset})
	r.save()
	return nil
}

// Look is one look at the job, without renewing the lease.
func (r *Run) Look(ctx context.Context) (JobState, error) {
	for try := 0; ; try++ {
		if err := r.liveConn(ctx); err != nil {
			return JobState(r.last), err
		}
		st, _, err := r.poll(ctx, false)
		if err == nil || try == 1 || ctx.Err() != nil {
			return JobState(st), err
		}
		r.dropConn()
	}
}

// Snapshot asks the job to checkpoint into its outputs and exit; when a
// request is there already, it returns that request's reason instead.
func (r *Run) Snapshot(ctx context.Context) (already watchdog.SnapshotReason, err error) {
	st, err := r.Look(ctx)
	if err != nil {
		return "", err
	}
	if st.Request != "" {
		return st.Request, nil
	}
	if err := r.put(ctx, watchdog.SnapshotRequest, string(watchdog.ReasonStop)); err != nil {
		return "", err
	}
	return "", nil
}

// Exec runs cmd as root under the pod's login shell (see podssh.Command);
// nil streams are empty or discarded. A non-zero exit is an *ssh.ExitError.
func (r *Run) Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := r.liveConn(ctx); err != nil {
		return err
	}
	return r.conn.Run(ctx, cmd, stdin, stdout, stderr)
}

// Follow streams the job's output to w (nil: discard), its secrets
// [REDACTED], from the Record's offset until the job ends, renewing the lease while it moves, growing a
// filling network volume and, with Spec.Recover, moving a lost job to a new
// pod. A pod found gone is a *PodGoneError; a rule the watchdog missed, an
// *EnforcedError. When ctx ends, the pod stays.
func (r *Run) Follow(ctx context.Context, w io.Writer) (End, error) {
	if w == nil {
		w = io.Discard
	}
	end, failed, err := r.followRecovering(ctx, w)
	if err == nil && r.last.Request != "" && end.How != NeverStarted {
		end.Requested, end.Proof = r.last.Request, r.readProof(ctx)
	}
	switch {
	case failed:
	case err == nil:
		r.emit(Event{Kind: EventJobEnded, End: end})
	case ctx.Err() == nil:
		r.fail(ctx, err)
	}
	return end, err
}

func (r *Run) follow(ctx context.Context, w io.Writer) (End, error) {
	if !r.last.Started() && r.rec.JobStarted.IsZero() {
		return End{How: NeverStarted, ExitCode: -1}, nil
	}
	if err := r.liveConn(ctx); err != nil {
		return End{}, err
	}
	var lastLease, lastVolume time.Time
	var moving movement
	var announced watchdog.SnapshotReason
	lastStatus := r.now()
	// The job may print its secrets (set -x): they are redacted.
	out := &redactWriter{w: w, red: r.redacting()}
	for {
		// The first look renews the lease; after that, a renewal needs
		// the job to have moved since the last one (progress once it
		// reports some, else output), and a stalled job holds none.
		touch := lastLease.IsZero() || (r.since(lastLease) >= r.rec.LeaseEvery && moving.movedSince(lastLease) && !r.isStalled(&moving))
		st, b, err := r.poll(ctx, touch)
		if err != nil {
			if ctx.Err() != nil {
				return End{}, ctx.Err()
			}
			var ce *podssh.CommandError
			if errors.As(err, &ce) {
				return End{}, fmt.Errorf("following the job: %w", err)
			}
			// A pod that no longer answers (its run directory on a volume
			// that hangs, its host cut off) is still held to the money
			// rules, on every turn of the reconnect.
			enforce := func() error { return r.enforce(ctx, r.last, lastLease) }
			if err := r.reconnect(ctx, err, enforce); err != nil {
				return End{}, err
			}
			continue
		}
		now := r.now()
		if touch {
			lastLease = now
		}
		if len(b) > 0 {
			if _, err := out.Write(b); err != nil {
				return End{}, fmt.Errorf("writing the job's output: %w", err)
			}
			r.rec.LogOffset += int64(len(b))
			r.emit(Event{Kind: EventOutput, Bytes: int64(len(b)), Offset: r.rec.LogOffset})
		}
		if v := st.Verdict.String(); v != r.rec.Verdict || len(b) > 0 {
			r.rec.Verdict = v
			r.save()
		}
		if st.Request != "" && st.Request != announced {
			announced = st.Request
			r.emit(Event{Kind: EventSnapshotRequested, Snapshot: st.Request})
		}
		if r.rec.NetworkVolumeID != "" && st.DuKiB >= 0 {
			r.tellFilling(st.DuKiB)
			if now.Sub(lastVolume) >= time.Minute {
				lastVolume = now
				r.growVolume(ctx, st)
			}
		}
		if st.Ended() && r.rec.LogOffset >= st.LogSize {
			return r.endOf(st), out.flush()
		}
		if err := r.enforce(ctx, st, lastLease); err != nil {
			return End{}, err
		}
		moving.see(now, st, len(b))
		r.stallCheck(ctx, st, &moving)
		r.paceCheck(st, &moving)
		r.earlyResults(ctx, st)
		// The job was started (or seen started) before the follow began,
		// and job.pid is never removed: without it, the run directory is
		// a new one. The pod's container restarted on a disk that did not
		// keep it (no volume), and the job died with the container.
		if !st.Started() {
			r.runDirLost = true
			return r.endOf(st), out.flush()
		}
		r.pullIfDue(ctx, st)
		if now.Sub(lastStatus) >= statusEvery {
			lastStatus = now
			r.emit(Event{Kind: EventCost, Elapsed: r.since(r.rec.BillingStart), CostUSD: r.spent()})
		}
		if len(b) == maxChunk {
			continue
		}
		if err := r.cfg.clock.Sleep(ctx, r.rec.Poll); err != nil {
			return End{}, err
		}
	}
}

// enforce applies the watchdog's money rules from this side while the
// client follows, so that a watchdog that died or hangs does not leave a
// pod billing under a client's eyes: at the cost cap's snapshot time it
// asks for the snapshot when none was asked, and at the cap, or at the
// deadline while the lease is stale, it ends the run with an
// *EnforcedError (the pod is then deleted). Each acts a watchdog tick and
// a margin after the watchdog would have, so that a live one acts first.
// A kept run has none of these rules.
func (r *Run) enforce(ctx context.Context, st jobctl.State, leaseAt time.Time) error {
	if r.rec.Keep {
		return nil
	}
	rules := r.rec.EffectiveRules()
	now, late := r.now(), rules.Interval+enforceMargin
	if r.rec.MaxCostUSD > 0 && r.rec.CostPerHr > 0 {
		plan, err := costplan.CostCap(r.rec.BillingStart, r.rec.CostPerHr, r.rec.budget(), rules.SnapshotLead, 0)
		if err != nil {
			return err
		}
		if capAt := time.Unix(plan.CostCapAt, 0); now.After(capAt.Add(late)) {
			return &EnforcedError{Reason: watchdog.DeleteCostCap, Detail: fmt.Sprintf("the cost cap of %s was reached at %s (by this machine's clock)",
				costplan.Money(r.rec.MaxCostUSD), capAt.Local().Format(time.TimeOnly))}
		}
		if snapAt := time.Unix(plan.SnapshotAt, 0); now.After(snapAt.Add(late)) && st.Request == "" && !r.costAsked && r.conn != nil {
			// A failed write is tried again at the next look; while the
			// follow reconnects (no connection), once SSH answers again.
			if err := r.put(ctx, watchdog.SnapshotRequest, string(watchdog.ReasonCost)); err != nil {
				r.warn(err)
			} else {
				r.costAsked = true
				r.warn(fmt.Errorf("the pod's watchdog had not asked for the cost cap's snapshot, due at %s: this client asked", snapAt.Local().Format(time.TimeOnly)))
			}
		}
	}
	// Past the deadline with a stale lease the watchdog asks for a
	// snapshot, and deletes the pod once the snapshot had its wait.
	staleAt := leaseAt.Add(rules.LeaseTTL)
	due := maxTime(r.rec.Deadline, staleAt).Add(rules.SnapshotWait + late)
	if !r.rec.Deadline.IsZero() && now.After(staleAt) && now.After(due) {
		return &EnforcedError{Reason: watchdog.DeleteDeadline, Detail: fmt.Sprintf("the deadline %s passed, the lease lapsed",
			r.rec.Deadline.Local().Format(time.DateTime))}
	}
	// The extension's end takes the pod whatever the lease, this client's
	// own included: the backup of the watchdog's max_extension rule.
	if ext := extensionOf(r.rec.MaxExtension, r.rec.HardDeadline); !r.rec.Deadline.IsZero() && now.After(r.rec.Deadline.Add(ext+late)) {
		return &EnforcedError{Reason: watchdog.DeleteMaxExtension, Detail: fmt.Sprintf("the deadline %s plus its extension of %s passed",
			r.rec.Deadline.Local().Format(time.DateTime), ext)}
	}
	return nil
}

// hardEnd is the earliest time, by this machine's clock, at which a rule
// of the watchdog takes the pod whatever the lease (the cost cap, the
// deadline plus its extension), and that rule; zero when none applies.
func (r *Run) hardEnd() (time.Time, watchdog.DeleteReason) {
	if r.rec.Keep {
		return time.Time{}, ""
	}
	var at time.Time
	var rule watchdog.DeleteReason
	if r.rec.MaxCostUSD > 0 && r.rec.CostPerHr > 0 {
		if plan, err := costplan.CostCap(r.rec.BillingStart, r.rec.CostPerHr, r.rec.budget(), r.rec.SnapshotLead, 0); err == nil {
			at, rule = time.Unix(plan.CostCapAt, 0), watchdog.DeleteCostCap
		}
	}
	if !r.rec.Deadline.IsZero() {
		if end := r.rec.Deadline.Add(extensionOf(r.rec.MaxExtension, r.rec.HardDeadline)); at.IsZero() || end.Before(at) {
			at, rule = end, watchdog.DeleteMaxExtension
		}
	}
	return at, rule
}

// ruleDue is the rule of hardEnd when its time came by now, and its time.
func (r *Run) ruleDue(now time.Time) (watchdog.DeleteReason, time.Time) {
	at, rule := r.hardEnd()
	if rule == "" || now.Before(at) {
		return "", time.Time{}
	}
	return rule, at
}

// earlyLead is how long before a foreseen end at least the results so
// far are downloaded (WithEarlyResults); a longer snapshot lead gives a
// third of itself.
const earlyLead = 15 * time.Second

// earlyResults downloads the results so far, once for each end it
// foresees, when a snapshot was asked and the job still runs within the
// lead of that end: the job may not stop in time, and the pod goes at that
// end with what it checkpointed. The lead is at most half the time from
// the request to the end, so that the job had time to checkpoint; the
// download never runs past that end.
func (r *Run) earlyResults(ctx context.Context, st jobctl.State) {
	if r.cfg.early == "" || st.Request == "" || st.Ended() {
		return
	}
	now := r.now()
	if r.askedSeen.IsZero() {
		r.askedSeen = now
	}
	// An end no later than the last one downloaded for (the same end,
	// or one a new price moved a little) needs no second download.
	end := r.foreseenEnd(st, now)
	if end.IsZero() || !end.After(r.earlyFor.Add(earlyLead)) {
		return
	}
	lead := min(max(earlyLead, r.rec.SnapshotLead/3), end.Sub(r.askedSeen)/2)
	if now.Before(end.Add(-lead)) {
		return
	}
	r.earlyFor = end
	dctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	if _, err := r.Download(dctx, r.cfg.early); err != nil && ctx.Err() == nil {
		r.warn(fmt.Errorf("downloading the results so far before the pod's end at %s: %w", end.Local().Format(time.TimeOnly), err))
	}
}

// foreseenEnd is the earliest delete of the pod this side foresees while
// the job runs: the hard end, or the stalled rule's once the job was asked
// for a stall snapshot (which only a stall rule that deletes asks), until
// its time passed with the pod still there (the job moved again). The
// watchdog deletes SnapshotWait after its ask, which came after the look
// before the one that first saw it. A kept pod's idle bound counts from
// the job's end, where Follow returns and the results are collected.
func (r *Run) foreseenEnd(st jobctl.State, now time.Time) time.Time {
	end, _ := r.hardEnd()
	if st.Request == watchdog.ReasonStall && !r.rec.Keep {
		stall := r.askedSeen.Add(r.rec.EffectiveRules().SnapshotWait - r.rec.Poll)
		if stall.After(now) && (end.IsZero() || stall.Before(end)) {
			end = stall
		}
	}
	return end
}

// ruleEarly is how much before its time on this machine's clock a rule may
// take the pod: the watchdog's clock counts whole seconds, and the time it
// was given is a whole second on the pod's clock.
const ruleEarly = 2 * time.Second

// goneAt is when a pod found gone went at the latest that the cost told
// can count to without running past the delete: the time of the rule that
// took it, less ruleEarly, when that came after the last look that found
// it alive, else that look; now when it was never seen.
func (r *Run) goneAt(g *PodGoneError) time.Time {
	now := r.now()
	at := r.seen
	if rule, ruleAt := r.ruleDue(now); rule != "" && rule == g.Rule() && ruleAt.Add(-ruleEarly).After(at) {
		at = ruleAt.Add(-ruleEarly)
	}
	if at.IsZero() || at.After(now) {
		return now
	}
	return at
}

// extensionOf is the extension a run was armed with: none for a hard
// deadline; zero is a record of before the field, whose pod was armed with
// the default of then (podenv.LegacyMaxExtension).
func extensionOf(ext time.Duration, hard bool) time.Duration {
	if hard {
		return 0
	}
	return cmp.Or(ext, podenv.LegacyMaxExtension)
}

// enforceMargin is how much later than its watchdog a client enforces.
const enforceMargin = 30 * time.Second

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// endOf is how the job of st ended.
func (r *Run) endOf(st jobctl.State) End {
	e := End{ExitCode: st.ExitCode, RunDir: r.rec.RunDir}
	switch {
	case r.runDirLost:
		e.How = RunDirLost
	case st.ExitCode >= 0:
		e.How = Exited
	case st.Lost():
		e.How = Lost
	case st.Cancelled:
		e.How = Cancelled
	case st.Started():
		e.How = Killed
	default:
		e.How = NeverStarted
	}
	return e
}

// Filling warnings start at fillFirst percent of the volume's usable part
// and come again every fillStep.
const (
	fillFirst = 85
	fillStep  = 5
)

// volumePercent is how full a volume of sizeGB holding usedKiB is, in
// percent of its usable part (as the watchdog counts it).
func volumePercent(sizeGB int, usedKiB int64) int {
	if sizeGB <= 0 {
		return 0
	}
	return int(float64(usedKiB) * 1024 * 100 / (costplan.VolumeUsable * float64(sizeGB) * 1e9))
}

// tellFilling warns at fillFirst percent, then at each fillStep more: a
// network volume bills every month, whether a pod runs or not.
func (r *Run) tellFilling(usedKiB int64) {
	pct := volumePercent(r.rec.VolumeGB, usedKiB)
	if pct < fillFirst {
		return
	}
	step := fillFirst + (pct-fillFirst)/fillStep*fillStep
	if step <= r.filledWarned {
		return
	}
	r.filledWarned = step
	r.emit(Event{Kind: EventVolumeFilling, VolumeID: r.rec.NetworkVolumeID, FromGB: r.rec.VolumeGB,
		ToGB: r.rec.MaxVolumeGB, UsedBytes: usedKiB * 1024, Percent: step})
}

// growVolume grows the network volume when it is GrowAt full, up to the
// run's MaxVolumeGB, and tells the watchdog its new size. A volume that
// may not grow, or whose growth failed, asks the job for a disk snapshot
// at once: a checkpoint now beats a job ended by a full disk.
func (r *Run) growVolume(ctx context.Context, st jobctl.State) {
	newGB, grow := costplan.Grow(r.rec.VolumeGB, st.DuKiB)
	if !grow {
		return
	}
	limit := min(r.rec.MaxVolumeGB, runpod.MaxVolumeGB)
	var why error
	switch {
	case r.rec.MaxVolumeGB <= 0:
		why = errors.New("it may not grow (no largest size was set)")
	case r.rec.VolumeGB >= limit:
		why = fmt.Errorf("it is %d GB, the largest it may grow to", r.rec.VolumeGB)
	default:
		if err := r.growTo(ctx, min(newGB, limit), st.DuKiB); err != nil {
			why = fmt.Errorf("growing it failed: %w", err)
		}
	}
	if why == nil || r.diskAsked {
		// Told once: the job has its request.
		return
	}
	then := "a snapshot is requested already"
	if st.Request == "" {
		if err := r.put(ctx, watchdog.SnapshotRequest, string(watchdog.ReasonDisk)); err != nil {
			// Tried again at the next measure.
			r.warn(fmt.Errorf("network volume %s is full and %w; asking the job for a disk snapshot: %w", r.rec.NetworkVolumeID, why, err))
			return
		}
		then = "the job is asked for a disk snapshot"
	}
	r.diskAsked = true
	r.warn(fmt.Errorf("network volume %s is full (%d%% of its usable part) and %w: %s", r.rec.NetworkVolumeID,
		volumePercent(r.rec.VolumeGB, st.DuKiB), why, then))
}

// growTo grows the network volume to newGB and tells the watchdog.
func (r *Run) growTo(ctx context.Context, newGB int, usedKiB int64) error {
	v, err := r.api.GrowNetworkVolume(ctx, r.rec.NetworkVolumeID, newGB)
	if err != nil {
		return err
	}
	if err := r.put(ctx, watchdog.VolumeGB, strconv.Itoa(v.SizeGB)); err != nil {
		return err
	}
	r.emit(Event{Kind: EventVolumeGrown, VolumeID: r.rec.NetworkVolumeID, FromGB: r.rec.VolumeGB, ToGB: v.SizeGB, UsedBytes: usedKiB * 1024})
	r.rec.VolumeGB = v.SizeGB
	// A bigger volume is less full: its warnings start again.
	r.filledWarned = 0
	r.save()
	return nil
}
