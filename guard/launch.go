package guard

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Launch makes the run's keys, secret and pod, and returns once the watchdog
// is armed: from then on the watchdog alone ends the pod by its rules. A bad
// Spec fails before any pod exists (*podenv.FieldError). GPU types are tried in
// order (Runpod does not fall back): one without capacity, refused for its
// pool or whose pod did not come up gives way to the next; any other error
// stops, so one launch never makes two pods. A later failure or an ended ctx
// deletes the pod (see WithLeaveOnFailure, WithDetachOnCancel).
func Launch(ctx context.Context, c *runpod.Client, spec Spec, opts ...Option) (*Run, error) {
	if c == nil {
		return nil, &podenv.FieldError{Field: "api", Reason: "is nil"}
	}
	return launch(ctx, c, spec, opts...)
}

// Check reports what Launch would refuse of spec and opts before any call
// to the API: each bad field or option a *podenv.FieldError, joined. The
// look-ups Launch makes (a network volume, the GPU types and their
// prices) may refuse more.
func Check(spec Spec, opts ...Option) error {
	_, _, _, err := prepare(spec, opts)
	return err
}

// prepare applies opts and the Spec's defaults, and checks both.
func prepare(spec Spec, opts []Option) (Spec, config, time.Time, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.check(); err != nil {
		return spec, cfg, time.Time{}, err
	}
	now := cfg.clock.Now()
	if spec.RunID == "" {
		id, err := podenv.NewRunID(now)
		if err != nil {
			return spec, cfg, now, err
		}
		spec.RunID = id
	}
	spec = spec.withDefaults()
	if err := spec.check(now); err != nil {
		return spec, cfg, now, err
	}
	if ttl := spec.EffectiveRules().LeaseTTL; cfg.leaseEvery >= ttl {
		return spec, cfg, now, &podenv.FieldError{Field: "WithLeaseEvery", Reason: fmt.Sprintf("%s is not shorter than the lease's lifetime (%s)", cfg.leaseEvery, ttl)}
	}
	return spec, cfg, now, nil
}

func launch(ctx context.Context, c api, spec Spec, opts ...Option) (*Run, error) {
	spec, cfg, now, err := prepare(spec, opts)
	if err != nil {
		return nil, err
	}
	r, settings := newRun(c, spec, cfg)
	volDC, err := r.onNetworkVolume(ctx, spec, &settings)
	if err != nil {
		return nil, err
	}
	cands, err := r.planCandidates(ctx, spec, volDC, settings, now)
	if err != nil {
		return nil, err
	}
	host, env, err := r.makeKeys(spec, &settings)
	if err != nil {
		return nil, err
	}
	r.save()
	r.warnUnguarded(ctx)
	if host != nil {
		if err := r.hostSecret(ctx, host); err != nil {
			return nil, err
		}
	}
	return r.create(ctx, spec, settings, createRequest(spec, r.rec.PodName, env), cands, host, volDC, now)
}

// newRun is the run before anything exists: its Record from the Spec and
// the options, and the pod's settings.
func newRun(c api, spec Spec, cfg config) (*Run, podenv.Settings) {
	r := &Run{api: c, cfg: cfg}
	if s := spec.Job.secrets(); len(s) > 0 {
		// For a Start that names no job, and a recovery's on a new pod.
		r.cfg.secrets = s
	}
	r.rec = Record{
		ID: spec.RunID, APIURL: c.BaseURL(),
		PodName: podenv.PodName(spec.RunID), SecretName: podenv.HostKeySecretName(spec.RunID),
		JobDir: spec.Job.Dir, Command: spec.Job.Command, ResumeFrom: spec.Job.ResumeFrom,
		Plan: podenv.Plan{Rules: spec.Rules}, Poll: cfg.poll, LeaseEvery: cfg.leaseEvery,
		Results: spec.Results, Phase: PhaseCreating, Attempts: slices.Clone(cfg.prior),
		Recovery: cfg.recovery, PodVolumeGB: spec.VolumeGB,
	}
	if r.rec.Recovery.Times == 0 && r.rec.Recovery.PullEvery == 0 {
		r.rec.Recovery = recoveryOf(spec)
	}
	r.cfg.pullFromRecovery(r.rec.Recovery.Recovery)
	settings := podenv.Settings{
		RunID: spec.RunID, Workdir: spec.Workdir, Rules: spec.Rules, APIURL: spec.WatchdogAPIURL,
		PodVolumeGB: spec.VolumeGB,
	}
	if settings.APIURL == "" {
		settings.APIURL = c.BaseURL()
	}
	return r, settings
}

