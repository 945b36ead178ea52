package guard

import (
	"context"
	"fmt"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
)

// Cancel stops the job at once, without asking it for a checkpoint: the
// job is marked cancelled, its whole process group gets TERM, and what is
// left of it KILL two seconds later; it returns what it found. The pod
// stays: Follow then reads the rest of the output (the job ends as
// Cancelled), Collect downloads what there is, Delete deletes the pod. It
// works on an attached Run as on a launched one. A cancel that fails (the
// pod does not answer) changes nothing: the pod is left to its watchdog.
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

// End is how the job ended as the last look saw it (after Cancel, say),
// without following it.
func (r *Run) End() End { return r.endOf(r.last) }
