package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/sweep"
)

// Delete deletes the pod (else terminates or stops it) and the secret and
// records the cost, for up to three minutes past ctx's end, until the API
// no longer shows the pod (else *DeleteUnconfirmedError). A pod that could
// only be stopped still bills for its volume.
func (r *Run) Delete(ctx context.Context) (runpod.DeleteResult, error) {
	return r.teardownCtx(ctx, r.endPhase(PhaseFailed))
}

// teardown deletes the pod and the secret, for at most teardownTimeout.
func (r *Run) teardown(phase Phase) runpod.DeleteResult {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, _ := r.teardownCtx(ctx, phase)
	return res
}

// teardownCtx deletes the pod and the secret, whatever ctx says: for as
// long as ctx lasts (a crowd's deletes may wait minutes for the API's
// quota), then for teardownTimeout more.
func (r *Run) teardownCtx(ctx context.Context, phase Phase) (runpod.DeleteResult, error) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	started := make(chan struct{})
	var bound *time.Timer
	stop := context.AfterFunc(ctx, func() {
		bound = time.AfterFunc(r.cfg.teardown, cancel)
		close(started)
	})
	defer func() {
		if !stop() {
			<-started
			bound.Stop()
		}
	}()
	ctx = dctx
	res, err := r.deletePod(ctx)
	r.dropConn()
	r.deleteSecret(ctx)
	if res == runpod.Stopped {
		phase = PhaseStopped
	}
	r.end(phase, "")
	return res, err
}

// deletePod deletes the run's pod with the client's fallbacks.
func (r *Run) deletePod(ctx context.Context) (runpod.DeleteResult, error) {
	if r.rec.PodID == "" {
		return runpod.Deleted, nil
	}
	res, err := r.api.DeletePod(ctx, r.rec.PodID)
	switch {
	case res == runpod.Deleted || res == runpod.Terminated:
		// An answered delete is not a pod gone: only the API's own
		// view says it no longer bills.
		err = r.confirmGone(ctx)
	case err == nil:
		err = fmt.Errorf("pod %s was not deleted", r.rec.PodID)
	}
	r.emit(Event{Kind: EventDeleted, Result: res, Err: err})
	return res, err
}

// How long, and how often, a deleted pod is looked for.
const (
	confirmWait  = time.Minute
	confirmEvery = 5 * time.Second
)

// confirmGone waits until the pod is gone from GET (404 or TERMINATED)
// and from the list, up to confirmWait, else returns a
// *DeleteUnconfirmedError.
func (r *Run) confirmGone(ctx context.Context) error {
	start := r.now()
	for {
		seen := r.stillListed(ctx)
		if seen == "" {
			return nil
		}
		if r.since(start) >= confirmWait || r.cfg.clock.Sleep(ctx, confirmEvery) != nil {
			return &DeleteUnconfirmedError{PodID: r.rec.PodID, Seen: seen, After: r.since(start)}
		}
	}
}

// stillListed says how the API still shows the pod, empty when it shows
// it nowhere.
func (r *Run) stillListed(ctx context.Context) string {
	pod, err := r.api.GetPod(ctx, r.rec.PodID)
	switch {
	case errors.Is(err, runpod.ErrNotFound):
	case err != nil:
		return fmt.Sprintf("reading it failed (%v)", err)
	case pod.Status != runpod.StatusTerminated:
		return fmt.Sprintf("GET still shows it %s", pod.Status)
	}
	if r.rec.PodName == "" {
		return ""
	}
	pods, err := r.api.ListPods(ctx, runpod.ListPodsOptions{Name: r.rec.PodName})
	if err != nil {
		return fmt.Sprintf("listing pods failed (%v)", err)
	}
	for _, p := range pods {
		switch {
		case p.Status == runpod.StatusTerminated:
		case p.ID == r.rec.PodID && p.Unreadable == nil:
			return fmt.Sprintf("the pod list still shows it %s", p.Status)
		case p.ID == r.rec.PodID || (p.Unreadable != nil && p.ID == ""):
			// Neither gone nor a pod read.
			return fmt.Sprintf("the pod list shows a pod it cannot read that may be it, status %q (%v)", p.Status, p.Unreadable)
		}
	}
	return ""
}

// deleteSecret deletes the run's host key secret, found by name when its
// id is unknown.
func (r *Run) deleteSecret(ctx context.Context) {
	if r.cfg.holdSecret {
		return
	}
	id := r.rec.SecretID
	if id == "" {
		s, err := r.api.FindSecret(ctx, r.rec.SecretName)
		if errors.Is(err, runpod.ErrNotFound) {
			return
		}
		if err != nil {
			r.warn(fmt.Errorf("looking for secret %s: %w", r.rec.SecretName, err))
			return
		}
		id = s.ID
	}
	if err := r.api.DeleteSecret(ctx, id); err != nil && !errors.Is(err, runpod.ErrNotFound) {
		r.emit(Event{Kind: EventSecretDeleted, SecretName: r.rec.SecretName, Err: err})
		return
	}
	r.rec.SecretID = ""
	r.emit(Event{Kind: EventSecretDeleted, SecretName: r.rec.SecretName})
	r.save()
}