// onNetworkVolume reads the Spec's network volume into the settings and
// the Record, and returns its data center ("" without one).
func (r *Run) onNetworkVolume(ctx context.Context, spec Spec, settings *podenv.Settings) (string, error) {
	if spec.NetworkVolumeID == "" {
		return "", nil
	}
	v, err := r.api.GetNetworkVolume(ctx, spec.NetworkVolumeID)
	if err != nil {
		return "", &podenv.FieldError{Field: "Spec.NetworkVolumeID", Reason: fmt.Sprintf("network volume %s: %v", spec.NetworkVolumeID, err)}
	}
	settings.VolumeDir, settings.VolumeGB = spec.VolumePath, v.SizeGB
	r.rec.NetworkVolumeID, r.rec.VolumeDir, r.rec.VolumeGB = spec.NetworkVolumeID, spec.VolumePath, v.SizeGB
	r.rec.MaxVolumeGB, r.rec.NoVolumeCaches = spec.MaxVolumeGB, spec.NoVolumeCaches
	if !spec.Deadline.IsZero() {
		// The run directory on the volume is claimed by the run's
		// host key, which a recovery's pod gets from the secret
		// (Relaunch) at any time until the run's last pod may end,
		// however long after the lost pod went. The description
		// tells a sweeper so: it counts its grace for a secret with
		// no pod from the run's start, and would take the key from
		// a run whose pod was lost past that grace.
		until := spec.HardEnd()
		if spec.DeadlineFromCreate {
			until = until.Add(spec.CapacityWait)
		}
		r.hostDesc = podenv.HostKeySecretDescription(spec.RunID, until)
	}
	return v.DataCenterID, nil
}

// planCandidates is the GPU types to try, in order, priced when a cost
// cap needs their price, with the run's worst case planned on them.
func (r *Run) planCandidates(ctx context.Context, spec Spec, volDC string, settings podenv.Settings, now time.Time) ([]candidate, error) {
	cands, err := planGPUs(ctx, r.api, spec, volDC)
	if err != nil && (spec.CapacityWait == 0 || !errors.Is(err, ErrNoGPU) || errors.Is(err, errNoType)) {
		return nil, err
	}
	if err := checkPrices(ctx, r.api, spec, cands); err != nil {
		return nil, err
	}
	if r.rec.WorstCase = r.cfg.worst; r.rec.WorstCase == nil {
		worst := worstCase(ctx, r.api, spec, cands, settings.VolumeGB, now, nil)
		r.rec.WorstCase = &worst
	}
	r.rec.RunDir = settings.RunDir()
	return cands, nil
}

// makeKeys makes the run's client key and its host key, or takes the
// run's host key over on a recovery on its network volume (host nil: the
// run's secret holds it already), into the settings and the Record, and
// returns the pod's env.
func (r *Run) makeKeys(spec Spec, settings *podenv.Settings) (host *podssh.Key, env map[string]string, err error) {
	if r.key, err = podssh.NewKey(); err != nil {
		return nil, nil, err
	}
	if kept := r.cfg.keptHost; kept.claim != "" {
		// A recovery on the run's network volume: the new pod gets the
		// run's host key from the secret still there, so that its claim
		// on the run directory is the run's, and takes the directory
		// over from the lost pod (podenv's TakeOver).
		if r.host, err = podssh.ParsePublicKey(kept.claim); err != nil {
			return nil, nil, &podenv.FieldError{Field: "Record.HostKey", Reason: err.Error()}
		}
		settings.Claim, settings.TakeOver, r.rec.SecretID = kept.claim, true, kept.secretID
	} else {
		if host, err = podssh.NewKey(); err != nil {
			return nil, nil, err
		}
		r.host = host.Public
		settings.Claim = host.AuthorizedKey("")
	}
	settings.AuthorizedKey = r.key.AuthorizedKey(r.rec.PodName)
	r.rec.HostKey = settings.Claim
	if env, err = settings.Env(); err != nil {
		return nil, nil, fmt.Errorf("guard: the pod's env: %w", err)
	}
	maps.Copy(env, spec.PodEnv)
	clientPEM, err := r.key.PrivatePEM(r.rec.PodName)
	if err != nil {
		return nil, nil, err
	}
	r.rec.ClientKey = PEM(clientPEM)
	return host, env, nil
}

