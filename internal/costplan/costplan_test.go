package costplan

import (
	"math"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestCostCap(t *testing.T) {
	for _, c := range []struct {
		name             string
		perHr, max       float64
		lead, offset     time.Duration
		wantSnap, wantAt time.Duration // after t0, on the local clock
	}{
		// $10 at $0.50/h: 20 h; 95% is 19 h, earlier than 20h - 15 min.
		{"share", 0.5, 10, 15 * time.Minute, 0, 19 * time.Hour, 20 * time.Hour},
		// $1 at $0.69/h: 86.956 min; 95% = 82.6 min, cap - 15 min = 71.96 min.
		{"lead", 0.69, 1, 15 * time.Minute, 0,
			86*time.Minute + 57*time.Second - 15*time.Minute, 86*time.Minute + 57*time.Second},
		// The lead is longer than the whole span: snapshot at once.
		{"at once", 1, 0.1, time.Hour, 0, 0, 6 * time.Minute},
		// The pod's clock is 90 s ahead of ours.
		{"offset", 2, 1, time.Second, 90 * time.Second, 90*time.Second + 28*time.Minute + 30*time.Second, 90*time.Second + 30*time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := CostCap(podenv.Rules{MaxCostUSD: c.max, SnapshotLead: c.lead}, t0, c.perHr, 0, c.offset)
			if err != nil {
				t.Fatal(err)
			}
			wantSnap := podUnix(t0.Add(c.wantSnap), 0)
			wantAt := podUnix(t0.Add(c.wantAt), 0)
			if p.SnapshotAt != wantSnap || p.CostCapAt != wantAt {
				t.Fatalf("got %+v, want snapshot %d cap %d", p, wantSnap, wantAt)
			}
			if p.SnapshotAt > p.CostCapAt {
				t.Fatal("snapshot after the cap")
			}
		})
	}
}

// The instants round down, never up: a cap may come a second early, never
// late.
func TestCostCapRoundsDown(t *testing.T) {
	start := time.Unix(1000, int64(900*time.Millisecond))
	p, err := CostCap(podenv.Rules{MaxCostUSD: 1, SnapshotLead: time.Second}, start, 1200, 0, 0) // 3 s of money
	if err != nil {
		t.Fatal(err)
	}
	if p.CostCapAt != 1003 || p.SnapshotAt != 1002 {
		t.Fatalf("%+v", p)
	}
	if got := podUnix(time.Unix(-5, 500), 0); got != -5 {
		t.Fatal(got)
	}
	if got := podUnix(time.Unix(5, 0), -time.Nanosecond); got != 4 {
		t.Fatal(got)
	}
}

func TestCostCapRefusesNonsense(t *testing.T) {
	for _, c := range []struct{ perHr, max float64 }{
		{0, 1}, {-1, 1}, {math.NaN(), 1}, {math.Inf(1), 1}, {1, 0}, {1, -2}, {1, math.NaN()},
	} {
		if _, err := CostCap(podenv.Rules{MaxCostUSD: c.max}, t0, c.perHr, 0, 0); err == nil {
			t.Errorf("CostCap(%v, %v) accepted", c.perHr, c.max)
		}
	}
	if p, err := CostCap(podenv.Rules{MaxCostUSD: 1}, t0, 1, 1.5, 0); err != nil || p.CostCapAt != t0.Unix() || p.SnapshotAt != t0.Unix() {
		t.Errorf("a cap the earlier pods spent whole: %+v %v, want both at the start", p, err)
	}
	if _, err := CostCap(podenv.Rules{MaxCostUSD: 1}, time.Time{}, 1, 0, 0); err == nil {
		t.Error("a cap without a billing start was planned")
	}
	if _, err := CostCap(podenv.Rules{MaxCostUSD: 1, SnapshotLead: -time.Second}, t0, 1, 0, 0); err == nil {
		t.Error("negative lead accepted")
	}
	// A huge cap saturates rather than wrapping into the past.
	p, err := CostCap(podenv.Rules{MaxCostUSD: 1e9}, t0, 1e-9, 0, 0)
	if err != nil || p.CostCapAt < t0.Unix() {
		t.Fatalf("%+v %v", p, err)
	}
}

func TestClockOffset(t *testing.T) {
	sent := time.Unix(1000, 0)
	recv := sent.Add(2 * time.Second)
	// The pod answered 1051 at our 1001 (the middle): it is ~50.5 s ahead.
	if got := ClockOffset(sent, recv, 1051); got != 50500*time.Millisecond {
		t.Fatal(got)
	}
	if got := ClockOffset(sent, sent, 990); got != -9500*time.Millisecond {
		t.Fatal(got)
	}
}

func TestSpent(t *testing.T) {
	if got := Spent(0.69, t0, t0.Add(90*time.Minute)); math.Abs(got-1.035) > 1e-9 {
		t.Fatal(got)
	}
	if Spent(1, t0, t0.Add(-time.Minute)) != 0 || Spent(0, t0, t0.Add(time.Hour)) != 0 {
		t.Fatal("negative or free time cost something")
	}
}

func TestGrow(t *testing.T) {
	const kib = 1e9 / 1024 // KiB per GB
	for _, c := range []struct {
		size   int
		usedGB float64
		want   int
		grow   bool
	}{
		{100, 50, 100, false},
		{100, 86.4, 100, false}, // 91.9% of the usable 94 GB
		{100, 86.5, 125, true},  // 92%
		{100, 93, 125, true},
		{100, 120, 157, true}, // 125 would be full at once: 157
		{10, 8.8, 13, true},
		{0, 5, 0, false},
	} {
		got, grow := Grow(c.size, int64(c.usedGB*kib))
		if got != c.want || grow != c.grow {
			t.Errorf("Grow(%d, %v GB) = %d %v, want %d %v", c.size, c.usedGB, got, grow, c.want, c.grow)
		}
		if grow && float64(int64(c.usedGB*kib))*1024 >= GrowAt*VolumeUsable*float64(got)*1e9 {
			t.Errorf("Grow(%d, %v GB) = %d is still full", c.size, c.usedGB, got)
		}
	}
}

// The client grows a volume before the watchdog's disk rule (97% of the
// usable part) would ask the job to stop.
func TestGrowComesBeforeTheWatchdogsDiskRule(t *testing.T) {
	const watchdogAct = 0.97
	for _, size := range []int{10, 100, 4000} {
		// Just under the watchdog's threshold, in KiB as du reports.
		used := int64(watchdogAct*VolumeUsable*float64(size)*1e9/1024) - 1
		if _, grow := Grow(size, used); !grow {
			t.Errorf("%d GB at the watchdog's threshold is not grown", size)
		}
	}
}
