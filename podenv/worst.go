package podenv

import (
	"math"
	"time"
)

// FollowMargin is how much later than its watchdog a following client
// ends the pod by a rule of the watchdog's (the cost cap, the deadline
// plus its extension), a watchdog tick (Rules.Interval) added: so that a
// live watchdog acts first.
const FollowMargin = 30 * time.Second

// Sweeper is a sweeper said to run over the account (launch sweep
// --every), for the third of a run's worst cases: how often it passes and
// the margin it adds to each pod's own times (sweep.Policy's Margin).
type Sweeper struct {
	Every  time.Duration `json:"every"`
	Margin time.Duration `json:"margin"`
}

// Bound is one of a run's worst cases: the longest its pod may run
// (billing at its price) counted from the create, and what that costs.
// Unbounded says nothing of that layer of the guards ends it.
type Bound struct {
	For       time.Duration `json:"for_ns,omitempty"`
	USD       float64       `json:"usd,omitempty"`
	Unbounded bool          `json:"unbounded,omitempty"`
}

// WorstCase is the most a run's pod may cost by the rules, as values (the
// launcher words them), each bound a layer of the guards failing more:
//
//   - Follow: while a client follows the run. It ends the pod itself at
//     the cost cap or at the deadline plus its extension (a tick and
//     FollowMargin after the rule's time), whatever its watchdog does.
//   - Watchdog: the client gone, the watchdog alone: the deadline plus its
//     extension, or the cost cap, a tick later for a delete that failed
//     once. The cap reaches the watchdog from the client (before the job
//     starts); a client gone earlier leaves a job that never starts, which
//     the boot grace ends (counted here from the create, so a boot slower
//     than the grace's margin to the cap is not in it).
//   - Sweeper: the watchdog gone too: the sweeper's deadline and cost cap
//     rules plus its margin and one period; Unbounded when no sweeper was
//     said to run (NoSweeper).
//
// A kept pod's rules (Keep) bound nothing once its job exists, and a run
// with neither deadline nor cost cap runs as long as its job: every bound
// is Unbounded then. Storage that outlives the pod (a network volume, a
// kept pod's stopped volume) is not in the bounds: the caller states it
// per month.
type WorstCase struct {
	CostPerHr float64 `json:"cost_per_hr"`
	Follow    Bound   `json:"follow"`
	Watchdog  Bound   `json:"watchdog"`
	Sweeper   Bound   `json:"sweeper"`
	NoSweeper bool    `json:"no_sweeper,omitempty"`
	// StorageUSDPerMonth is what the run's storage that outlives its pod
	// bills a month (set by the caller, which knows the prices).
	StorageUSDPerMonth float64 `json:"storage_usd_per_month,omitempty"`
}

// WorstCase is the run's worst case for a pod created at start and billed
// costPerHr USD an hour (0: unknown, only the times are given), with sw
// the sweeper said to run over the account (nil: none).
func (r Rules) WorstCase(costPerHr float64, start time.Time, sw *Sweeper) WorstCase {
	e := r.EffectiveRules()
	w := WorstCase{CostPerHr: costPerHr, NoSweeper: sw == nil}
	unbounded := Bound{Unbounded: true}
	w.Follow, w.Watchdog, w.Sweeper = unbounded, unbounded, unbounded
	if r.Keep {
		return w
	}
	// The two ends no lease holds off (HardEnd, CapAt), as spans from
	// the create.
	var hard, capSpan time.Duration = -1, -1
	if end := r.HardEnd(); !end.IsZero() {
		hard = max(end.Sub(start), 0)
	}
	if capAt := r.CapAt(start, costPerHr, 0); !capAt.IsZero() {
		capSpan = capAt.Sub(start)
	}
	bound := func(end time.Duration, late time.Duration) Bound {
		if end < 0 {
			return unbounded
		}
		d := addSat(end, late)
		return Bound{For: d, USD: costPerHr * d.Hours()}
	}
	both := earliest(hard, capSpan)
	w.Follow = bound(both, e.Interval+FollowMargin)
	// A client gone before the job started leaves the cap unarmed: the
	// boot grace ends that pod.
	wd := hard
	if capSpan >= 0 {
		wd = earliest(hard, max(capSpan, e.BootGrace))
	}
	w.Watchdog = bound(wd, e.Interval)
	if sw != nil {
		w.Sweeper = bound(both, addSat(sw.Margin, sw.Every))
	}
	return w
}

// Left is what the pod may still spend by b at now, of a pod created at
// start: zero once past it. ok is false for an Unbounded b.
func (b Bound) Left(costPerHr float64, start, now time.Time) (usd float64, ok bool) {
	if b.Unbounded {
		return 0, false
	}
	left := start.Add(b.For).Sub(now)
	if left <= 0 || !(costPerHr > 0) {
		return 0, true
	}
	return costPerHr * left.Hours(), true
}

// earliest is the smaller of two spans, a negative one meaning none.
func earliest(a, b time.Duration) time.Duration {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

// addSat adds two durations that are not negative, stopping at the
// largest.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Guarded is the larger of the Follow and Watchdog bounds: the most the
// run may cost while one of its guards, on the pod or off it, works.
// Unbounded when either is.
func (w WorstCase) Guarded() Bound {
	if w.Follow.Unbounded || w.Watchdog.Unbounded {
		return Bound{Unbounded: true}
	}
	if w.Follow.For >= w.Watchdog.For {
		return w.Follow
	}
	return w.Watchdog
}