// createRequest is the pod's create call, the bootstrap its entrypoint.
func createRequest(spec Spec, name string, env map[string]string) runpod.CreatePodRequest {
	req := runpod.CreatePodRequest{
		Name: name, Image: spec.Image, GPUCount: spec.GPUCount,
		Cloud: spec.Cloud, ContainerDiskGB: spec.DiskGB, MinCUDA: spec.cudaFloor(),
		Ports: []string{"22/tcp"}, Env: env, RegistryAuthID: spec.RegistryAuthID,
		// The bootstrap is the entrypoint: the image's own ENTRYPOINT, which
		// may ignore a command sent behind it, never runs (see package
		// bootstrap).
		Entrypoint: bootstrap.Entrypoint(), Cmd: bootstrap.Cmd(),
	}
	if spec.VolumeGB > 0 {
		req.PersistentVolume = &runpod.PersistentMount{SizeGB: spec.VolumeGB, Path: spec.VolumePath}
	}
	if spec.NetworkVolumeID != "" {
		req.NetworkVolume = &runpod.NetworkMount{VolumeID: spec.NetworkVolumeID, Path: spec.VolumePath}
	}
	return req
}

// create tries the GPU types in order, and waits for capacity between
// rounds when the Spec allows it, until a pod is up or the launch stops.
func (r *Run) create(ctx context.Context, spec Spec, settings podenv.Settings, req runpod.CreatePodRequest, cands []candidate, host *podssh.Key, volDC string, now time.Time) (*Run, error) {
	var err error
	w := &capacityWait{limit: spec.CapacityWait, start: now, deadlineAsked: spec.Deadline}
	if !spec.DeadlineFromCreate {
		w.deadline = spec.Deadline
	}
	for {
		from := len(r.rec.Attempts)
		for i, cand := range cands {
			last := i == len(cands)-1
			err := r.tryGPU(ctx, req, cand, spec, last)
			switch {
			case err == nil:
				return r, nil
			case errors.Is(err, errNextGPU) && !last:
				continue
			case errors.Is(err, errNextGPU) && w.limit > 0 && outOfCapacity(r.rec.Attempts[from:]):
				// Wait for capacity below.
			case errors.Is(err, errNextGPU):
				return nil, r.createFailed(ctx, r.noneLeft(r.rec.Attempts[from:], err))
			case errors.As(err, new(*createError)):
				return nil, r.createFailed(ctx, errors.Unwrap(err))
			case ctx.Err() != nil && r.cfg.detachOnCancel:
				r.Detach()
				return r, err
			case ctx.Err() != nil:
				r.rec.Note = "interrupted"
				r.teardown(PhaseFailed)
				return nil, err
			default:
				if left := r.fail(ctx, err); left {
					return r, err
				}
				return nil, err
			}
		}
		if w.limit == 0 {
			return nil, r.createFailed(ctx, fmt.Errorf("%w: no GPU type to try", ErrNoGPU))
		}
		if cands, err = r.waitForCapacity(ctx, w, spec, volDC); err != nil {
			return nil, r.createFailed(ctx, err)
		}
		if err := r.secretAfterWait(ctx, host); err != nil {
			return nil, err
		}
		if spec.DeadlineFromCreate && !spec.Deadline.IsZero() {
			// The run's time counts from its pod's create: the wait
			// moves the deadline on by as long as it took.
			spec.Deadline = w.deadlineAsked.Add(r.since(w.start)).Truncate(time.Second)
			settings.Deadline, r.rec.Deadline = spec.Deadline, spec.Deadline
			if req.Env, err = settings.Env(); err != nil {
				return nil, r.createFailed(ctx, fmt.Errorf("guard: the pod's env: %w", err))
			}
			maps.Copy(req.Env, spec.PodEnv)
			r.save()
		}
	}
}

