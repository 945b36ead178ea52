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

// Due is a rule by which the watchdog may delete a run's pod, and At, the
// earliest time it may (this machine's clock; zero: unknown): for a rule
// that fires After an event (the watchdog's start, the job's end, last use
// or movement), that event's earliest time plus After.
type Due struct {
	Rule  watchdog.DeleteReason
	At    time.Time
	After time.Duration // zero for the deadline, its extension, the cost cap
}

// Dues returns the rules by which the watchdog may delete a detached run's
// pod, earliest first: before JobStarted the boot grace alone. A kept pod
// has only its idle bound; the cost cap needs a price, the stall rule
// StallAfter.
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
		if r.Extension() > 0 {
			dues = append(dues, Due{Rule: watchdog.DeleteMaxExtension, At: r.HardEnd()})
		}
	}
	if _, capAt := r.costPlan(); !r.Keep && !capAt.IsZero() {
		dues = append(dues, Due{Rule: watchdog.DeleteCostCap, At: capAt})
	}
	sort.SliceStable(dues, func(i, j int) bool {
		a, b := dues[i].At, dues[j].At
		return !a.IsZero() && (b.IsZero() || a.Before(b))
	})
	return dues
}

// costPlan is when the cost cap asks the job for a snapshot and when it
// deletes the pod, on this machine's clock: the plan the pod was given
// (planCost), or, for a record that keeps none, the one its rules give at
// its price; zero without a cap, a price or a billing start.
func (r Record) costPlan() (snapshotAt, capAt time.Time) {
	if r.MaxCostUSD <= 0 {
		return time.Time{}, time.Time{}
	}
	if !r.CostCapAt.IsZero() {
		return r.SnapshotAt, r.CostCapAt
	}
	plan, err := costplan.CostCap(r.Rules, r.BillingStart, r.CostPerHr, r.earlierCost(), 0)
	if err != nil {
		return time.Time{}, time.Time{}
	}
	return time.Unix(plan.SnapshotAt, 0), time.Unix(plan.CostCapAt, 0)
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

// ReadEndedBy reads the rule the watchdog wrote before it deleted the pod
// (watchdog.EndedByFile) from dir, a copy of the run directory here (the
// results, a network volume); an error wrapping fs.ErrNotExist: none.
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
