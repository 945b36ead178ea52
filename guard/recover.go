package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Recovery: a run whose pod was lost under its job goes on on a new pod,
// one pod at a time, from the newest outputs pulled during the run
// (Recover.PullEvery), within the run's deadline and cost cap across its pods.

// Recoverable says a run that failed with err may go on: its pod died by
// no rule (EXITED, ERROR), its bootstrap or verdict failed, or its job was
// lost.
func Recoverable(err error) bool {
	var gone *PodGoneError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrEnforced):
		return false
	case errors.As(err, &gone):
		return gone.DeleteReason == "" && stillBills(gone.Status)
	case errors.Is(err, ErrVerdictFailed), errors.Is(err, ErrJobLost):
		return true
	}
	return false
}

// Recoverable says a new pod may resume the job, lost with its container.
func (e End) Recoverable() bool { return e.How == HowLost || e.How == HowRunDirLost }

// Relaunch makes the next pod of prev's run once its lost pod is confirmed
// gone (see Recovery), as Launch does, within the run's deadline and cost
// cap; spec's ResumeFrom is the newest pull (PulledOutputs), why how the pod
// ended.
func Relaunch(ctx context.Context, c *runpod.Client, prev Record, spec Spec, why string, opts ...Option) (*Run, error) {
	if c == nil {
		return nil, &podenv.FieldError{Field: "api", Reason: "is nil"}
	}
	return relaunch(ctx, c, prev, spec, why, opts...)
}

func relaunch(ctx context.Context, c api, prev Record, spec Spec, why string, opts ...Option) (*Run, error) {
	if err := prev.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecordMismatch, err)
	}
	if prev.APIURL != "" && prev.APIURL != c.BaseURL() {
		return nil, fmt.Errorf("%w: run %s was created at %s, not %s", ErrRecordMismatch, prev.ID, prev.APIURL, c.BaseURL())
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	old := &Run{api: c, cfg: cfg, rec: prev}
	if err := old.goneForGood(ctx); err != nil {
		return nil, fmt.Errorf("recovering run %s: no new pod is made while the last one may still exist: %w", prev.ID, err)
	}
	var kept keptHost
	if prev.NetworkVolumeID != "" {
		// The run directory on the volume is claimed by the run's host
		// key: the new pod gets the same, from the secret still there.
		sec, err := c.FindSecret(ctx, prev.SecretName)
		if err != nil {
			return nil, fmt.Errorf("recovering run %s on network volume %s: its host key secret %s: %w (a new pod could not claim its run directory)",
				prev.ID, prev.NetworkVolumeID, prev.SecretName, err)
		}
		kept = keptHost{claim: prev.HostKey, secretID: sec.ID}
		// The outputs there are the job's newest: an upload of a pull
		// would go over them.
		spec.Job.ResumeFrom = ""
	} else {
		// The lost pod's secret, when its delete failed: the new pod gets
		// a new host key under the same name.
		old.deleteSecret(ctx)
	}
	ended := old.now()
	if !prev.Ended.IsZero() {
		ended = prev.Ended
	}
	attempts := slices.Clone(prev.Attempts)
	for i := range attempts {
		if a := &attempts[i]; a.PodID == prev.PodID && a.PodID != "" && a.Ended == "" {
			a.Ended = why
			if a.Ended == "" {
				a.Ended = "lost"
			}
			a.CostUSD = costplan.Spent(prev.CostPerHr, prev.BillingStart, ended)
		}
	}
	// The run's deadline and cap hold across its pods.
	spec.RunID, spec.Deadline, spec.MaxCostUSD, spec.Keep = prev.ID, prev.Deadline, prev.MaxCostUSD, prev.Keep
	spec.KeepIdle, spec.KeepUnbounded = prev.KeepIdle, prev.KeepUnbounded
	spec.DeadlineFromCreate = false
	recovery := prev.Recovery
	return launch(ctx, c, spec, append(opts, func(c *config) { c.prior, c.recovery, c.keptHost, c.worst = attempts, recovery, kept, prev.WorstCase })...)
}

