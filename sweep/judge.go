package sweep

import (
	"fmt"
	"math"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Rule is the rule a Decision was taken by.
type Rule int

// The rules, Keep first: the pod has a reason to exist.
const (
	// RuleKeep: no rule applies; the pod (or secret) is left.
	RuleKeep Rule = iota
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
	// marker; reported, never deleted.
	RuleUnmarked
	// RuleSecretOrphan: a run's host-key secret whose pod is gone, older
	// than the secret grace.
	RuleSecretOrphan
	// RuleCannotJudge: a guarded pod with a field missing, unparsable or
	// of a value the sweeper does not know, or a pod whose description
	// the API gave could not be read (runpod.Pod.Unreadable), whatever
	// its name: reported, never deleted.
	RuleCannotJudge
)

var ruleNames = [...]string{"keep", "exited", "never_ran", "deadline", "cost_cap", "unmarked", "secret_orphan", "cannot_judge"}

func (r Rule) String() string {
	if r >= 0 && int(r) < len(ruleNames) {
		return ruleNames[r]
	}
	return "rule(" + itoa(int(r)) + ")"
}

// MarshalText writes the rule's name, for JSON.
func (r Rule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a rule's name.
func (r *Rule) UnmarshalText(b []byte) error {
	for i, n := range ruleNames {
		if n == string(b) {
			*r = Rule(i)
			return nil
		}
	}
	return fmt.Errorf("sweep: unknown rule %q", b)
}

// Decision is a sweep's judgment of one pod or one secret, with the
// numbers it was taken on.
type Decision struct {
	PodID    string           `json:"pod_id,omitempty"`
	PodName  string           `json:"pod_name,omitempty"`
	Status   runpod.PodStatus `json:"status,omitempty"`
	Secret   string           `json:"secret,omitempty"`
	SecretID string           `json:"secret_id,omitempty"`
	RunID    string           `json:"run_id,omitempty"`
	Rule     Rule             `json:"rule"`
	Delete   bool             `json:"delete"`
	// Age is how long the pod (or the run) has been, Limit the age at
	// which the rule deletes; SpendUSD and CapUSD for the cost cap.
	Age      time.Duration `json:"age_ns"`
	Limit    time.Duration `json:"limit_ns,omitempty"`
	SpendUSD float64       `json:"spend_usd,omitempty"`
	CapUSD   float64       `json:"cap_usd,omitempty"`
	// PricePerHr is the pod's price as the API gave it (0 once it no
	// longer runs: an EXITED pod's disk bills apart).
	PricePerHr float64 `json:"price_per_hr,omitempty"`
	Why        string  `json:"why"`
	// Kept says the pod is a kept one (--keep-pod): left whatever its
	// state.
	Kept bool `json:"kept,omitempty"`
	// LeftUSD is what the pod may still spend by its own rules, from now
	// to its worst case while its watchdog or a client works
	// (podenv.WorstCase.Guarded): 0 for a pod that no longer runs (its
	// storage bills apart). NoBound: its rules bound nothing (a kept
	// pod running). See Report.Committed.
	LeftUSD float64 `json:"left_usd,omitempty"`
	NoBound bool    `json:"no_bound,omitempty"`
	// Done says the delete was made (not on a dry run); Result and Err
	// are its outcome.
	Done   bool                `json:"done,omitempty"`
	Result runpod.DeleteResult `json:"-"`
	Err    error               `json:"-"`
	Error  string              `json:"error,omitempty"` // Err's text

	withPod bool // a secret deleted only once its pod's delete is made
}

// never is the time past which a pod's deadline or cost cap means never.
var never = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// stillBills says a pod in this status is not running but still bills
// (its disk), and its watchdog no longer runs.
func stillBills(s runpod.PodStatus) bool {
	return s == runpod.StatusExited || s == runpod.StatusError
}

// Judge is the one judgment of a guarded pod, a sweep's and a remove of
// an orphan's. A pod is deleted only by a rule whose every input was read
// and understood: a field missing, unparsable or of a value the sweeper
// does not know, or a description the listing could not read, makes it
// RuleCannotJudge, left. A kept pod is left
// whatever its state: only an explicit remove deletes it.
func Judge(pod runpod.Pod, now time.Time, p Policy) Decision {
	p = p.withDefaults()
	d := Decision{PodID: pod.ID, PodName: pod.Name, Status: pod.Status, PricePerHr: pod.CostPerHr}
	id, ok := podenv.RunIDOfPod(pod.Name)
	if pod.Unreadable != nil {
		d.RunID = id
		d.Rule, d.Why = RuleCannotJudge, fmt.Sprintf("the API's description of it could not be read: %v", pod.Unreadable.Err)
		return d
	}
	if marker := podenv.RunMarker(pod.Env); !ok || marker != id {
		d.Rule, d.Why = RuleUnmarked, fmt.Sprintf("named like a guarded run's pod, but its env's run marker is %q", marker)
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
	if c := pod.CostPerHr; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
		return cannot("its price %v is not an amount of dollars", c)
	}
	env, err := podenv.Parse(pod.Env)
	if err != nil {
		return cannot("its env: %v", err)
	}
	s := env.Settings
	d.Age = now.Sub(pod.CreatedAt) // Sub saturates
	if pod.Status == runpod.StatusRunning || pod.Status == runpod.StatusProvisioning || pod.Status == runpod.StatusStarting {
		left, ok := s.WorstCase(pod.CostPerHr, pod.CreatedAt, nil).Guarded().Left(pod.CostPerHr, pod.CreatedAt, now)
		d.LeftUSD, d.NoBound = left, !ok
	}
	if s.Keep {
		d.Kept = true
		d.Why = fmt.Sprintf("kept (--keep-pod): left to its watchdog, which stops it (with a pod volume) or deletes it once unused for %s after its job ended (kept_idle), and to an explicit rm",
			s.EffectiveRules().KeepIdle)
		if s.KeepUnbounded {
			d.Why = "kept (--keep-pod) with no idle bound (--keep-idle 0): left to an explicit rm"
		}
		if stillBills(pod.Status) {
			d.Why = fmt.Sprintf("kept (--keep-pod), %s: not running, its storage still bills; only an explicit rm deletes it", pod.Status)
		}
		return d
	}
	del := func(r Rule, age, limit time.Duration, why string) Decision {
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
		limit := addSat(s.BootGrace, p.Margin)
		if d.Age >= limit {
			return del(RuleNeverRan, d.Age, limit, fmt.Sprintf("%s %s after its creation, past its boot grace plus the margin (%s)",
				pod.Status, short(d.Age), limit))
		}
	}
	// The rules' instants are podenv's, the watchdog's own; past 2100 a
	// time means never. Parse states the extension of every pod with a
	// deadline (the legacy one for a contract-1 env without it).
	if end := s.HardEnd(); !end.IsZero() {
		if end = end.Add(p.Margin); end.Before(never) && !now.Before(end) {
			return del(RuleDeadline, d.Age, end.Sub(pod.CreatedAt), fmt.Sprintf("past its deadline %s plus its extension of %s and the margin",
				s.Deadline.UTC().Format(time.RFC3339), s.Extension()))
		}
	}
	// The env's cap is what was left of the run's when the pod was made:
	// the pod spends it from its creation.
	if capAt := s.CapAt(pod.CreatedAt, pod.CostPerHr, 0); !capAt.IsZero() {
		d.SpendUSD, d.CapUSD = pod.CostPerHr*d.Age.Hours(), s.MaxCostUSD
		if at := capAt.Add(p.Margin); at.Before(never) {
			limit := at.Sub(pod.CreatedAt)
			if d.Age >= limit {
				return del(RuleCostCap, d.Age, limit, fmt.Sprintf("spent %s at %s/h, past its cap of %s (and the margin)",
					costplan.Money(d.SpendUSD), costplan.Money(pod.CostPerHr), costplan.Money(s.MaxCostUSD)))
			}
		}
	}
	d.Why = "no rule applies"
	return d
}

// addSat adds two durations that are not negative, stopping at the
// largest.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// judgeSecret judges run id's host-key secret, of a run started at
// started: live says a pod of the run exists that this sweep leaves,
// dying that this sweep deletes one.
// A secret whose description states that its run may need it with no
// pod (a run on a network volume recovers onto a new pod with the same
// key, up to its deadline: podenv.HostKeySecretDescription) is left
// until that time plus the secret grace; one whose description is not
// one the sweeper reads, or states a time later than any run of the SDK
// may need it, cannot be judged, and is left.
func judgeSecret(s runpod.Secret, id string, started time.Time, live, dying bool, now time.Time, p Policy) Decision {
	d := Decision{Secret: s.Name, SecretID: s.ID, RunID: id, Rule: RuleKeep}
	if live {
		d.Why = "its pod exists"
		return d
	}
	gone := "its pod is gone"
	if dying {
		gone = "its pod is deleted by this sweep"
	}
	need, stated, err := podenv.HostKeySecretNeed(id, s.Description)
	if err != nil {
		d.Rule, d.Why = RuleCannotJudge, fmt.Sprintf("%s, but how long its run needs it is unknown: %v", gone, err)
		return d
	}
	if latest := started.Add(podenv.MaxDeadlineAhead + podenv.LongestExtension); stated && need.After(latest) {
		d.Rule, d.Why = RuleCannotJudge, fmt.Sprintf("%s, but its description says its run needs it until %s, past %s, the latest any run of the SDK may (its start, plus %s of deadline and %s of extension)",
			gone, need.UTC().Format(time.RFC3339), latest.UTC().Format(time.RFC3339), podenv.MaxDeadlineAhead, podenv.LongestExtension)
		return d
	}
	if stated && now.Before(need.Add(p.SecretGrace)) {
		d.Why = fmt.Sprintf("%s, but its run may need it on a new pod until %s (a recovery on its network volume), plus the secret grace of %s",
			gone, need.UTC().Format(time.RFC3339), p.SecretGrace)
		return d
	}
	if dying {
		d.Rule, d.Delete, d.withPod, d.Why = RuleSecretOrphan, true, true, gone
		return d
	}
	d.Age, d.Limit = now.Sub(started), p.SecretGrace
	if d.Age < p.SecretGrace {
		d.Why = fmt.Sprintf("%s, its run started %s ago, within the secret grace", gone, short(d.Age))
		return d
	}
	d.Rule, d.Delete = RuleSecretOrphan, true
	d.Why = fmt.Sprintf("%s, its run started %s ago, past the secret grace of %s", gone, short(d.Age), p.SecretGrace)
	if stated {
		d.Why += fmt.Sprintf(", and past %s, until when its run needed it", need.UTC().Format(time.RFC3339))
	}
	return d
}
