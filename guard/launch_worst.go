package guard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// WorstCase is the most the run of spec may cost, before anything is
// created (nothing is): its GPU types are planned as Launch plans them,
// and each bound (podenv.WorstCase) is taken at the dearest one's price,
// the cost cap's time at the cheapest. sw is a sweeper said to run over
// the account, nil for none. A price the catalog does not give leaves
// CostPerHr 0: the bounds then hold times alone. Launch keeps the same
// figure, without the sweeper, in Record.WorstCase.
func WorstCase(ctx context.Context, c *runpod.Client, spec Spec, sw *podenv.Sweeper) (podenv.WorstCase, error) {
	if c == nil {
		return podenv.WorstCase{}, &podenv.FieldError{Field: "api", Reason: "is nil"}
	}
	spec = spec.withDefaults()
	if err := spec.CheckRules(); err != nil {
		return podenv.WorstCase{}, err
	}
	var volDC string
	volGB := 0
	if spec.NetworkVolumeID != "" {
		v, err := c.GetNetworkVolume(ctx, spec.NetworkVolumeID)
		if err != nil {
			return podenv.WorstCase{}, &podenv.FieldError{Field: "Spec.NetworkVolumeID", Reason: fmt.Sprintf("network volume %s: %v", spec.NetworkVolumeID, err)}
		}
		volDC, volGB = v.DataCenterID, v.SizeGB
	}
	cands, err := planGPUs(ctx, c, spec, volDC)
	if err != nil && (spec.CapacityWait == 0 || !errors.Is(err, ErrNoGPU) || errors.Is(err, errNoType)) {
		return podenv.WorstCase{}, err
	}
	return worstCase(ctx, c, spec, cands, volGB, time.Now(), sw), nil
}

// worstCase is the run's worst case over the candidates, for a create at
// start, with a network volume of volGB (0: none).
func worstCase(ctx context.Context, c api, spec Spec, cands []candidate, volGB int, start time.Time, sw *podenv.Sweeper) podenv.WorstCase {
	lo, hi := math.Inf(1), 0.0
	for _, cand := range cands {
		p, ok := 0.0, false
		if cand.cpu {
			p, ok = cpuPrice(ctx, c, cand.gpu, spec.VCPUs)
		} else if g, err := c.GetGPUType(ctx, cand.gpu); err == nil {
			p, ok = g.PricePerHour(spec.Cloud, spec.GPUCount)
		}
		if ok && p > 0 && !math.IsInf(p, 0) {
			lo, hi = min(lo, p), max(hi, p)
		}
	}
	w := spec.Rules.WorstCase(hi, start, sw)
	if hi > 0 && lo < hi {
		// At a lower price the cap's money lasts longer.
		cheap := spec.Rules.WorstCase(lo, start, sw)
		for _, b := range []struct {
			dear  *podenv.Bound
			cheap podenv.Bound
		}{{&w.Follow, cheap.Follow}, {&w.Watchdog, cheap.Watchdog}, {&w.Sweeper, cheap.Sweeper}} {
			b.dear.For = max(b.dear.For, b.cheap.For)
		}
	}
	// Storage that outlives the pod: a network volume (up to the size it
	// may grow to), a kept pod's volume once its watchdog stopped it.
	if volGB > 0 {
		w.StorageUSDPerMonth += float64(max(volGB, spec.MaxVolumeGB)) * runpod.NetworkVolumeUSDPerGBMonth
	}
	if spec.Keep && spec.VolumeGB > 0 {
		w.StorageUSDPerMonth += float64(spec.VolumeGB) * runpod.StoppedVolumeUSDPerGBMonth
	}
	return w
}

// cpuPrice is a CPU pod's list price, flavor's per vCPU times vcpus, from
// the CPU catalog where the API gives it.
func cpuPrice(ctx context.Context, c api, flavor string, vcpus int) (float64, bool) {
	cat, ok := c.(interface {
		ListCPUTypes(ctx context.Context) ([]runpod.CPUType, error)
	})
	if !ok {
		return 0, false
	}
	types, err := cat.ListCPUTypes(ctx)
	if err != nil {
		return 0, false
	}
	for _, t := range types {
		if t.ID == flavor {
			return t.Price.SecurePerVCPU * float64(vcpus), true
		}
	}
	return 0, false
}
