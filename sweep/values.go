package sweep

import (
	"math"
	"time"
)

// PastBoundUSD is what a pod the decision deletes billed past the bound
// its rule set (its price times the time from Limit to Age): how much the
// enforcers before the sweeper let through. 0 for a decision that
// deletes no pod, or a pod whose price the API gave as 0.
func (d Decision) PastBoundUSD() float64 {
	if !d.Delete || d.Secret != "" || d.Age <= d.Limit || d.PricePerHr <= 0 || math.IsInf(d.PricePerHr, 0) {
		return 0
	}
	return d.PricePerHr * (d.Age - d.Limit).Hours()
}

// Deleted says the decision's delete was made and worked.
func (d Decision) Deleted() bool { return d.Done && d.Err == nil }

// Pass is when a sweep ran and how long it took, for a caller that
// measures its sweeps.
type Pass struct {
	Start time.Time
	Took  time.Duration
}
