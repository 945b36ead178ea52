package guard

import (
	"context"
	"fmt"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
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