// keptHost is the run's host key, public half and secret, that the next
// pod of a run on a network volume gets.
type keptHost struct{ claim, secretID string }

// goneForGood makes sure no pod of the run is left: the Record's, and
// any under the run's name (a create whose answer was lost), each deleted
// and confirmed gone.
func (r *Run) goneForGood(ctx context.Context) (err error) {
	if r.rec.PodID != "" && r.stillListed(ctx) != "" {
		if _, err := r.deletePod(ctx); err != nil {
			return err
		}
	}
	pods, err := r.api.ListPods(ctx, runpod.ListPodsOptions{Name: r.rec.PodName})
	if err != nil {
		return fmt.Errorf("listing the run's pods: %w", err)
	}
	pods, unknown := r.runPods(pods)
	defer func() {
		if err == nil && unknown != nil {
			err = fmt.Errorf("a listed pod that may be the run's cannot be read: %w", unknown)
		}
	}()
	for _, p := range pods {
		if p.Status == runpod.StatusTerminated {
			continue
		}
		r.rec.PodID = p.ID
		if _, err := r.deletePod(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Recovery says how Follow goes on with a job whose pod was lost: on that pod
// if a volume kept its run directory, else on new pods one at a time within
// the deadline and cost cap, from the newest pull or its network volume.
// Rules, snapshots and cancels are final.
type Recovery struct {
	Times   int  `json:"times,omitempty"`    // how many recoveries the run may make (new pods, restarts in place); 0 recovers nothing
	OnError bool `json:"on_error,omitempty"` // also recover a job that exited non-zero, from what it left
	// PullEvery pulls the outputs so far into PullDir while the job runs (Pull), for the next pod; PullDir alone is OnError's.
	PullEvery time.Duration `json:"pull_every,omitempty"`
	PullDir   string        `json:"pull_dir,omitempty"`
}

// checkRecover reports what of Spec.Recover cannot be armed.
func (s Spec) checkRecover(bad func(field, format string, args ...any)) {
	rc := s.Recover
	if rc.Times < 0 {
		bad("Recover.Times", "%d is negative", rc.Times)
	}
	if rc.PullEvery < 0 {
		bad("Recover.PullEvery", "%s is negative", rc.PullEvery)
	}
	if rc.PullEvery > 0 && rc.PullDir == "" {
		bad("Recover.PullDir", "is empty: PullEvery needs a directory to pull into")
	}
}

// RecoveryState is where a run's recovery stands, in its Record.
type RecoveryState struct {
	Recovery
	Made      int    `json:"made,omitempty"`      // recoveries made: new pods after lost ones, restarts in place
	Replacing string `json:"replacing,omitempty"` // the lost pod, until the new job runs: Attach finishes it
	Why       string `json:"why,omitempty"`       // how the last lost pod ended
	Spec      Spec   `json:"spec"`                // the run's, without the job's secrets
}

// recoveryOf is the state a run launched with spec starts with.
func recoveryOf(spec Spec) RecoveryState {
	if spec.Recover.Times <= 0 && spec.Recover.PullEvery <= 0 {
		return RecoveryState{}
	}
	spec.Job.Secrets = nil
	spec.PodEnv = maps.Clone(spec.PodEnv)
	return RecoveryState{Recovery: spec.Recover, Spec: spec}
}

// WithSecrets gives an attached Run the job's secrets, for a recovery.
func WithSecrets(secrets map[string]string) Option {
	return func(c *config) { c.secrets = maps.Clone(secrets) }
}

// mayRecover says the run may go on on a new pod after its follow ended
// with end and err: a pod lost under the job, a job lost with its
// container, a job that failed by itself with OnError. An ending by a
// rule, a snapshot request (the user's stop, the cost cap, the deadline,
// a full disk), a cancel or ctx never is, nor past Times.
func (r *Run) mayRecover(ctx context.Context, end End, err error) bool {
	st := r.rec.Recovery
	switch {
	case st.Times <= 0 || st.Made >= st.Times || ctx.Err() != nil || r.rec.Keep:
		return false
	case r.last.Request != "":
		return false
	case err != nil:
		return Recoverable(err)
	case end.How == HowExited && end.ExitCode != 0:
		return st.OnError
	}
	return end.Recoverable()
}

// recover starts a job lost with its pod's container again on the same
// pod, from its outputs in the run directory the volume kept; else it
// replaces the run's lost pod by a new one and starts the job there, from
// the newest pull (or the Job's ResumeFrom), pulled from the lost pod
// first while it still answers: the lost pod is confirmed deleted first,
// the new one made under the run's deadline and cost cap (Relaunch). A
// new pod whose bootstrap, verdict or start fails on its host counts as
// one more recovery. On success r is the new pod's Run.
func (r *Run) recover(ctx context.Context, end End, why error) error {
	if end.How == HowLost {
		// The volume kept the run directory: the job goes on there.
		err := r.restartHere(ctx, why)
		if err == nil || ctx.Err() != nil {
			return err
		}
		r.warn(fmt.Errorf("the job cannot start again on pod %s (%w): a new pod takes it up", r.rec.PodID, err))
	}
	if dir := r.pullDir(); dir != "" && end.How != HowRunDirLost && r.rec.NetworkVolumeID == "" && r.answers(ctx) {
		// The lost pod still answers with the job's newest outputs (a
		// job that failed by itself, one lost with a container whose
		// pod cannot go on): the next pod takes them up. On a network
		// volume they stay there for it.
		if _, err := r.Pull(ctx, dir); err != nil {
			r.warn(fmt.Errorf("pulling the outputs before recovering (the last pull is used): %w", err))
		}
	}
	// A failure is told once: by the launch or the start that failed, or
	// here.
	told, events := false, r.cfg.events
	r.cfg.events = func(e Event) {
		told = told || e.Kind == EventFailed
		events(e)
	}
	defer func() { r.cfg.events = events }()
	if r.rec.NetworkVolumeID != "" {
		// Every pod of the run on the volume claims its run directory
		// with the run's host key: a new pod that fails leaves its
		// secret to the next one.
		r.cfg.holdSecret = true
		defer func() { r.cfg.holdSecret = false }()
	}
	for {
		st := &r.rec.Recovery
		st.Made++
		st.Replacing, st.Why = r.rec.PodID, why.Error()
		r.rec.Phase = PhaseRecovering
		r.save()
		err := r.nextPod(ctx)
		if err == nil {
			err = r.Start(ctx, Job{Dir: r.rec.JobDir, Command: r.rec.Command, ResumeFrom: r.rec.ResumeFrom, Secrets: r.cfg.secrets})
		}
		if err == nil {
			return nil
		}
		if !r.mayRecover(ctx, End{}, err) {
			if ctx.Err() == nil {
				// Over: an Attach has no recovery to finish. One cut
				// short by ctx (Ctrl-C) is left for an Attach.
				r.rec.Recovery.Replacing = ""
				r.save()
				if r.cfg.holdSecret {
					r.cfg.holdSecret = false
					r.deleteSecret(context.WithoutCancel(ctx))
				}
				if !told {
					r.emit(Event{Kind: EventFailed, Err: err, Then: ThenNothing})
				}
			}
			return err
		}
		told, why = false, err
	}
}

// restartHere starts a job lost with its pod's container again on the
// same pod, in its run directory, from the outputs it left there: no new
// pod, no boot paid again. The restarted container's watchdog must be
// ready to guard it (its verdict), and the run directory must hold the
// lost job (jobctl.RestartCommand). It counts as one recovery once the
// job runs.
func (r *Run) restartHere(ctx context.Context, why error) error {
	if _, err := r.waitVerdict(ctx); err != nil {
		return err
	}
	st := &r.rec.Recovery
	r.emit(Event{Kind: EventRecovering, Err: why, N: st.Made + 1, Of: st.Times, InPlace: true,
		Remote: jobctl.RunFile(r.rec.RunDir, jobctl.OutputsDir)})
	in, err := jobctl.JobInput(r.rec.jobDefaults(), r.cfg.secrets)
	if err != nil {
		return fmt.Errorf("the job's environment: %w", err)
	}
	defer r.holdLease(ctx)()
	sctx, cancel := context.WithTimeout(ctx, shortCommand)
	defer cancel()
	out, err := r.conn.Output(sctx, jobctl.RestartCommand(r.rec.RunDir, podenv.JobEnv), in)
	if err != nil {
		return fmt.Errorf("starting the job again: %w", err)
	}
	pid, _ := strconv.Atoi(jobctl.LastLine(out))
	r.emit(Event{Kind: EventJobStarted, PID: pid, Command: r.rec.Command})
	st.Made++
	st.Why = why.Error()
	r.rec.JobStarted, r.rec.Phase = r.now(), PhaseRunning
	r.save()
	return nil
}

// answers says the pod's SSH answers, or does again within a short wait.
func (r *Run) answers(ctx context.Context) bool {
	return r.addr != "" && r.liveConn(ctx) == nil
}

// nextPod makes the run's next pod, once its lost one is confirmed gone,
// and makes r its Run; the job is not started.
func (r *Run) nextPod(ctx context.Context) error {
	st := r.rec.Recovery
	spec := st.Spec
	spec.Job.ResumeFrom = r.rec.ResumeFrom
	if dir := r.pullDir(); dir != "" {
		if out := PulledOutputs(dir); out != "" {
			spec.Job.ResumeFrom = out
		}
	}
	ev := Event{Kind: EventRecovering, Err: errors.New(st.Why), N: st.Made, Of: st.Times}
	if r.rec.NetworkVolumeID != "" {
		// The outputs are on the volume, newer than any pull: nothing
		// goes up over them.
		spec.Job.ResumeFrom = ""
		ev.VolumeID, ev.Remote = r.rec.NetworkVolumeID, jobctl.RunFile(r.rec.RunDir, jobctl.OutputsDir)
	}
	ev.Dir, ev.Proof = spec.Job.ResumeFrom, proofIn(spec.Job.ResumeFrom)
	r.emit(ev)
	r.stopPodLog()
	r.dropConn()
	secrets := r.cfg.secrets
	nr, err := r.relaunchHere(ctx, spec)
	if err != nil {
		return err
	}
	*r = *nr
	r.cfg.secrets = secrets
	return nil
}

// relaunchHere makes the run's next pod with r's options. A launch that
// fails leaves r's Record as the launch last saved it (its pods deleted),
// so that the next recovery, or an Attach, takes up from there.
func (r *Run) relaunchHere(ctx context.Context, spec Spec) (*Run, error) {
	cfg := r.cfg
	latest, inner := r.rec, cfg.save
	cfg.save = func(rec Record) error {
		latest = rec
		if inner != nil {
			return inner(rec)
		}
		return nil
	}
	nr, err := relaunch(ctx, r.api, r.rec, spec, r.rec.Recovery.Why, func(c *config) { *c = cfg })
	if err != nil {
		r.rec = latest
		if r.rec.Phase == PhaseRecovering {
			// Nothing was created: the run ends here.
			r.rec.Phase, r.rec.Note = PhaseFailed, err.Error()
			r.save()
		}
		return nil, err
	}
	nr.cfg.save = inner
	return nr, nil
}

// pendingPod finds, in Attach, the new pod of a recovery that a process
// left under way (RecoveryState.Replacing): adopt says one was made,
// whose id the Record now holds; else none can exist, and Attach makes
// it.
func (r *Run) pendingPod(ctx context.Context) (adopt bool, err error) {
	st := r.rec.Recovery
	if r.rec.PodID != "" && r.rec.PodID != st.Replacing {
		return true, nil
	}
	if r.rec.PodID == st.Replacing {
		// The process ended before the new pod's keys were saved: no
		// pod of them can exist.
		return false, nil
	}
	pods, err := r.api.ListPods(ctx, runpod.ListPodsOptions{Name: r.rec.PodName})
	if err != nil {
		return false, fmt.Errorf("looking for pod %s: %w", r.rec.PodName, err)
	}
	pods, unknown := r.runPods(pods)
	for _, p := range slices.Backward(pods) {
		if p.ID != st.Replacing && p.Status != runpod.StatusTerminated {
			r.rec.PodID = p.ID
			if r.rec.BillingStart.IsZero() {
				r.rec.BillingStart = p.CreatedAt
			}
			return true, nil
		}
	}
	if unknown != nil {
		// It may be the new pod: none is made beside it.
		return false, fmt.Errorf("looking for pod %s: %w", r.rec.PodName, unknown)
	}
	return false, nil
}

// noteAdopted puts the pod a recovery made, and Attach adopted, in the
// Record's attempts when the process that made it ended before it did.
func (r *Run) noteAdopted() {
	for _, a := range r.rec.Attempts {
		if a.PodID == r.rec.PodID {
			return
		}
	}
	r.rec.Attempts = append(r.rec.Attempts, Attempt{GPU: r.rec.GPU, Time: r.rec.BillingStart, Outcome: OutcomeCreated, PodID: r.rec.PodID})
}

// followRecovering is the follow of each pod the run gets (Spec.Recover),
// until the job ends in a way no recovery takes up. failed says a
// recovery failed, which it reported.
func (r *Run) followRecovering(ctx context.Context, w io.Writer) (end End, failed bool, err error) {
	for {
		end, err = r.follow(ctx, w)
		if !r.mayRecover(ctx, end, err) {
			return end, false, err
		}
		if err == nil {
			r.emit(Event{Kind: EventJobEnded, End: end})
		}
		why := err
		if why == nil {
			why = end.Err()
		}
		if err := r.recover(ctx, end, why); err != nil {
			return End{}, true, err
		}
	}
}

// checkResume refuses a Job.ResumeFrom that could not be uploaded whole
// into the job's outputs and collected back: not a directory, a link that
// leads out of it (the pod has no such place) or into nothing, a special
// file, or more bytes than the results' cap (the run could then never
// bring its outputs home).
func (j Job) checkResume(prefix string, maxBytes int64) []error {
	if j.ResumeFrom == "" {
		return nil
	}
	bad := func(format string, args ...any) []error {
		return []error{&podenv.FieldError{Field: prefix + "ResumeFrom", Reason: fmt.Sprintf(format, args...)}}
	}
	root, err := filepath.EvalSymlinks(j.ResumeFrom)
	if err != nil {
		return bad("%s: %v", j.ResumeFrom, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return bad("%s is not a directory", j.ResumeFrom)
	}
	var size int64
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch t := d.Type(); {
		case t.IsDir():
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			size += info.Size()
		case t&fs.ModeSymlink != 0:
			to, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("the link %s leads nowhere: %w", p, err)
			}
			if rel, err := filepath.Rel(root, to); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return fmt.Errorf("the link %s leads out of it, to %s", p, to)
			}
		default:
			return fmt.Errorf("%s is not a regular file, directory or link", p)
		}
		return nil
	})
	if err != nil {
		return bad("%v", err)
	}
	if size > maxBytes {
		return bad("%s holds %s, more than the results' cap of %s (Results.MaxGB): the run could not collect them back",
			j.ResumeFrom, termtext.ByteSize(size), termtext.ByteSize(maxBytes))
	}
	return nil
}

// resumeEvent tells what of Job.ResumeFrom went into the outputs.
func (r *Run) resumeEvent(dir string) {
	files, size, err := podssh.TreeSize(dir)
	if err != nil {
		r.warn(fmt.Errorf("counting the resumed outputs: %w", err))
	}
	r.emit(Event{Kind: EventResumed, Dir: dir, Remote: jobctl.RunFile(r.rec.RunDir, jobctl.OutputsDir), Files: files, Bytes: size, Proof: proofIn(dir)})
}
