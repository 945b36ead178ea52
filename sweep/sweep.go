package sweep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// API is what a sweep needs of Runpod: *runpod.Client has it.
type API interface {
	ListPods(ctx context.Context, opts runpod.ListPodsOptions) ([]runpod.Pod, error)
	DeletePod(ctx context.Context, id string) (runpod.DeleteResult, error)
	ListSecrets(ctx context.Context) ([]runpod.Secret, error)
	DeleteSecret(ctx context.Context, id string) error
}

// Defaults of a Policy's zero fields.
const (
	DefaultExitedGrace = 10 * time.Minute
	DefaultMargin      = 5 * time.Minute
	DefaultSecretGrace = time.Hour
)

// Policy is how a sweep judges. Its zero value is the defaults.
type Policy struct {
	// DryRun decides without deleting anything.
	DryRun bool
	// ExitedGrace is how long an EXITED or ERROR pod is left (counted
	// from its last start, the latest time the API shows it may have
	// run): a container restarting passes through EXITED.
	ExitedGrace time.Duration
	// Margin is added to each of the pod's own times (boot grace,
	// deadline plus extension, cost cap), so that its watchdog, which
	// acts at those times, acts first.
	Margin time.Duration
	// SecretGrace is how long a run's host-key secret outlives its pod:
	// counted from the run's start, which its id tells (podenv.NewRunID's),
	// since Runpod keeps no time for a secret; or, when later, from the
	// time until which the secret's description says its run may need it
	// with no pod (a run on a network volume: its recovery's pod takes
	// the same key). Only a secret whose run id is of NewRunID's exact
	// form is judged (a user's named like one is not); one whose
	// description the sweeper cannot read, or states a time later than
	// any run of the SDK may need it, is reported, never deleted.
	SecretGrace time.Duration
	// Skip, when set, leaves out the pods and secrets of the runs it
	// says: a caller's own runs, which it removes by their records.
	Skip func(runID string) bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Validate refuses negative graces and margins, naming the field.
func (p Policy) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"ExitedGrace", p.ExitedGrace}, {"Margin", p.Margin}, {"SecretGrace", p.SecretGrace}} {
		if f.d < 0 {
			errs = append(errs, &podenv.FieldError{Field: "Policy." + f.name, Reason: fmt.Sprintf("%s is negative", f.d)})
		}
	}
	return errors.Join(errs...)
}

