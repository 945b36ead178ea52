package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// How is how a job ended.
type How int

// The ways a job ends.
const (
	HowExited       How = iota + 1 // it wrote its exit code (End.ExitCode)
	HowKilled                      // its process group is gone without an exit code
	HowCancelled                   // the cancelled marker says so
	HowLost                        // it died with a container Runpod restarted; its results so far are on the volume
	HowRunDirLost                  // the restarted container's disk lost the run directory, job and outputs
	HowNeverStarted                // no job was started
)

// End is how a followed job ended.
type End struct {
	How      How
	ExitCode int    // -1 when the job wrote none
	RunDir   string // on the pod
	// The snapshot request the job was given, and its proof after it (nil: none).
	Requested watchdog.SnapshotReason
	Proof     *SnapshotProof
}

// Checkpointed says the job exited 0 with a proof made for its request.
func (e End) Checkpointed() bool {
	return e.OK() && e.Proof != nil && e.Proof.answers(e.Requested)
}

// OK says the job exited 0.
func (e End) OK() bool { return e.How == HowExited && e.ExitCode == 0 }

// Err is nil when the job exited 0, else how it ended (ErrJobLost if lost).
func (e End) Err() error {
	switch {
	case e.OK():
		return nil
	case e.How == HowExited:
		return &endError{fmt.Sprintf("the job failed with exit code %d", e.ExitCode), false}
	case e.How == HowLost || e.How == HowRunDirLost:
		return &endError{"the job was lost when the pod's container restarted, before it could finish", true}
	case e.How == HowNeverStarted:
		return &endError{"the job never ran", false}
	}
	return &endError{"the job ended without an exit code", false}
}

// endError is End.Err's error.
type endError struct {
	msg  string
	lost bool
}

func (e *endError) Error() string { return e.msg }

func (e *endError) Is(target error) bool { return e.lost && target == ErrJobLost }

// CancelResult is what Run.Cancel found and did.
type CancelResult string

// Run.Cancel's answers.
const (
	CancelStopped CancelResult = "cancelled" // the job ran, and its process group was stopped
	CancelEnded   CancelResult = "ended"     // the job had ended already; nothing was signalled
	CancelNoJob   CancelResult = "none"      // no job was started
)

