package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// SweepAPI is what Sweep needs of Runpod: *runpod.Client has it.
type SweepAPI interface {
	ListPods(ctx context.Context, opts runpod.ListPodsOptions) ([]runpod.Pod, error)
	DeletePod(ctx context.Context, id string) (runpod.DeleteResult, error)
	ListSecrets(ctx context.Context) ([]runpod.Secret, error)
	DeleteSecret(ctx context.Context, id string) error
}

// Defaults of a SweepPolicy's zero fields.
const (
	DefaultExitedGrace = 10 * time.Minute
	DefaultSweepMargin = 5 * time.Minute
	DefaultSecretGrace = time.Hour
)

// SweepPolicy is how Sweep judges. Its zero value is the defaults.
type SweepPolicy struct {
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
	// counted from the run's start, which its id tells (NewRunID's),
	// since Runpod keeps no time for a secret. A secret whose run id
	// tells no time is reported, never deleted.
	SecretGrace time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Validate refuses negative graces and margins, naming the field.
func (p SweepPolicy) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"ExitedGrace", p.ExitedGrace}, {"Margin", p.Margin}, {"SecretGrace", p.SecretGrace}} {
		if f.d < 0 {
			errs = append(errs, &FieldError{Field: "SweepPolicy." + f.name, Reason: fmt.Sprintf("%s is negative", f.d)})
		}
	}
	return errors.Join(errs...)
}

