package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

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
	if err == nil && r.last.Request != "" && end.How != HowNeverStarted {
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
		return End{How: HowNeverStarted, ExitCode: -1}, nil
	}
	if err := r.liveConn(ctx); err != nil {
		return End{}, err
	}
	if r.rec.CostCapAt.IsZero() {
		// A record saved without its cost plan keeps, from here, the one
		// its rules give: each look reads it, none computes it again.
		r.rec.SnapshotAt, r.rec.CostCapAt = r.rec.costPlan()
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
		if err := r.pause(ctx, r.rec.Poll); err != nil {
			return End{}, err
		}
	}
}

// pause sleeps d, or less when the connection or the look's session ends
// first: a lost connection, or a look whose watch.sh died, may be a lost
// pod, and the next look tells.
func (r *Run) pause(ctx context.Context, d time.Duration) error {
	if r.conn == nil {
		return r.cfg.clock.Sleep(ctx, d)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended, look := r.conn.Done(), (<-chan struct{})(nil)
	if r.watch != nil {
		look = r.watch.Done()
	}
	go func() {
		select {
		case <-ended:
			cancel()
		case <-look:
			cancel()
		case <-sctx.Done():
		}
	}()
	_ = r.cfg.clock.Sleep(sctx, d)
	return ctx.Err()
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
	if snapAt, capAt := r.rec.costPlan(); !capAt.IsZero() {
		if now.After(capAt.Add(late)) {
			return &EnforcedError{Reason: watchdog.DeleteCostCap, Detail: fmt.Sprintf("the cost cap of %s was reached at %s (by this machine's clock)",
				costplan.Money(r.rec.MaxCostUSD), capAt.Local().Format(time.TimeOnly))}
		}
		if now.After(snapAt.Add(late)) && st.Request == "" && !r.costAsked && r.conn != nil {
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
	if end := r.rec.HardEnd(); !end.IsZero() && now.After(end.Add(late)) {
		return &EnforcedError{Reason: watchdog.DeleteMaxExtension, Detail: fmt.Sprintf("the deadline %s plus its extension of %s passed",
			r.rec.Deadline.Local().Format(time.DateTime), r.rec.Extension())}
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
	var rule watchdog.DeleteReason
	_, at := r.rec.costPlan()
	if !at.IsZero() {
		rule = watchdog.DeleteCostCap
	}
	if end := r.rec.HardEnd(); !end.IsZero() && (at.IsZero() || end.Before(at)) {
		at, rule = end, watchdog.DeleteMaxExtension
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
	if _, err := r.CollectSoFar(dctx, r.cfg.early); err != nil && ctx.Err() == nil {
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
		stall := r.rec.StallEnd(r.askedSeen.Add(-r.rec.Poll))
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

// enforceMargin is how much later than its watchdog a client enforces.
// It is the podenv.FollowMargin a run's worst case counts with.
const enforceMargin = podenv.FollowMargin

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
		e.How = HowRunDirLost
	case st.ExitCode >= 0:
		e.How = HowExited
	case st.Lost():
		e.How = HowLost
	case st.Cancelled:
		e.How = HowCancelled
	case st.Started():
		e.How = HowKilled
	default:
		e.How = HowNeverStarted
	}
	return e
}

// JobState is what one look at the pod saw of the job and its watchdog.
type JobState struct {
	PID          int                     // the job's process group, 0 before it started
	ExitCode     int                     // -1 until the job wrote one
	Alive        bool                    // its process group exists (false for a lost job)
	Cancelled    bool                    // marked cancelled, with the marker's word:
	CancelReason string                  // empty when none
	LogSize      int64                   // job.log's size at the look
	PodNow       int64                   // the pod's clock, Unix seconds
	Request      watchdog.SnapshotReason // pending, if any: any word, since the job can write it
	DuKiB        int64                   // the watchdog's last measure of the network volume, -1: none
	Verdict      watchdog.Verdict        // zero until the watchdog wrote one
	DeleteReason watchdog.DeleteReason   // the rule the watchdog is deleting the pod by, if any
	Delete       watchdog.DeleteState    // the watchdog's delete right, and its last delete no GET confirmed
	Progress     string                  // the last line of $OVERBRAINER_PROGRESS, cleaned, at most 256 bytes
	Moved        int64                   // the pod's time of the watchdog's last look that saw the job move, 0: none
}

// Started says the job started.
func (s JobState) Started() bool { return jobctl.State(s).Started() }

// Ended says the job exited, was cancelled or lost, or its process is gone.
func (s JobState) Ended() bool { return jobctl.State(s).Ended() }

// Lost says the job died without an exit code, with a restarted container.
func (s JobState) Lost() bool { return jobctl.State(s).Lost() }
