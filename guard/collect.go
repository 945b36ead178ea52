package guard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/sweep"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// resultNames are what Collect downloads from the run directory (those
// that exist): the cancelled marker says why a job that has no exit code
// ended, when it was lost with an earlier container, and ended_by which
// rule of the watchdog went to end the pod (ReadEndedBy reads it there);
// the bootstrap's log lands next to the watchdog's, in .pod, outside the
// outputs.
var resultNames = []string{jobctl.OutputsDir, jobctl.JobLog, watchdog.Log, bootstrap.Log, watchdog.ExitCode, watchdog.Cancelled, watchdog.SnapshotRequest, watchdog.EndedByFile}

// growingNames are the logs among them, which a running job and its
// watchdog append to (and a new container's bootstrap replaces) while
// they are sent: checking them against the pod's manifest would fail a
// download for a line written meanwhile.
var growingNames = []string{jobctl.JobLog, watchdog.Log, bootstrap.Log}

// Results says what Collect and Download bring back.
type Results struct {
	MaxGB          float64  `json:"max_gb,omitempty"`          // the download's cap: DefaultMaxResultsGB when 0
	RequireOutputs bool     `json:"require_outputs,omitempty"` // no file in the outputs fails the run: ErrNoOutputs
	Exclude        []string `json:"exclude,omitempty"`         // base-name globs left on the pod, e.g. "ckpt-*"
}

func (s Results) check(prefix string) []error {
	var errs []error
	if math.IsNaN(s.MaxGB) || math.IsInf(s.MaxGB, 0) || s.MaxGB < 0 {
		errs = append(errs, &FieldError{Field: prefix + "MaxGB", Reason: fmt.Sprintf("%v is not a positive size or 0", s.MaxGB)})
	}
	for _, p := range s.Exclude {
		if p == "" || strings.ContainsAny(p, "/\n\x00") {
			errs = append(errs, &FieldError{Field: prefix + "Exclude", Reason: fmt.Sprintf("%q is not a base-name glob (no /, no newline)", p)})
		}
	}
	return errs
}

func (s Results) maxBytes() int64 {
	gb := s.MaxGB
	if gb == 0 {
		gb = DefaultMaxResultsGB
	}
	return int64(gb * (1 << 30))
}

// Collected is what Collect downloaded.
type Collected struct {
	Dir          string
	Files, Dirs  int
	Bytes        int64
	Skipped      []string // links and special files, never written
	NotCollected bool     // the job never started: there was nothing to fetch
	Outputs      int      // files in the outputs directory
	Unchecked    bool     // the pod had no sha256sum, so the manifest was not checked
}

// Collect downloads the outputs, job.log, exit code, markers and pod logs
// (the logs with the job's secrets [REDACTED]) into dir alone, holding the lease and checking all but the logs against the
// pod's SHA-256 manifest, then marks them retrieved so the watchdog may
// delete the pod. A failure is a *CollectError; the pod keeps its watchdog.
func (r *Run) Collect(ctx context.Context, dir string) (Collected, error) {
	got, err := r.collect(ctx, dir)
	if err != nil && ctx.Err() == nil {
		r.fail(ctx, err)
	}
	return got, err
}

func (r *Run) collect(ctx context.Context, dir string) (Collected, error) {
	st := r.last
	if st.ExitCode >= 0 {
		code := st.ExitCode
		r.rec.ExitCode = &code
	}
	if !st.Started() {
		return Collected{Dir: dir, NotCollected: true}, nil
	}
	got, err := r.fetch(ctx, dir, true)
	if err != nil {
		return Collected{}, &CollectError{err}
	}
	r.rec.Collected = r.now()
	r.save()
	r.emit(got.event())
	// The pod may go now: the watchdog deletes it on this marker should
	// the caller's delete fail. It is the last thing Collect does, so that
	// a Delete right after it is not raced by the watchdog for longer than
	// it must be.
	if err := r.put(ctx, watchdog.Retrieved, ""); err != nil {
		r.warn(err)
	}
	if r.rec.Results.RequireOutputs && got.Outputs == 0 {
		return got, fmt.Errorf("%w: %s/%s on the pod held no file", ErrNoOutputs, r.rec.RunDir, jobctl.OutputsDir)
	}
	return got, nil
}