// hostSecret puts the host key's private half into Runpod's secret store
// and nowhere else: not to the pod's env (which holds a placeholder), nor
// to this machine's disk, nor to the Record.
func (r *Run) hostSecret(ctx context.Context, host *podssh.Key) error {
	hostPEM, err := host.PrivatePEM(r.rec.PodName)
	if err != nil {
		return err
	}
	sec, err := r.api.CreateSecretWithDescription(ctx, r.rec.SecretName, base64.StdEncoding.EncodeToString(hostPEM), r.hostDesc)
	clear(hostPEM)
	if err != nil {
		return r.createFailed(ctx, fmt.Errorf("creating the host key secret: %w", err))
	}
	r.rec.SecretID = sec.ID
	r.save()
	return nil
}

// secretAfterWait makes sure the host key secret is still there when a
// wait for capacity ends: a sweeper deletes the secret of a run that has
// had no pod for its secret grace (an hour by default), and the wait may
// have been longer. A secret of this launch's own key is made again; a
// kept one (a recovery on a network volume) cannot be, and no pod is made
// that could not claim the run directory. (A volume run's secret states
// how long the run needs it, which a sweeper of this SDK honours; one made
// before that, or deleted by hand, is still gone.)
func (r *Run) secretAfterWait(ctx context.Context, host *podssh.Key) error {
	_, err := r.api.FindSecret(ctx, r.rec.SecretName)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, runpod.ErrNotFound):
		return r.createFailed(ctx, fmt.Errorf("reading the host key secret %s after the wait for capacity: %w", r.rec.SecretName, err))
	case host == nil:
		return r.createFailed(ctx, fmt.Errorf("the host key secret %s was deleted during the wait for capacity (a sweeper's secret grace?): a new pod could not claim the run directory: %w", r.rec.SecretName, err))
	}
	r.warn(fmt.Errorf("the host key secret %s was deleted during the wait for capacity (a sweeper's secret grace?): made again", r.rec.SecretName))
	return r.hostSecret(ctx, host)
}

// checkPrices makes sure the price of each candidate is known when the
// run has a cost cap: the cap is planned on the pod's price, and a price
// that cannot be known would leave it unarmed.
func checkPrices(ctx context.Context, c api, spec Spec, cands []candidate) error {
	if spec.MaxCostUSD <= 0 {
		return nil
	}
	for _, cand := range cands {
		if cand.cpu {
			// Planned on the price the create answers.
			continue
		}
		if err := checkPrice(ctx, c, spec, cand.gpu); err != nil {
			return err
		}
	}
	return nil
}

func (c config) check() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"WithPoll", c.poll}, {"WithLeaseEvery", c.leaseEvery}, {"WithStartTimeout", c.startTimeout}, {"WithVerdictTimeout", c.verdictTimeout}} {
		if d.v <= 0 {
			errs = append(errs, &podenv.FieldError{Field: d.name, Reason: fmt.Sprintf("%s is not positive", d.v)})
		}
	}
	return errors.Join(errs...)
}

// checkPrice makes sure the GPU type's price is known, so the cost cap
// can be planned.
func checkPrice(ctx context.Context, c api, spec Spec, gpu string) error {
	g, err := c.GetGPUType(ctx, gpu)
	if err != nil {
		return &podenv.FieldError{Field: "Spec.MaxCostUSD", Reason: fmt.Sprintf("the price of GPU type %q is unknown (%v): the cost cap could not be planned", gpu, err)}
	}
	if price, ok := g.PricePerHour(spec.Cloud, spec.GPUCount); !ok || !(price > 0) || math.IsInf(price, 0) {
		return &podenv.FieldError{Field: "Spec.MaxCostUSD", Reason: fmt.Sprintf("GPU type %q has no price on the %s cloud: the cost cap could not be planned", gpu, spec.Cloud)}
	}
	return nil
}

