package costplan

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// Plan holds the two instants the client writes for the watchdog, as Unix
// seconds on the pod's clock.
type Plan struct {
	// SnapshotAt (.pod/snapshot_at) is when the watchdog asks the job for a
	// snapshot (podenv's Rules.CostAskAt).
	SnapshotAt int64
	// CostCapAt (.pod/cost_cap_at) is when the money runs out (podenv's
	// Rules.CapAt): the watchdog deletes the pod then, whatever the lease.
	CostCapAt int64
}

// CostCap plans the cost cap of rules for a pod billed costPerHr USD an
// hour since billingStart (the local clock), the run's earlier pods having
// spent earlierUSD of it, by podenv's formulas. podOffset is the pod's
// clock minus the local clock (see ClockOffset). Both instants are rounded
// down: early is the safe side of a cap. A cap the earlier pods spent whole
// is at billingStart.
func CostCap(rules podenv.Rules, billingStart time.Time, costPerHr, earlierUSD float64, podOffset time.Duration) (Plan, error) {
	left := rules.MoneyLeft(earlierUSD)
	switch {
	case !(costPerHr > 0) || math.IsInf(costPerHr, 0):
		return Plan{}, fmt.Errorf("costplan: the pod's cost per hour is %v: a cost cap cannot be planned", costPerHr)
	case !(rules.MaxCostUSD > 0) || math.IsInf(left, 0):
		return Plan{}, fmt.Errorf("costplan: max cost %v USD is not positive", rules.MaxCostUSD)
	case billingStart.IsZero():
		return Plan{}, errors.New("costplan: no billing start")
	case rules.SnapshotLead < 0:
		return Plan{}, errors.New("costplan: negative snapshot lead")
	}
	capAt := rules.CapAt(billingStart, costPerHr, earlierUSD)
	return Plan{
		SnapshotAt: podUnix(rules.CostAskAt(billingStart, capAt), podOffset),
		CostCapAt:  podUnix(capAt, podOffset),
	}, nil
}

func podUnix(t time.Time, offset time.Duration) int64 {
	pt := t.Add(offset)
	s := pt.Unix()
	if pt.Before(time.Unix(s, 0)) {
		s--
	}
	return s
}

// ClockOffset estimates the pod's clock minus the local clock from a `date
// +%s` that the pod answered with podUnix, asked at sent and answered at
// received (local clock). The pod's second is taken at its middle, and the
// reading at the middle of the round trip.
func ClockOffset(sent, received time.Time, podUnix int64) time.Duration {
	mid := sent.Add(received.Sub(sent) / 2)
	pod := time.Unix(podUnix, int64(500*time.Millisecond))
	return pod.Sub(mid)
}

// Spent is what a pod billed costPerHr USD an hour has cost from start to
// end: an estimate from the price, not Runpod's invoice.
func Spent(costPerHr float64, start, end time.Time) float64 {
	if end.Before(start) || !(costPerHr > 0) {
		return 0
	}
	return costPerHr * end.Sub(start).Hours()
}

// Volume growth: a network volume is grown by GrowFactor when what it holds
// reaches GrowAt of its usable part (VolumeUsable of its size, as the
// watchdog counts it), as many times as it takes to bring the usage back
// under GrowAt. The watchdog asks for a snapshot at 97% of the usable part:
// growing first keeps a filling volume from ending the job.
const (
	GrowAt       = 0.92
	GrowFactor   = 1.25
	VolumeUsable = 0.94
)

// bytesPerGB is Runpod's GB, the one the watchdog uses too.
const bytesPerGB = 1e9

// Grow says whether a network volume of sizeGB holding usedKiB KiB (du -sk)
// should grow, and to what size in GB.
func Grow(sizeGB int, usedKiB int64) (newGB int, grow bool) {
	if sizeGB <= 0 || usedKiB < 0 {
		return sizeGB, false
	}
	used := float64(usedKiB) * 1024
	full := func(gb int) bool { return used >= GrowAt*VolumeUsable*float64(gb)*bytesPerGB }
	if !full(sizeGB) {
		return sizeGB, false
	}
	newGB = sizeGB
	for full(newGB) {
		newGB = int(math.Ceil(float64(newGB) * GrowFactor))
	}
	return newGB, true
}

// Money formats USD for a person, with enough digits for the cents of a
// short run.
func Money(usd float64) string {
	return fmt.Sprintf("$%.*f", moneyDigits(usd), usd)
}

// MoneyUp is Money rounded up at its last digit, for a bound: the figure
// shown is never below the bound.
func MoneyUp(usd float64) string {
	if usd == 0 {
		return Money(0)
	}
	n := moneyDigits(usd)
	scale := math.Pow10(n)
	// The epsilon keeps a float's noise past an exact figure from
	// rounding it up a digit.
	up := math.Ceil(usd*scale-1e-9) / scale
	return fmt.Sprintf("$%.*f", moneyDigits(up), up)
}

// moneyDigits is how many decimals Money gives usd.
func moneyDigits(usd float64) int {
	switch {
	case usd == 0:
		return 0
	case usd < 0.01:
		return 4
	case usd < 10:
		return 3
	}
	return 2
}
