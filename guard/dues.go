package guard

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Due is a rule by which a run's watchdog may delete its pod, and when.
type Due struct {
	Rule watchdog.DeleteReason
	// At is the earliest time the rule may take the pod, by this machine's
	// clock; zero when the Record does not tell (no BillingStart). For a
	// rule that counts from an event on the pod (After), it is the
	// earliest that event can have come plus After.
	At time.Time
	// After is, for a rule that counts from an event, how long after it
	// the pod goes: the watchdog's start for DeleteNeverStarted, the job's
	// end for DeleteAbandoned and DeleteKeptIdle (its last use, for the
	// latter), the job's last movement for DeleteStalled (its stall
	// limit and the snapshot wait after it). Zero for a rule at a set
	// time: the deadline, its extension, the cost cap.
	After time.Duration
}

// Dues returns the rules by which the watchdog may delete the run's pod
// once no client holds its lease (a detached run), with their times,
// earliest first. A job not started yet (JobStarted zero) has only the
// boot grace; a started one the rules of a running job and of its end.
// A kept pod has no deadline, cost cap or stall rule: only its idle
// bound, unless unbounded. The cost cap is listed only when the pod's
// price is known. The stall rule is listed only when its StallAfter is
// set.
func (r Record) Dues() []Due {
	eff := r.EffectiveRules()
	var dues []Due
	from := func(rule watchdog.DeleteReason, start time.Time, after time.Duration) {
		d := Due{Rule: rule, After: after}
		if !start.IsZero() {
			d.At = start.Add(after)
		}
		dues = append(dues, d)
	}
	if r.JobStarted.IsZero() {
		from(watchdog.DeleteNeverStarted, r.BillingStart, eff.BootGrace)
	} else if r.Keep {
		if !r.KeepUnbounded {
			from(watchdog.DeleteKeptIdle, r.JobStarted, eff.KeepIdle)
		}
	} else {
		if eff.StallAfter > 0 {
			from(watchdog.DeleteStalled, r.JobStarted, eff.StallAfter+eff.SnapshotWait)
		}
		from(watchdog.DeleteAbandoned, r.JobStarted, eff.RetrieveGrace)
	}
	if !r.Keep && !r.Deadline.IsZero() {
		dues = append(dues, Due{Rule: watchdog.DeleteDeadline, At: r.Deadline})
		if ext := extensionOf(r.MaxExtension, r.HardDeadline); ext > 0 {
			dues = append(dues, Due{Rule: watchdog.DeleteMaxExtension, At: r.Deadline.Add(ext)})
		}
	}
	if !r.Keep && r.MaxCostUSD > 0 && r.CostPerHr > 0 && !r.BillingStart.IsZero() {
		if plan, err := costplan.CostCap(r.BillingStart, r.CostPerHr, r.budget(), r.SnapshotLead, 0); err == nil {
			dues = append(dues, Due{Rule: watchdog.DeleteCostCap, At: time.Unix(plan.CostCapAt, 0)})
		}
	}
	sort.SliceStable(dues, func(i, j int) bool {
		a, b := dues[i].At, dues[j].At
		return !a.IsZero() && (b.IsZero() || a.Before(b))
	})
	return dues
}

// DueBy returns the rules of Dues whose time had come by t: those that
// may have deleted a pod found gone at t, when nothing saw which did.
func (r Record) DueBy(t time.Time) []watchdog.DeleteReason {
	var rules []watchdog.DeleteReason
	for _, d := range r.Dues() {
		if !d.At.IsZero() && !d.At.After(t) {
			rules = append(rules, d.Rule)
		}
	}
	return rules
}

// ReadEndedBy reads the rule the watchdog wrote, before it deleted the
// pod, into the run directory (watchdog.EndedByFile), from dir: a copy of
// the run directory on this machine (the run's results directory, where a
// download of it lands, or its network volume mounted or synced here).
// An error wrapping fs.ErrNotExist says dir holds none.
func ReadEndedBy(dir string) (watchdog.EndedBy, error) {
	f, err := os.Open(filepath.Join(dir, watchdog.EndedByFile))
	if err != nil {
		return watchdog.EndedBy{}, fmt.Errorf("guard: %w", err)
	}
	defer f.Close()
	// One short line: more is not the watchdog's, and is not read whole.
	b, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return watchdog.EndedBy{}, fmt.Errorf("guard: %w", err)
	}
	e, err := watchdog.ParseEndedBy(b)
	if err != nil {
		return e, fmt.Errorf("guard: %w", err)
	}
	return e, nil
}
