package podenv

import (
	"math"
	"testing"
	"time"
)

func TestWorstCase(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tick := DefaultInterval
	sw := &Sweeper{Every: 10 * time.Minute, Margin: 5 * time.Minute}
	for _, c := range []struct {
		name                     string
		r                        Rules
		perHr                    float64
		sw                       *Sweeper
		follow, watchdog, sweepr time.Duration // -1: unbounded
	}{
		// The launcher's default run: 4 h, an hour's extension.
		{"default", Rules{Deadline: start.Add(4 * time.Hour)}, 2, nil,
			5*time.Hour + tick + FollowMargin, 5*time.Hour + tick, -1},
		{"default swept", Rules{Deadline: start.Add(4 * time.Hour)}, 2, sw,
			5*time.Hour + tick + FollowMargin, 5*time.Hour + tick, 5*time.Hour + 15*time.Minute},
		{"hard", Rules{Deadline: start.Add(time.Hour), HardDeadline: true}, 1, sw,
			time.Hour + tick + FollowMargin, time.Hour + tick, time.Hour + 15*time.Minute},
		// $1 at $2/h: 30 min; the watchdog's bound keeps the boot grace
		// (a launcher gone before it armed the cap).
		{"cap", Rules{Deadline: start.Add(4 * time.Hour), MaxCostUSD: 1}, 2, sw,
			30*time.Minute + tick + FollowMargin, 30*time.Minute + tick, 45 * time.Minute},
		{"cap under the boot grace", Rules{Deadline: start.Add(4 * time.Hour), MaxCostUSD: 0.1}, 2, sw,
			3*time.Minute + tick + FollowMargin, DefaultBootGrace + tick, 18 * time.Minute},
		{"cap, price unknown", Rules{Deadline: start.Add(time.Hour), MaxCostUSD: 1}, 0, nil,
			2*time.Hour + tick + FollowMargin, 2*time.Hour + tick, -1},
		{"kept", Rules{Deadline: start.Add(time.Hour), Keep: true}, 1, sw, -1, -1, -1},
		{"nothing", Rules{}, 1, sw, -1, -1, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "cap, price unknown" {
				c.r.MaxExtension = time.Hour
			}
			w := c.r.WorstCase(c.perHr, start, c.sw)
			for _, b := range []struct {
				name string
				got  Bound
				want time.Duration
			}{{"follow", w.Follow, c.follow}, {"watchdog", w.Watchdog, c.watchdog}, {"sweeper", w.Sweeper, c.sweepr}} {
				if b.want < 0 {
					if !b.got.Unbounded {
						t.Errorf("%s: %+v, want unbounded", b.name, b.got)
					}
					continue
				}
				if b.got.Unbounded || b.got.For != b.want {
					t.Errorf("%s: %+v, want %s", b.name, b.got, b.want)
				}
				if want := c.perHr * b.want.Hours(); math.Abs(b.got.USD-want) > 1e-9 {
					t.Errorf("%s: $%v, want $%v", b.name, b.got.USD, want)
				}
			}
			if w.NoSweeper != (c.sw == nil) {
				t.Errorf("NoSweeper %v", w.NoSweeper)
			}
		})
	}
}

func TestBoundLeft(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := Bound{For: 2 * time.Hour, USD: 4}
	if usd, ok := b.Left(2, start, start.Add(30*time.Minute)); !ok || math.Abs(usd-3) > 1e-9 {
		t.Fatal(usd, ok)
	}
	if usd, ok := b.Left(2, start, start.Add(3*time.Hour)); !ok || usd != 0 {
		t.Fatal(usd, ok)
	}
	if _, ok := (Bound{Unbounded: true}).Left(2, start, start); ok {
		t.Fatal("an unbounded bound has a figure")
	}
}