func (p Policy) withDefaults() Policy {
	if p.ExitedGrace == 0 {
		p.ExitedGrace = DefaultExitedGrace
	}
	if p.Margin == 0 {
		p.Margin = DefaultMargin
	}
	if p.SecretGrace == 0 {
		p.SecretGrace = DefaultSecretGrace
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

func (p Policy) skip(runID string) bool { return p.Skip != nil && runID != "" && p.Skip(runID) }

// Once judges every guarded pod and host-key secret of the account from
// the API alone, and deletes those a rule says have no reason to exist
// (see Rule), unless DryRun. It keeps no state: any number of sweeps may
// run at once (a pod already gone is no error). Nothing is deleted unless
// the pods' listing is complete; when the secrets' listing fails, the
// pods are judged all the same and no secret is (Report.SecretsSkipped
// says why). The error is the listings', and every failed delete, joined;
// the Report holds every decision either way.
func Once(ctx context.Context, c API, p Policy) (rep Report, err error) {
	if err := p.Validate(); err != nil {
		return Report{}, err
	}
	p = p.withDefaults()
	start := p.Now()
	defer func() { rep.Pass = Pass{Start: start, Took: max(p.Now().Sub(start), 0)} }()
	// The rules read no pod's command, the bulk of a large list.
	pods, err := c.ListPods(ctx, runpod.ListPodsOptions{NamePrefix: podenv.PodNamePrefix, IncludeClusterPods: true, SkipArgs: true})
	if err != nil {
		return Report{}, fmt.Errorf("sweep: listing pods (nothing deleted): %w", err)
	}
	// A pod's secret is kept while the pod lives: deleting abandoned pods
	// needs no secret, and the secrets of pods deleted now are judged at
	// the next sweep.
	var errs []error
	secrets, err := c.ListSecrets(ctx)
	if err != nil {
		err = fmt.Errorf("sweep: listing secrets (secrets not swept, pods judged): %w", err)
		errs, secrets = append(errs, err), nil
	}
	rep = judgeAll(pods, secrets, p)
	if err != nil {
		rep.SecretsSkipped = err.Error()
	}
	if p.DryRun {
		return rep, errors.Join(errs...)
	}
	return rep, errors.Join(append(errs, rep.apply(ctx, c))...)
}

// judgeAll judges the listings. A run's secret goes with its pod when
// this sweep deletes the pod (and only once that delete is made), or
// once it is older than the secret grace with no pod left; unless the
// secret states that its run may need it later (see judgeSecret).
func judgeAll(pods []runpod.Pod, secrets []runpod.Secret, p Policy) Report {
	now := p.Now()
	rep := Report{Pods: len(pods), Secrets: len(secrets)}
	live, dying := map[string]bool{}, map[string]bool{}
	// A pod whose name could not be read may be any run's.
	var unnamed *runpod.PodReadError
	for _, pod := range pods {
		if pod.Unreadable != nil && pod.Name == "" && pod.Status != runpod.StatusTerminated {
			unnamed = pod.Unreadable
		}
		id, _ := podenv.RunIDOfPod(pod.Name)
		if p.skip(id) {
			live[id] = true
			continue
		}
		d := Judge(pod, now, p)
		switch {
		case d.Delete:
			dying[id] = true
		case pod.Status != runpod.StatusTerminated:
			live[id] = true
		}
		rep.Decisions = append(rep.Decisions, d)
	}
	for _, s := range secrets {
		// Only a run id of NewRunID's form is surely the SDK's: a user's
		// secret named like a run's host key is not.
		id, ok := podenv.RunIDOfSecret(s.Name)
		started, made := podenv.RunIDTime(id)
		switch {
		case !ok || !made || p.skip(id):
		case unnamed != nil && !live[id]:
			rep.Decisions = append(rep.Decisions, Decision{Secret: s.Name, SecretID: s.ID, RunID: id, Rule: RuleCannotJudge,
				Why: fmt.Sprintf("a listed pod whose name could not be read may be its run's: %v", unnamed)})
		default:
			rep.Decisions = append(rep.Decisions, judgeSecret(s, id, started, live[id], dying[id], now, p))
		}
	}
	return rep
}

// apply makes the deletes the decisions ask for: the pods first, then
// the secrets, a secret that goes with its pod only once the pod is gone.
func (r *Report) apply(ctx context.Context, c API) error {
	var errs []error
	failed := map[string]bool{} // runs whose pod could not be deleted
	for i := range r.Decisions {
		d := &r.Decisions[i]
		if !d.Delete || (d.withPod && failed[d.RunID]) {
			continue
		}
		d.Done = true
		if d.Secret != "" {
			if err := c.DeleteSecret(ctx, d.SecretID); err != nil && !errors.Is(err, runpod.ErrNotFound) {
				d.Err = err
			}
		} else {
			d.Result, d.Err = c.DeletePod(ctx, d.PodID)
			if d.Err == nil && d.Result.StillBilling() {
				d.Err = fmt.Errorf("pod %s %s", d.PodID, d.Result)
			}
			if d.Err != nil {
				failed[d.RunID] = true
			}
		}
		if d.Err != nil {
			d.Error = d.Err.Error()
			errs = append(errs, d.Err)
		}
	}
	return errors.Join(errs...)
}

// MinPeriod is the shortest period a sweeper loop may have against a
// non-local API: each pass lists the whole account.
const MinPeriod = time.Minute

// CheckPeriod refuses a period under MinPeriod against an API that is
// not on a loopback address (a local emulator may be swept as often as a
// test likes), and a negative one.
func CheckPeriod(every time.Duration, baseURL string) error {
	if every < 0 {
		return &podenv.FieldError{Field: "every", Reason: fmt.Sprintf("%s is negative", every)}
	}
	if every == 0 || every >= MinPeriod {
		return nil
	}
	if u, err := url.Parse(baseURL); err == nil {
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
	}
	return &podenv.FieldError{Field: "every", Reason: fmt.Sprintf("%s is under %s against %s: each pass lists the whole account", every, MinPeriod, baseURL)}
}

// Every sweeps now and then every period until ctx ends, handing each
// pass's Report and error to each; a failed pass does not end the loop.
// It returns ctx's error.
func Every(ctx context.Context, c API, p Policy, every time.Duration, each func(Report, error)) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if every <= 0 {
		return &podenv.FieldError{Field: "every", Reason: fmt.Sprintf("%s is not positive", every)}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rep, err := Once(ctx, c, p)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		each(rep, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func short(d time.Duration) string { return d.Round(time.Second).String() }

func itoa(n int) string { return strconv.Itoa(n) }
