package podenv

import (
	"math"
	"testing"
	"time"
)

// The formulas' edges: no cap, price or start gives no cap instant; a cap
// too far to count saturates in the future rather than wrap into the
// past; the ask never comes before billing starts, nor after the cap.
func TestFormulaEdges(t *testing.T) {
	start := time.Unix(1_790_000_000, 0)
	r := Rules{MaxCostUSD: 5}
	for _, c := range []struct {
		name  string
		r     Rules
		start time.Time
		price float64
	}{
		{"no cap", Rules{}, start, 1},
		{"no price", r, start, 0},
		{"NaN price", r, start, math.NaN()},
		{"infinite price", r, start, math.Inf(1)},
		{"no start", r, time.Time{}, 1},
	} {
		if at := c.r.CapAt(c.start, c.price, 0); !at.IsZero() {
			t.Errorf("%s: CapAt = %v, want zero", c.name, at)
		}
	}
	if at := (Rules{MaxCostUSD: maxKnob}).CapAt(start, 1e-300, 0); !at.After(start.Add(100 * 365 * 24 * time.Hour)) {
		t.Errorf("a cap of centuries is at %v, not far ahead", at)
	}
	// The whole cap went to earlier pods: the cap is at once.
	if at := r.CapAt(start, 1, 9); !at.Equal(start) {
		t.Errorf("CapAt with the cap spent = %v, want the start %v", at, start)
	}
	capAt := r.CapAt(start, 600, 0) // 30 s of money, a lead of 15 min
	if ask := r.CostAskAt(start, capAt); !ask.Equal(start) {
		t.Errorf("CostAskAt = %v, want the start %v", ask, start)
	}
	if ask := r.CostAskAt(start, time.Time{}); !ask.IsZero() {
		t.Errorf("CostAskAt without a cap = %v", ask)
	}
	// A lead of a fraction of a second counts as the pod's whole second.
	r.SnapshotLead = 1500 * time.Millisecond
	capAt = start.Add(20*time.Second + 700*time.Millisecond)
	if ask, want := r.CostAskAt(start, capAt), capAt.Add(-2*time.Second); !ask.Equal(want) {
		t.Errorf("CostAskAt with a lead of 1.5 s = %v, want %v", ask, want)
	}
}