func (p SweepPolicy) withDefaults() SweepPolicy {
	if p.ExitedGrace == 0 {
		p.ExitedGrace = DefaultExitedGrace
	}
	if p.Margin == 0 {
		p.Margin = DefaultSweepMargin
	}
	if p.SecretGrace == 0 {
		p.SecretGrace = DefaultSecretGrace
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// SweepRule is the rule a Decision was taken by.
type SweepRule int

// The rules, Keep first: the pod has a reason to exist.
const (
	// RuleKeep: no rule applies; the pod (or secret) is left.
	RuleKeep SweepRule = iota
	// RuleExited: EXITED or ERROR for longer than the exited grace.
	RuleExited
	// RuleNeverRan: not RUNNING within its boot grace plus the margin
	// after it was created (an image that never pulls, a crash loop).
	RuleNeverRan
	// RuleDeadline: past its deadline plus its extension, plus the margin.
	RuleDeadline
	// RuleCostCap: its price times its age passed its cost cap (at the
	// time the cap was reached plus the margin).
	RuleCostCap
	// RuleUnmarked: named like a guarded run's pod but carrying no run
	// marker (OVERBRAINER_RUN_ID); reported, never deleted.
	RuleUnmarked
	// RuleSecretOrphan: a run's host-key secret whose pod is gone, older
	// than the secret grace.
	RuleSecretOrphan
	// RuleCannotJudge: a guarded pod with a field missing, unparsable or
	// of a value the sweeper does not know: reported, never deleted.
	RuleCannotJudge
)

var ruleNames = [...]string{"keep", "exited", "never_ran", "deadline", "cost_cap", "unmarked", "secret_orphan", "cannot_judge"}

func (r SweepRule) String() string {
	if int(r) < len(ruleNames) {
		return ruleNames[r]
	}
	return "rule(" + strconv.Itoa(int(r)) + ")"
}

// MarshalText writes the rule's name, for JSON.
func (r SweepRule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a rule's name.
func (r *SweepRule) UnmarshalText(b []byte) error {
	for i, n := range ruleNames {
		if n == string(b) {
			*r = SweepRule(i)
			return nil
		}
	}
	return fmt.Errorf("guard: unknown sweep rule %q", b)
}

// Decision is Sweep's judgment of one pod or one secret, with the numbers
// it was taken on.
type Decision struct {
	PodID    string           `json:"pod_id,omitempty"`
	PodName  string           `json:"pod_name,omitempty"`
	Status   runpod.PodStatus `json:"status,omitempty"`
	Secret   string           `json:"secret,omitempty"`
	SecretID string           `json:"secret_id,omitempty"`
	RunID    string           `json:"run_id,omitempty"`
	Rule     SweepRule        `json:"rule"`
	Delete   bool             `json:"delete"`
	// Age is how long the pod (or the run) has been, Limit the age at
	// which the rule deletes; SpendUSD and CapUSD for the cost cap.
	Age      time.Duration `json:"age_ns"`
	Limit    time.Duration `json:"limit_ns,omitempty"`
	SpendUSD float64       `json:"spend_usd,omitempty"`
	CapUSD   float64       `json:"cap_usd,omitempty"`
	Why      string        `json:"why"`
	// Kept says the pod is a kept one (--keep-pod): left whatever its
	// state.
	Kept bool `json:"kept,omitempty"`
	// Done says the delete was made (not on a dry run); Result and Err
	// are its outcome.
	Done   bool                `json:"done,omitempty"`
	Result runpod.DeleteResult `json:"-"`
	Err    error               `json:"-"`
	Error  string              `json:"error,omitempty"` // Err's text
}

// String is the decision in one line, for a person.
func (d Decision) String() string {
	what := "pod " + d.PodID + " (" + d.PodName + ", " + string(d.Status) + ")"
	if d.Secret != "" {
		what = "secret " + d.Secret
	}
	verb := "keep"
	switch {
	case d.Delete && d.Done && d.Err != nil:
		verb = "FAILED to delete"
	case d.Delete && d.Done:
		verb = "deleted"
	case d.Delete:
		verb = "would delete"
	case d.Rule == RuleUnmarked:
		verb = "NOT MARKED, left"
	case d.Rule == RuleCannotJudge:
		verb = "CANNOT JUDGE, left"
	}
	s := fmt.Sprintf("%s %s: %s: %s", verb, what, d.Rule, d.Why)
	if d.Err != nil {
		s += ": " + d.Err.Error()
	}
	return s
}

// Report is what one Sweep saw and did.
type Report struct {
	Pods, Secrets int // listed
	Decisions     []Decision
	// SecretsSkipped says why no secret was judged (their listing
	// failed); the pods were judged all the same.
	SecretsSkipped string `json:"secrets_skipped,omitempty"`
}

// Deleted counts the deletes made.
func (r Report) Deleted() int {
	n := 0
	for _, d := range r.Decisions {
		if d.Done && d.Err == nil {
			n++
		}
	}
	return n
}

// Sweep judges every guarded pod and host-key secret of the account from
// the API alone, and deletes those a rule says have no reason to exist
// (see SweepRule), unless DryRun. It keeps no state: any number of sweeps
// may run at once (a pod already gone is no error). Nothing is deleted
// unless the pods' listing is complete; when the secrets' listing fails,
// the pods are judged all the same and no secret is (Report.SecretsSkipped
// says why). The error is the listings', and every failed delete, joined;
// the Report holds every decision either way.
func Sweep(ctx context.Context, c SweepAPI, p SweepPolicy) (Report, error) {
	if err := p.Validate(); err != nil {
		return Report{}, err
	}
	p = p.withDefaults()
	// The rules read no pod's command, the bulk of a large list.
	pods, err := c.ListPods(ctx, runpod.ListPodsOptions{NamePrefix: PodNamePrefix, IncludeClusterPods: true, SkipArgs: true})
	if err != nil {
		return Report{}, fmt.Errorf("guard: sweep: listing pods (nothing deleted): %w", err)
	}
	// A pod's secret is kept while the pod lives: deleting abandoned pods
	// needs no secret, and the secrets of pods deleted now are judged at
	// the next sweep.
	var errs []error
	secrets, err := c.ListSecrets(ctx)
	if err != nil {
		err = fmt.Errorf("guard: sweep: listing secrets (secrets not swept, pods judged): %w", err)
		errs, secrets = append(errs, err), nil
	}
	now := p.Now()
	rep := Report{Pods: len(pods), Secrets: len(secrets)}
	if err != nil {
		rep.SecretsSkipped = err.Error()
	}
	live := map[string]bool{}
	for _, pod := range pods {
		if pod.Status != runpod.StatusTerminated {
			live[strings.TrimPrefix(pod.Name, PodNamePrefix)] = true
		}
		rep.Decisions = append(rep.Decisions, judgePod(pod, now, p))
	}
	for _, s := range secrets {
		if d, ok := judgeSecret(s, live, now, p); ok {
			rep.Decisions = append(rep.Decisions, d)
		}
	}
	if p.DryRun {
		return rep, errors.Join(errs...)
	}
	for i := range rep.Decisions {
		d := &rep.Decisions[i]
		if !d.Delete {
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
		}
		if d.Err != nil {
			d.Error = d.Err.Error()
			errs = append(errs, d.Err)
		}
	}
	return rep, errors.Join(errs...)
}

// judgePod is the one judgment of a guarded pod, Sweep's and
// RemoveOrphan's. A pod is deleted only by a rule whose every input was
// read and understood: a field missing, unparsable or of a value this
// sweeper does not know makes it RuleCannotJudge, left. A kept pod is
// left whatever its state: only an explicit Remove deletes it.
func judgePod(pod runpod.Pod, now time.Time, p SweepPolicy) Decision {
	d := Decision{PodID: pod.ID, PodName: pod.Name, Status: pod.Status}
	id, _ := strings.CutPrefix(pod.Name, PodNamePrefix)
	if pod.Env[runIDEnv] != id || CheckRunID(id) != nil {
		d.Rule, d.Why = RuleUnmarked, "named like a guarded run's pod, but without its run marker "+runIDEnv+"="+id
		return d
	}
	d.RunID = id
	cannot := func(format string, args ...any) Decision {
		d.Rule, d.Why = RuleCannotJudge, fmt.Sprintf(format, args...)
		return d
	}
	switch pod.Status {
	case runpod.StatusTerminated:
		d.Why = "terminated: bills no more"
		return d
	case runpod.StatusProvisioning, runpod.StatusStarting, runpod.StatusRunning, runpod.StatusExited, runpod.StatusError:
	default:
		return cannot("status %q is not one this sweeper knows", pod.Status)
	}
	if pod.CreatedAt.IsZero() {
		return cannot("the API gave no createdAt")
	}
	if pod.StartedAt != nil && pod.StartedAt.IsZero() {
		return cannot("the API gave an empty startedAt")
	}
	env := pod.Env
	var keep bool
	switch env["OVERBRAINER_KEEP_POD"] {
	case "1":
		keep = true
	case "0":
	default:
		return cannot("OVERBRAINER_KEEP_POD=%q is neither 0 nor 1", env["OVERBRAINER_KEEP_POD"])
	}
	boot, ok := envSeconds(env, "OVERBRAINER_BOOT_GRACE")
	if !ok {
		return cannot("OVERBRAINER_BOOT_GRACE=%q is not a number of seconds the watchdog reads", env["OVERBRAINER_BOOT_GRACE"])
	}
	var deadline, ext int64 = -1, int64(DefaultMaxExtension / time.Second)
	if v, set := env["OVERBRAINER_DEADLINE"]; set {
		if deadline, ok = envSeconds(env, "OVERBRAINER_DEADLINE"); !ok {
			return cannot("OVERBRAINER_DEADLINE=%q is not a Unix time the watchdog reads", v)
		}
	}
	if v, set := env["OVERBRAINER_MAX_EXTENSION"]; set {
		if ext, ok = envSeconds(env, "OVERBRAINER_MAX_EXTENSION"); !ok {
			return cannot("OVERBRAINER_MAX_EXTENSION=%q is not a number of seconds the watchdog reads", v)
		}
	}
	capUSD := 0.0
	if v, set := env[podenv.MaxCostEnv]; set {
		c, err := strconv.ParseFloat(v, 64)
		if !dollars.MatchString(v) || err != nil {
			return cannot("%s=%q is not an amount of dollars", podenv.MaxCostEnv, v)
		}
		capUSD = c
	}
	if math.IsNaN(pod.CostPerHr) || math.IsInf(pod.CostPerHr, 0) || pod.CostPerHr < 0 {
		return cannot("its price %v is not an amount of dollars", pod.CostPerHr)
	}
	d.Age = now.Sub(pod.CreatedAt) // Sub saturates
	if keep {
		d.Kept = true
		d.Why = "kept (--keep-pod): left to its watchdog and to an explicit rm"
		if stillBills(pod.Status) {
			d.Why = fmt.Sprintf("kept (--keep-pod), %s: not running, its storage still bills; only an explicit rm deletes it", pod.Status)
		}
		return d
	}
	del := func(r SweepRule, age, limit time.Duration, why string) Decision {
		d.Rule, d.Delete, d.Age, d.Limit, d.Why = r, true, age, limit, why
		return d
	}
	if stillBills(pod.Status) {
		since := pod.CreatedAt
		if pod.StartedAt != nil && pod.StartedAt.After(since) {
			since = *pod.StartedAt
		}
		if age := now.Sub(since); age >= p.ExitedGrace {
			return del(RuleExited, age, p.ExitedGrace, fmt.Sprintf("%s, last started %s ago, past the exited grace of %s",
				pod.Status, short(age), p.ExitedGrace))
		}
	}
	if pod.Status != runpod.StatusRunning && pod.StartedAt == nil {
		limit := addSat(time.Duration(boot)*time.Second, p.Margin)
		if d.Age >= limit {
			return del(RuleNeverRan, d.Age, limit, fmt.Sprintf("%s %s after its creation, past its boot grace plus the margin (%s)",
				pod.Status, short(d.Age), limit))
		}
	}
	// Times are compared in whole seconds from 1970, where no sum of
	// values the watchdog reads (10 digits each) overflows; past 2100
	// a time means never.
	if deadline >= 0 {
		end := deadline + ext + int64(p.Margin/time.Second)
		if end < never.Unix() && now.Unix() >= end {
			return del(RuleDeadline, d.Age, time.Unix(end, 0).Sub(pod.CreatedAt), fmt.Sprintf("past its deadline %s plus its extension of %s and the margin",
				time.Unix(deadline, 0).UTC().Format(time.RFC3339), time.Duration(ext)*time.Second))
		}
	}
	if capUSD > 0 && pod.CostPerHr > 0 {
		d.SpendUSD, d.CapUSD = pod.CostPerHr*d.Age.Hours(), capUSD
		// The cap's time, in seconds of float64, is tested against 2100
		// before it becomes a Duration, which it would overflow.
		capSec := capUSD / pod.CostPerHr * 3600
		at := float64(pod.CreatedAt.Unix()) + capSec + p.Margin.Seconds()
		if at < float64(never.Unix()) {
			limit := addSat(time.Duration(capSec*float64(time.Second)), p.Margin)
			if d.Age >= limit {
				return del(RuleCostCap, d.Age, limit, fmt.Sprintf("spent %s at %s/h, past its cap of %s (and the margin)",
					Money(d.SpendUSD), Money(pod.CostPerHr), Money(capUSD)))
			}
		}
	}
	d.Why = "no rule applies"
	return d
}

// never is the time past which a pod's deadline or cost cap means never.
var never = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// dollars is an amount as podenv writes it.
var dollars = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// envSeconds reads a number as the watchdog does: 1 to 10 decimal digits
// once leading zeros are dropped, nothing else (no sign, no space).
func envSeconds(env map[string]string, name string) (int64, bool) {
	v := env[name]
	if v == "" || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	v = strings.TrimLeft(v, "0")
	if len(v) > 10 {
		return 0, false
	}
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// addSat adds two durations that are not negative, stopping at the
// largest.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// runIDEnv is the run marker a guarded pod carries.
const runIDEnv = "OVERBRAINER_RUN_ID"

// judgeSecret judges a host-key secret; ok is false for another secret.
func judgeSecret(s runpod.Secret, live map[string]bool, now time.Time, p SweepPolicy) (Decision, bool) {
	id, ok := strings.CutPrefix(s.Name, podenv.HostKeySecretName(""))
	if !ok || CheckRunID(id) != nil {
		return Decision{}, false
	}
	d := Decision{Secret: s.Name, SecretID: s.ID, RunID: id, Rule: RuleKeep}
	if live[id] {
		d.Why = "its pod exists"
		return d, true
	}
	started, err := time.Parse("20060102-150405", id[:min(len(id), 15)])
	if err != nil {
		d.Why = "its pod is gone, but its run id tells no time: left"
		return d, true
	}
	d.Age, d.Limit = now.Sub(started), p.SecretGrace
	if d.Age < p.SecretGrace {
		d.Why = fmt.Sprintf("its pod is gone, its run started %s ago, within the secret grace", short(d.Age))
		return d, true
	}
	d.Rule, d.Delete = RuleSecretOrphan, true
	d.Why = fmt.Sprintf("its pod is gone, its run started %s ago, past the secret grace of %s", short(d.Age), p.SecretGrace)
	return d, true
}

func short(d time.Duration) string { return d.Round(time.Second).String() }

// MinSweepPeriod is the shortest period a sweeper loop may have against a
// non-local API: each pass lists the whole account.
const MinSweepPeriod = time.Minute

// CheckSweepPeriod refuses a period under MinSweepPeriod against an API
// that is not on a loopback address (a local emulator may be swept as
// often as a test likes), and a negative one.
func CheckSweepPeriod(every time.Duration, baseURL string) error {
	if every < 0 {
		return &FieldError{Field: "every", Reason: fmt.Sprintf("%s is negative", every)}
	}
	if every == 0 || every >= MinSweepPeriod {
		return nil
	}
	if u, err := url.Parse(baseURL); err == nil {
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
	}
	return &FieldError{Field: "every", Reason: fmt.Sprintf("%s is under %s against %s: each pass lists the whole account", every, MinSweepPeriod, baseURL)}
}

// SweepEvery sweeps now and then every period until ctx ends, handing each
// pass's Report and error to each; a failed pass does not end the loop. It
// returns ctx's error.
func SweepEvery(ctx context.Context, c SweepAPI, p SweepPolicy, every time.Duration, each func(Report, error)) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if every <= 0 {
		return &FieldError{Field: "every", Reason: fmt.Sprintf("%s is not positive", every)}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rep, err := Sweep(ctx, c, p)
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

// Write writes the report for a person, one line per decision that
// deletes, is unmarked, cannot judge or leaves a kept pod that still
// bills (every decision when all) and a total; or, with
// asJSON, one JSON line per decision. err is the pass's error, said last.
func (r Report) Write(w io.Writer, asJSON, all bool, err error) error {
	enc := json.NewEncoder(w)
	for _, d := range r.Decisions {
		var werr error
		switch {
		case asJSON:
			werr = enc.Encode(d)
		case all || d.Delete || d.Rule == RuleUnmarked || d.Rule == RuleCannotJudge || (d.Kept && stillBills(d.Status)):
			_, werr = fmt.Fprintln(w, d)
		}
		if werr != nil {
			return werr
		}
	}
	if err != nil && !asJSON {
		_, werr := fmt.Fprintf(w, "sweep: %v\n", err)
		return werr
	}
	if asJSON {
		return nil
	}
	_, werr := fmt.Fprintf(w, "sweep: %d pods, %d secrets, %d deleted\n", r.Pods, r.Secrets, r.Deleted())
	return werr
}