// warnUnguarded tells of the account's guarded pods that nothing will
// delete: EXITED or ERROR, their watchdogs no longer run, and they bill.
// A failed listing only goes to the log: it is no reason not to launch.
func (r *Run) warnUnguarded(ctx context.Context) {
	pods, err := r.api.ListPods(ctx, runpod.ListPodsOptions{NamePrefix: podenv.PodNamePrefix})
	if err != nil {
		r.cfg.log.Debug("guard: listing the account's pods", "err", err)
		return
	}
	var left []string
	for _, p := range pods {
		if Abandoned(p.Status) {
			left = append(left, fmt.Sprintf("%s (%s, %s)", p.ID, p.Name, p.Status))
		}
	}
	if len(left) > 0 {
		r.warn(fmt.Errorf("%d guarded pods of this account bill and nothing will delete them, their watchdogs no longer running: %s; "+
			"delete them (Remove, RemoveOrphan, launch rm, or the Runpod console)", len(left), strings.Join(left, ", ")))
	}
}

// createFailed cleans up after a failed create: a pod that may exist
// under the run's name (an interrupted or unanswered create) and the
// secret.
func (r *Run) createFailed(ctx context.Context, err error) error {
	r.emit(Event{Kind: EventFailed, Err: err, Then: ThenDelete})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if r.rec.SecretID != "" {
		if pods, lerr := r.api.ListPods(ctx, runpod.ListPodsOptions{Name: r.rec.PodName}); lerr != nil {
			r.warn(fmt.Errorf("could not check whether pod %s exists: %w", r.rec.PodName, lerr))
		} else {
			pods, unknown := r.runPods(pods)
			for _, p := range pods {
				r.rec.PodID = p.ID
				r.deletePod(ctx)
			}
			if unknown != nil {
				r.warn(fmt.Errorf("could not check whether pod %s exists: %w", r.rec.PodName, unknown))
			}
		}
	}
	r.deleteSecret(ctx)
	r.rec.Phase = PhaseFailed
	r.rec.Note = err.Error()
	r.save()
	return err
}

// Attach rebuilds a Run from its Record in another process, once its pod is
// found to be the Record's run (ErrRecordMismatch) holding its host key
// (podssh.ErrHostKeyMismatch). When ctx ends, the pod stays.
func Attach(ctx context.Context, c *runpod.Client, rec Record, opts ...Option) (*Run, error) {
	if c == nil {
		return nil, &podenv.FieldError{Field: "api", Reason: "is nil"}
	}
	return attach(ctx, c, rec, opts...)
}

func attach(ctx context.Context, c api, rec Record, opts ...Option) (*Run, error) {
	cfg := defaultConfig()
	if rec.Poll > 0 {
		cfg.poll = rec.Poll
	}
	if rec.LeaseEvery > 0 {
		cfg.leaseEvery = rec.LeaseEvery
	}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.pullFromRecovery(rec.Recovery.Recovery)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := rec.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecordMismatch, err)
	}
	if rec.APIURL != "" && rec.APIURL != c.BaseURL() {
		return nil, fmt.Errorf("%w: run %s was created at %s, not %s", ErrRecordMismatch, rec.ID, rec.APIURL, c.BaseURL())
	}
	r := &Run{api: c, cfg: cfg, rec: rec}
	r.rec.Poll, r.rec.LeaseEvery = cfg.poll, cfg.leaseEvery
	var err error
	if r.key, err = podssh.ParseKey([]byte(rec.ClientKey)); err != nil {
		return nil, &podenv.FieldError{Field: "Record.ClientKey", Reason: err.Error()}
	}
	if r.host, err = podssh.ParsePublicKey(rec.HostKey); err != nil {
		return nil, &podenv.FieldError{Field: "Record.HostKey", Reason: err.Error()}
	}
	adopted := false
	if rec.Recovery.Replacing != "" {
		// A recovery left under way: its new pod, or a new pod now.
		var err error
		if adopted, err = r.pendingPod(ctx); err != nil {
			return nil, err
		}
		if !adopted {
			if err := r.nextPod(ctx); err != nil {
				return nil, err
			}
			return r, nil
		}
	}
	if err := r.findPod(ctx); err != nil {
		return nil, err
	}
	if adopted {
		r.noteAdopted()
	}
	if err := r.ensure(ctx); err != nil {
		if ctx.Err() != nil {
			r.dropConn()
			return r, err
		}
		if errors.Is(err, podssh.ErrHostKeyMismatch) {
			// Not this Record's pod, or someone in between: nothing is
			// sent to it, and the pod is left to its own watchdog.
			r.dropConn()
			return nil, fmt.Errorf("%w: %w", ErrRecordMismatch, err)
		}
		if left := r.fail(ctx, err); left {
			return r, err
		}
		return nil, err
	}
	if st := r.last; st.Started() && r.rec.JobStarted.IsZero() {
		r.rec.JobStarted = r.now()
	}
	if r.last.Started() && !r.last.Ended() {
		r.rec.Phase = PhaseRunning
	}
	r.save()
	return r, nil
}