// Cancel stops the job without a checkpoint: it marks it cancelled, TERMs
// its process group and KILLs it two seconds later. The pod stays for
// Follow, Collect and Delete; a cancel that fails changes nothing.
func (r *Run) Cancel(ctx context.Context) (CancelResult, error) {
	if err := r.liveConn(ctx); err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, shortCommand)
	defer cancel()
	out, err := r.conn.Output(cctx, jobctl.CancelCommand(r.rec.RunDir), nil)
	if err != nil {
		return "", fmt.Errorf("cancelling the job: %w", err)
	}
	got, err := jobctl.ParseCancel(out)
	res := CancelResult(got)
	if err != nil {
		return "", err
	}
	r.cfg.log.Info("guard: cancel", "run", r.rec.ID, "pod", r.rec.PodID, "result", string(res))
	// The job's end as the pod now has it, for Follow and Collect.
	if _, err := r.Look(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// End is how the job ended as the last look saw it, without following it.
func (r *Run) End() End { return r.endOf(r.last) }

// endPhase is the phase of a run that ends now: done once its results
// were collected, else otherwise.
func (r *Run) endPhase(otherwise Phase) Phase {
	if !r.rec.Collected.IsZero() || r.rec.Phase == PhaseDone {
		return PhaseDone
	}
	return otherwise
}

// Detach leaves the pod to its watchdog and closes the connection: the lease
// lapses, and every rule applies. Attach takes the run up again.
func (r *Run) Detach() {
	r.stopPodLog()
	r.dropConn()
	r.rec.Phase = PhaseDetached
	r.save()
}

// Close closes the connection to the pod, leaving the Record as it is.
func (r *Run) Close() {
	r.stopPodLog()
	r.dropConn()
}

// fail ends a run that cannot go on: it deletes the pod, or leaves it to
// its watchdog when that is what the caller asked (and the watchdog is
// armed) or when the pod holds the only copy of the results. It reports
// whether the pod was left.
func (r *Run) fail(ctx context.Context, err error) (left bool) {
	var gone *PodGoneError
	var collect *CollectError
	var verdict *VerdictError
	switch {
	case errors.As(err, &gone) && stillBills(gone.Status) && r.rec.Keep:
		// A kept pod is deleted only by an explicit Remove: stopped, it
		// keeps its disk (and bills for it) until its owner says.
		err = fmt.Errorf("%w: a kept pod, left as it is; its storage still bills until it is removed", err)
		r.emit(Event{Kind: EventFailed, Err: err, Then: ThenNothing})
		r.dropConn()
		r.rec.Phase, r.rec.Note = PhaseStopped, err.Error()
		r.save()
		return true
	case errors.As(err, &gone) && stillBills(gone.Status):
		// An EXITED or ERROR pod bills for its disk and its watchdog no
		// longer runs: nothing but this client would delete it. Its
		// log, read before the delete, says why it died (the Record's
		// note stays a line).
		note := err.Error()
		gone.PodLog = r.lastPodLog(ctx)
		r.emit(Event{Kind: EventFailed, Err: err, Then: ThenDelete})
		r.rec.Note = note
		r.teardown(r.endPhase(PhaseFailed))
		return false
	case errors.As(err, &gone):
		r.emit(Event{Kind: EventFailed, Err: err, Then: ThenNothing})
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		r.dropConn()
		r.deleteSecret(ctx)
		// A pod gone after its results were collected is the watchdog's
		// retrieved rule at work: the run ended well.
		at := r.goneAt(gone)
		if phase := r.endPhase(PhaseFailed); phase == PhaseDone {
			r.endAt(phase, "", at)
		} else {
			r.endAt(phase, err.Error(), at)
		}
		return false
	case errors.As(err, &collect) && r.podGone(ctx):
		r.emit(Event{Kind: EventFailed, Err: err, Then: ThenDelete})
		r.rec.Note = err.Error()
		r.teardown(PhaseFailed)
		return false
	case errors.As(err, &collect):
		// The outputs exist only on the pod: deleting it would lose them.
		r.emit(Event{Kind: EventFailed, Err: err, Then: ThenNothing})
		r.leave(err)
		return true
	case errors.As(err, &verdict):
		r.emit(Event{Kind: EventFailed, Err: err, Then: ThenDelete})
	case r.cfg.leave && r.ready:
		r.emit(Event{Kind: EventFailed, Err: err, Then: ThenLeave})
		r.leave(err)
		return true
	default:
		r.emit(Event{Kind: EventFailed, Err: err, Then: ThenDelete})
	}
	r.rec.Note = err.Error()
	r.teardown(PhaseFailed)
	return false
}

func (r *Run) leave(err error) {
	r.dropConn()
	r.rec.Phase, r.rec.Note = PhaseLeftToPod, err.Error()
	r.save()
	r.emit(Event{Kind: EventLeft})
}

// end records the run's end and its cost.
func (r *Run) end(phase Phase, note string) { r.endAt(phase, note, r.now()) }

// endAt records the run's end at a time, and its cost up to it.
func (r *Run) endAt(phase Phase, note string, at time.Time) {
	r.rec.Ended = at
	r.rec.CostUSD = r.rec.costTo(r.rec.Ended)
	r.rec.Phase = phase
	if note != "" {
		r.rec.Note = note
	}
	r.ended = true
	r.readBill()
	r.save()
}

// podGone says the API knows the pod no more, or as ended.
func (r *Run) podGone(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	pod, err := r.lookPod(ctx)
	return errors.Is(err, runpod.ErrNotFound) || (err == nil && podEnded(pod.Status))
}