// Remove deletes a run's pod and secret without connecting to the pod; a
// started run with uncollected results needs force (else ErrNotCollected).
func Remove(ctx context.Context, c *runpod.Client, rec Record, force bool, opts ...Option) (Record, runpod.DeleteResult, error) {
	return remove(ctx, c, rec, force, opts...)
}

func remove(ctx context.Context, c api, rec Record, force bool, opts ...Option) (Record, runpod.DeleteResult, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := podenv.CheckRunID(rec.ID); err != nil {
		return rec, runpod.NotDeleted, &podenv.FieldError{Field: "Record.ID", Reason: err.Error()}
	}
	if rec.PodName == "" {
		rec.PodName = podenv.PodName(rec.ID)
	}
	if rec.SecretName == "" {
		rec.SecretName = podenv.HostKeySecretName(rec.ID)
	}
	// The pod and the secret are deleted by these names: another run's
	// must never be.
	if rec.PodName != podenv.PodName(rec.ID) || rec.SecretName != podenv.HostKeySecretName(rec.ID) {
		return rec, runpod.NotDeleted, fmt.Errorf("%w: pod %q and secret %q are not run %s's", ErrRecordMismatch, rec.PodName, rec.SecretName, rec.ID)
	}
	r := &Run{api: c, cfg: cfg, rec: rec}
	if err := r.findPod(ctx); err != nil && !errors.Is(err, ErrNoPod) {
		return r.rec, runpod.NotDeleted, err
	}
	if !force && !rec.JobStarted.IsZero() && rec.Collected.IsZero() && r.rec.PodID != "" {
		// The job may still run, and its results are on the pod only.
		pod, err := r.lookPod(ctx)
		if err == nil && !podEnded(pod.Status) {
			return r.rec, runpod.NotDeleted, fmt.Errorf("%w (the job of run %s was started, and its pod %s is %s)",
				ErrNotCollected, rec.ID, r.rec.PodID, pod.Status)
		}
		if err != nil && !errors.Is(err, runpod.ErrNotFound) {
			return r.rec, runpod.NotDeleted, fmt.Errorf("reading pod %s: %w", r.rec.PodID, err)
		}
	}
	res, err := r.deletePod(ctx)
	r.deleteSecret(ctx)
	switch res {
	case runpod.Deleted, runpod.Terminated:
		r.rec.Phase = r.endPhase(PhaseRemoved)
		if r.rec.Ended.IsZero() && !r.rec.BillingStart.IsZero() {
			r.rec.Ended = r.now()
			r.rec.CostUSD = r.rec.costTo(r.rec.Ended)
		}
		r.readBill()
	case runpod.Stopped:
		r.rec.Phase = PhaseStopped
	}
	r.save()
	return r.rec, res, err
}

// Abandoned says a guarded pod in status s (EXITED, ERROR) bills unwatched.
func Abandoned(s runpod.PodStatus) bool { return stillBills(s) }

// RemoveOrphan deletes a pod of a run without a Record, and its secret, only
// when package sweep's rules would; else ErrNotAbandoned.
func RemoveOrphan(ctx context.Context, c *runpod.Client, pod runpod.Pod, opts ...Option) (runpod.DeleteResult, error) {
	return removeOrphan(ctx, c, pod, opts...)
}

func removeOrphan(ctx context.Context, c api, pod runpod.Pod, opts ...Option) (runpod.DeleteResult, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	id, ok := podenv.RunIDOfPod(pod.Name)
	if !ok {
		return runpod.NotDeleted, fmt.Errorf("%w: pod %s (%q) is not named as a guarded run's", ErrNotAbandoned, pod.ID, pod.Name)
	}
	if d := sweep.Judge(pod, cfg.clock.Now(), sweep.Policy{}); !d.Delete {
		return runpod.NotDeleted, fmt.Errorf("%w: pod %s (%s) is %s: %s; another machine's run may own it",
			ErrNotAbandoned, pod.ID, pod.Name, pod.Status, d.Why)
	}
	r := &Run{api: c, cfg: cfg, rec: Record{ID: id, PodID: pod.ID, PodName: pod.Name, SecretName: podenv.HostKeySecretName(id)}}
	res, err := r.deletePod(ctx)
	r.deleteSecret(ctx)
	return res, err
}