// findPod makes sure the record knows its pod's id, looking it up by name,
// and that the pod is the record's.
func (r *Run) findPod(ctx context.Context) error {
	if r.rec.PodID != "" {
		pod, err := r.api.GetPod(ctx, r.rec.PodID)
		if err == nil && pod.Name != "" && pod.Name != r.rec.PodName {
			return fmt.Errorf("%w: pod %s is %q, not run %s's %q", ErrRecordMismatch, pod.ID, pod.Name, r.rec.ID, r.rec.PodName)
		}
		return nil
	}
	pods, err := r.api.ListPods(ctx, runpod.ListPodsOptions{Name: r.rec.PodName})
	if err != nil {
		return fmt.Errorf("looking for pod %s: %w", r.rec.PodName, err)
	}
	pods, unknown := r.runPods(pods)
	if len(pods) == 0 && unknown != nil {
		return fmt.Errorf("looking for pod %s: %w", r.rec.PodName, unknown)
	}
	if len(pods) == 0 {
		return ErrNoPod
	}
	p := pods[len(pods)-1]
	r.rec.PodID = p.ID
	if r.rec.BillingStart.IsZero() {
		// The creator died between the create call and saving its
		// answer: the pod's own creation time is the best there is.
		r.rec.BillingStart = p.CreatedAt
	}
	r.save()
	return nil
}

// ensure connects and reads the verdict.
func (r *Run) ensure(ctx context.Context) error {
	if err := r.connect(ctx); err != nil {
		return err
	}
	_, err := r.waitVerdict(ctx)
	return err
}

// waitVerdict waits for the watchdog's verdict. Its looks renew the lease:
// a client that is here holds it, even before the job has output.
func (r *Run) waitVerdict(ctx context.Context) (st jobctl.State, err error) {
	start, pace := r.now(), newRampFrom(firstSSHLook, r.rec.Poll)
	for {
		st, _, err = r.poll(ctx, true)
		var ce *podssh.CommandError
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return st, ctx.Err()
		case errors.As(err, &ce):
			return st, fmt.Errorf("reading the watchdog's verdict: %w", err)
		default:
			// The connection broke: the pod may be gone.
			if err := r.reconnect(ctx, err, nil); err != nil {
				return st, err
			}
			continue
		}
		if v := st.Verdict; v != (watchdog.Verdict{}) {
			r.rec.Verdict = v.String()
			r.save()
			if !v.Ready {
				return st, &VerdictError{Verdict: v}
			}
			r.ready = true
			r.emit(Event{Kind: EventVerdict, Verdict: st.Verdict})
			return st, nil
		}
		if r.since(start) > r.cfg.verdictTimeout {
			return st, fmt.Errorf("the watchdog wrote no verdict within %s", r.cfg.verdictTimeout)
		}
		r.waiting(StageVerdict)
		if err := r.cfg.clock.Sleep(ctx, pace.step()); err != nil {
			return st, err
		}
	}
}