// Download is Collect without the retrieved marker, for a job that may still
// run; an output file rewritten meanwhile fails with podssh.ErrChecksum.
func (r *Run) Download(ctx context.Context, dir string) (Collected, error) {
	got, err := r.fetch(ctx, dir, false)
	if err != nil {
		return Collected{}, err
	}
	r.emit(got.event())
	return got, nil
}

// fetch downloads the result files into dir, holding the lease while it
// does when hold says so.
func (r *Run) fetch(ctx context.Context, dir string, hold bool) (Collected, error) {
	if err := r.liveConn(ctx); err != nil {
		return Collected{}, err
	}
	release := func() {}
	if hold {
		release = r.holdLease(ctx)
	}
	req := podssh.DownloadRequest{RemoteDir: r.rec.RunDir, Names: resultNames, Exclude: r.rec.Results.Exclude,
		Dir: dir, MaxBytes: r.rec.Results.maxBytes(), Growing: growingNames}
	var x podssh.Extracted
	download := func() error {
		return r.transfer(StageDownload, func(progress podssh.Progress) error {
			req := req
			req.Progress = progress
			var err error
			x, err = r.conn.Download(ctx, req)
			return err
		})
	}
	err := download()
	if errors.Is(err, podssh.ErrChecksum) {
		r.warn(fmt.Errorf("%w: downloading them again", err))
		if err = download(); errors.Is(err, podssh.ErrChecksum) {
			err = fmt.Errorf("a second download still differs: %w", err)
		}
	}
	release()
	// A failed download may have written the logs already.
	r.redactFiles(dir, growingNames)
	if err != nil {
		return Collected{}, err
	}
	if x.Unchecked {
		r.warn(errors.New("the pod has neither sha256sum nor busybox: the downloaded results were not checked"))
	}
	return Collected{Dir: dir, Files: x.Files, Dirs: x.Dirs, Bytes: x.Bytes, Skipped: x.Skipped,
		Outputs: x.PerName[jobctl.OutputsDir], Unchecked: x.Unchecked}, nil
}

func (c Collected) event() Event {
	return Event{Kind: EventCollected, Dir: c.Dir, Files: c.Files, Bytes: c.Bytes, Skipped: c.Skipped}
}

// Delete deletes the pod (else terminates or stops it) and the secret and
// records the cost, for up to three minutes past ctx's end, until the API
// no longer shows the pod (else *DeleteUnconfirmedError). A pod that could
// only be stopped still bills for its volume.
func (r *Run) Delete(ctx context.Context) (runpod.DeleteResult, error) {
	return r.teardownCtx(ctx, r.endPhase(PhaseFailed))
}

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
		// longer runs: nothing but this client would delete it.
		r.emit(Event{Kind: EventFailed, Err: err, Then: ThenDelete})
		r.rec.Note = err.Error()
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

// teardown deletes the pod and the secret, whatever ctx says.
func (r *Run) teardown(phase Phase) runpod.DeleteResult {
	res, _ := r.teardownCtx(context.Background(), phase)
	return res
}

func (r *Run) teardownCtx(ctx context.Context, phase Phase) (runpod.DeleteResult, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
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
// started run with uncollected results needs WithForce (ErrNotCollected).
func Remove(ctx context.Context, c *runpod.Client, rec Record, opts ...Option) (Record, runpod.DeleteResult, error) {
	return remove(ctx, c, rec, opts...)
}

func remove(ctx context.Context, c api, rec Record, opts ...Option) (Record, runpod.DeleteResult, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := CheckRunID(rec.ID); err != nil {
		return rec, runpod.NotDeleted, &FieldError{Field: "Record.ID", Reason: err.Error()}
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
	if !cfg.force && !rec.JobStarted.IsZero() && rec.Collected.IsZero() && r.rec.PodID != "" {
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
