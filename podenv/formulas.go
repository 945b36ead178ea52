package podenv

import (
	"cmp"
	"math"
	"time"
)

// The rules' arithmetic, written once: the watchdog on the pod, a
// following client (guard), a sweeper off the pod and the launcher's
// words all take their instants from here, and a differential test holds
// the watchdog's own shell arithmetic to the same instants. Each instant
// is the one the watchdog acts at: the pod counts whole seconds (the
// deadline as Env writes it, durations rounded up), and so do these.

// SnapshotShare is the part of the cost cap after which the job is asked
// for a snapshot, unless SnapshotLead before the cap comes sooner.
const SnapshotShare = 0.95

// Extension is how long past the Deadline a fresh lease may hold the pod,
// as the watchdog applies it: none for a HardDeadline, DefaultMaxExtension
// for a zero MaxExtension. A zero means the default wherever Rules are
// read; only [Parse] reads an old pod's env that states no extension as
// [LegacyMaxExtension], and says so in MaxExtension.
func (r Rules) Extension() time.Duration {
	if r.HardDeadline {
		return 0
	}
	return cmp.Or(r.MaxExtension, DefaultMaxExtension)
}

// HardEnd is when the watchdog deletes the pod whatever the lease (its
// max_extension rule): the Deadline plus the Extension, in the watchdog's
// whole seconds. Zero without a deadline.
func (r Rules) HardEnd() time.Time {
	if r.Deadline.IsZero() {
		return time.Time{}
	}
	return time.Unix(r.Deadline.Unix()+seconds(r.Extension()), 0)
}

// MoneyLeft is what is left of the cost cap once spentUSD of it went: its
// pods' spend so far, or the earlier pods' alone for what a new pod may
// spend. It is MaxCostUSD less spentUSD, never below zero; without a cap
// (MaxCostUSD zero) nothing runs out, and it is +Inf.
func (r Rules) MoneyLeft(spentUSD float64) float64 {
	if r.MaxCostUSD <= 0 {
		return math.Inf(1)
	}
	return max(r.MaxCostUSD-spentUSD, 0)
}

// CapAt is when a pod billed costPerHr dollars an hour since billingStart
// reaches the cost cap, the run's earlier pods having spent earlierUSD of
// it: billingStart plus MoneyLeft(earlierUSD) at that price. The pod is
// deleted then, whatever the lease. Zero without a cap, a price or a
// billing start; a cap too far to count saturates some centuries ahead.
func (r Rules) CapAt(billingStart time.Time, costPerHr, earlierUSD float64) time.Time {
	if r.MaxCostUSD <= 0 || !(costPerHr > 0) || math.IsInf(costPerHr, 0) || billingStart.IsZero() {
		return time.Time{}
	}
	h := r.MoneyLeft(earlierUSD) / costPerHr
	d := time.Duration(math.MaxInt64 / 2)
	if ns := h * float64(time.Hour); ns < float64(d) {
		d = time.Duration(ns)
	}
	return billingStart.Add(d)
}

// CostAskAt is when the job of a pod billed since billingStart, whose cap
// is at capAt (CapAt), is asked for the cost cap's snapshot: at
// SnapshotShare of the way to the cap, or SnapshotLead (in the pod's whole
// seconds) before the cap when that is sooner, and not before
// billingStart. Zero when capAt is.
func (r Rules) CostAskAt(billingStart, capAt time.Time) time.Time {
	if capAt.IsZero() {
		return time.Time{}
	}
	at := billingStart.Add(time.Duration(float64(capAt.Sub(billingStart)) * SnapshotShare))
	if early := capAt.Add(-time.Duration(seconds(r.EffectiveRules().SnapshotLead)) * time.Second); early.Before(at) {
		at = early
	}
	if at.Before(billingStart) {
		at = billingStart
	}
	return at
}

// StallEnd is when the watchdog deletes the pod of a stalled job (the
// stall rule on: StallAfter) that has not moved since its stall snapshot
// was asked at asked: a SnapshotWait later, in the pod's whole seconds.
func (r Rules) StallEnd(asked time.Time) time.Time {
	return asked.Add(time.Duration(seconds(r.EffectiveRules().SnapshotWait)) * time.Second)
}

// Plan is a pod's rules with the cost cap's instants its client gave its
// watchdog (.pod/snapshot_at and .pod/cost_cap_at, from CostAskAt and
// CapAt), on the client's clock: a reader that keeps the plan (guard's
// Record embeds it) acts at the instants the pod was given, rather than
// recompute them from inputs that may have changed since. Its JSON is
// flat, the rules' fields beside the instants.
type Plan struct {
	Rules
	// SnapshotAt and CostCapAt are zero until the cap is planned, and
	// without a cap.
	SnapshotAt time.Time `json:"snapshot_at,omitzero"`
	CostCapAt  time.Time `json:"cost_cap_at,omitzero"`
}
