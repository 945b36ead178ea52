package watchdog_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// With a fake clock (date and sleep stubs) and the default interval of 60 s,
// each time rule fires exactly at its due time: the loop sleeps until the
// next due time when that comes before the next tick. A loop that only slept
// INTERVAL would act up to 59 s late. (The real-clock latency is measured by
// BenchmarkReaction.)
func TestTimeRulesFireAtTheirDueTime(t *testing.T) {
	t.Parallel()
	const t0 = 1_800_000_000
	type at struct {
		kind string
		kv   []string
		time int64
	}
	cases := []struct {
		name  string
		env   []string
		job   bool
		setup func(p *pod)
		want  []at
	}{
		{"boot_grace", []string{"OVERBRAINER_BOOT_GRACE", "1801"}, false, nil,
			[]at{{watchdog.KindDeleteReason, []string{"reason", "never_started"}, t0 + 1801}}},
		{"deadline", []string{"OVERBRAINER_DEADLINE", itoa(t0 + 1007)}, false, nil,
			[]at{{watchdog.KindDeleteReason, []string{"reason", "deadline"}, t0 + 1007}}},
		{"lease_expiry", []string{"OVERBRAINER_DEADLINE", itoa(t0 + 100)}, false,
			func(p *pod) { p.lease(t0 + 500) },
			[]at{{watchdog.KindDeleteReason, []string{"reason", "deadline"}, t0 + 1400}}},
		{"deadline_snapshot_lead", []string{"OVERBRAINER_DEADLINE", itoa(t0 + 1007)}, true, nil,
			[]at{
				{watchdog.KindSnapshotRequested, []string{"reason", "deadline"}, t0 + 107},
				{watchdog.KindDeleteReason, []string{"reason", "deadline"}, t0 + 1007},
			}},
		{"snapshot_wait", []string{"OVERBRAINER_DEADLINE", itoa(t0 + 1007), "OVERBRAINER_SNAPSHOT_WAIT", "1013"}, true, nil,
			[]at{
				{watchdog.KindSnapshotRequested, []string{"reason", "deadline"}, t0 + 107},
				{watchdog.KindDeleteReason, []string{"reason", "deadline"}, t0 + 1120},
			}},
		{"snapshot_at_and_cost_cap", nil, true,
			func(p *pod) {
				p.write(watchdog.SnapshotAt, itoa(t0+77))
				p.write(watchdog.CostCapAt, itoa(t0+5003))
			},
			[]at{
				{watchdog.KindSnapshotRequested, []string{"reason", "cost", "cap_in_min", "83"}, t0 + 77},
				{watchdog.KindDeleteReason, []string{"reason", "cost_cap"}, t0 + 5003},
			}},
		{"cost_snapshot_lead", nil, true,
			func(p *pod) { p.write(watchdog.CostCapAt, itoa(t0+1001)) },
			[]at{
				{watchdog.KindSnapshotRequested, []string{"reason", "cost", "cap_in_min", "15"}, t0 + 101},
				{watchdog.KindDeleteReason, []string{"reason", "cost_cap"}, t0 + 1001},
			}},
		{"retrieve_grace", []string{"OVERBRAINER_RETRIEVE_GRACE", "3601"}, true,
			func(p *pod) { p.write(watchdog.ExitCode, "0\n") },
			[]at{{watchdog.KindDeleteReason, []string{"reason", "abandoned"}, t0 + 3601}}},
		// A fresh lease at the end of the retrieve grace holds the
		// abandoned rule off until it is LEASE_TTL (900) old.
		{"retrieve_grace_lease", []string{"OVERBRAINER_RETRIEVE_GRACE", "1001"}, true,
			func(p *pod) {
				p.write(watchdog.ExitCode, "0\n")
				p.lease(t0 + 903)
			},
			[]at{
				{watchdog.KindAbandonedHeld, []string{"until", itoa(t0 + 1803)}, t0 + 1001},
				{watchdog.KindDeleteReason, []string{"reason", "abandoned"}, t0 + 1803},
			}},
		// A lease stale by the end of the grace holds nothing.
		{"retrieve_grace_stale_lease", []string{"OVERBRAINER_RETRIEVE_GRACE", "1001"}, true,
			func(p *pod) {
				p.write(watchdog.ExitCode, "0\n")
				p.lease(t0 + 101)
			},
			[]at{{watchdog.KindDeleteReason, []string{"reason", "abandoned"}, t0 + 1001}}},
		// An mtime in the future holds it at most LEASE_TTL past that
		// mtime; one LEASE_TTL or more ahead holds nothing.
		{"retrieve_grace_future_lease", []string{"OVERBRAINER_RETRIEVE_GRACE", "1001"}, true,
			func(p *pod) {
				p.write(watchdog.ExitCode, "0\n")
				p.lease(t0 + 1501)
			},
			[]at{
				{watchdog.KindAbandonedHeld, []string{"until", itoa(t0 + 2401)}, t0 + 1001},
				{watchdog.KindDeleteReason, []string{"reason", "abandoned"}, t0 + 2401},
			}},
		{"retrieve_grace_far_future_lease", []string{"OVERBRAINER_RETRIEVE_GRACE", "1001"}, true,
			func(p *pod) {
				p.write(watchdog.ExitCode, "0\n")
				p.lease(t0 + 1901)
			},
			[]at{{watchdog.KindDeleteReason, []string{"reason", "abandoned"}, t0 + 1001}}},
		// The cost cap does not wait for the lease.
		{"retrieve_grace_lease_cost_cap", []string{"OVERBRAINER_RETRIEVE_GRACE", "1001"}, true,
			func(p *pod) {
				p.write(watchdog.ExitCode, "0\n")
				p.lease(t0 + 903)
				p.write(watchdog.CostCapAt, itoa(t0+1207))
			},
			[]at{
				{watchdog.KindAbandonedHeld, []string{"until", itoa(t0 + 1803)}, t0 + 1001},
				{watchdog.KindDeleteReason, []string{"reason", "cost_cap"}, t0 + 1207},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.fakeClock(t0)
				// Ticks ten minutes apart: each rule is reached by the
				// sleep to its due time, not by a tick that happens to
				// fall on it, which is what this test proves (and a tenth
				// of the ticks keeps its 91 watchdogs cheap).
				p.startTimed(append([]string{"OVERBRAINER_INTERVAL", "600"}, c.env...), c.job, c.setup)
				p.exit()
				evs := p.events()
				for _, w := range c.want {
					i := find(evs, -1, w.kind, w.kv...)
					if i < 0 {
						t.Fatalf("no %s %v\nlog:\n%s", w.kind, w.kv, p.logText())
					}
					if got := evs[i].Time.Unix(); got != w.time {
						t.Errorf("%s %v at t0%+d, want t0%+d", w.kind, w.kv, got-t0, w.time-t0)
					}
				}
			})
		})
	}
}

// The watchdog's time is the kernel's uptime plus a boot time taken from
// date, and date is read again at least every clockEvery ticks (the
// script's CLOCK_EVERY): a wall clock that steps forward past the deadline
// deletes the pod within that many ticks of the step.
const clockEvery = 10

func TestWallClockStepSeenWithinTheResync(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		const t0 = 1_800_000_000
		p := newPod(t, sh)
		c := p.fakeClock(t0)
		p.setEnv("OVERBRAINER_INTERVAL", "60", "OVERBRAINER_BOOT_GRACE", "1000000", "OVERBRAINER_DEADLINE", itoa(t0+50_000))
		const step = 100_000
		c.stepAt(t0+180, step, "")
		p.start()
		evs := p.deleted(watchdog.DeleteDeadline)
		i := find(evs, -1, watchdog.KindDeleteReason)
		seen := evs[i].Time.Unix() - (t0 + 180 + step)
		if seen < 0 || seen > clockEvery*60 {
			t.Errorf("the step was seen %d s after it, want within %d ticks (%d s)\nlog:\n%s", seen, clockEvery, clockEvery*60, p.logText())
		}
	})
}

// A clock stepped back leaves the uptime sum ahead of the wall clock until
// date is read again; no pod is deleted on that sum: here a cost cap the
// client set 300 s ahead of the stepped wall clock, read at the very next
// tick, deletes the pod at its time on the wall clock, not at once. This
// holds while no job exists: after, date is not read at all (see
// TestReplacedDateLeavesTheRulesOnTime).
func TestClockSteppedBackDeletesOnTheWallClock(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		const t0 = 1_800_000_000
		p := newPod(t, sh)
		c := p.fakeClock(t0)
		p.setEnv("OVERBRAINER_INTERVAL", "60", "OVERBRAINER_BOOT_GRACE", "1000000", "OVERBRAINER_SNAPSHOT_LEAD", "0")
		const back = -1000
		c.stepAt(t0+60, back, `echo $((wall + 300)) > "$OVERBRAINER_RUN_DIR/.pod/cost_cap_at"`)
		p.start()
		evs := p.deleted(watchdog.DeleteCostCap)
		i := find(evs, -1, watchdog.KindDeleteReason)
		if got, want := evs[i].Time.Unix(), int64(t0+60+back+300); got != want {
			t.Errorf("deleted at wall time t0%+d, want the cap, t0%+d\nlog:\n%s", got-t0, want-t0, p.logText())
		}
	})
}

// Without a readable uptime the watchdog reads date every tick, as it did
// before the uptime clock: a step is seen at the first tick after it.
func TestClockWithoutUptimeReadsDateEveryTick(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{"missing": "", "malformed": "4711\n", "two_dots": "12.34.56 7.00\n"} {
		t.Run(name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				const t0 = 1_800_000_000
				p := newPod(t, sh)
				c := p.fakeClock(t0)
				uptime := filepath.Join(t.TempDir(), "uptime")
				if content != "" {
					writeAtomic(t, uptime, content)
				}
				p.setEnv("OVERBRAINER_UPTIME", uptime, "OVERBRAINER_INTERVAL", "60",
					"OVERBRAINER_BOOT_GRACE", "1000000", "OVERBRAINER_DEADLINE", itoa(t0+50_000))
				const step = 100_000
				c.stepAt(t0+180, step, "")
				p.start()
				evs := p.deleted(watchdog.DeleteDeadline)
				i := find(evs, -1, watchdog.KindDeleteReason)
				if got, want := evs[i].Time.Unix(), int64(t0+180+step); got != want {
					t.Errorf("deleted at t0%+d, want at the first tick after the step, t0%+d\nlog:\n%s", got-t0, want-t0, p.logText())
				}
			})
		})
	}
}

// On a clock whose ticks take time (here 0.37 s each, so that date's whole
// seconds and the uptime's hundredths fall differently at every tick), and
// whose first date comes late in its second, the uptime sum lags date by up
// to a second; each sleep to a due time is measured from date, so each time
// rule still acts at the first tick whose wall time reached it, never one
// tick late.
func TestTimeRulesActAtTheFirstTickOnADriftingClock(t *testing.T) {
	t.Parallel()
	const t0 = 1_800_000_000
	cases := []struct {
		name  string
		env   []string
		job   bool
		setup func(p *pod)
		kind  string
		kv    []string
		due   int64
	}{
		{"deadline", []string{"OVERBRAINER_DEADLINE", itoa(t0 + 1007)}, false, nil,
			watchdog.KindDeleteReason, []string{"reason", "deadline"}, t0 + 1007},
		{"snapshot_lead", []string{"OVERBRAINER_DEADLINE", itoa(t0 + 1007)}, true, nil,
			watchdog.KindSnapshotRequested, []string{"reason", "deadline"}, t0 + 107},
		{"cost_cap", []string{"OVERBRAINER_SNAPSHOT_LEAD", "0"}, true,
			func(p *pod) { p.write(watchdog.CostCapAt, itoa(t0+1001)) },
			watchdog.KindDeleteReason, []string{"reason", "cost_cap"}, t0 + 1001},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				clk := p.fakeClock(t0)
				clk.late(99)
				clk.takes(37)
				p.startTimed(c.env, c.job, c.setup)
				evs, i := p.waitEvent(c.kind, c.kv...)
				if got := evs[i].Time.Unix(); got < c.due {
					t.Errorf("%s %v at t0%+d, before its time t0%+d", c.kind, c.kv, got-t0, c.due-t0)
				}
				last := -1
				for j, e := range evs[:i] {
					if e.Kind != "test_tick" {
						continue
					}
					last = j
					if e.Time.Unix() >= c.due {
						t.Fatalf("a tick at t0%+d passed its time t0%+d without %s %v\nlog:\n%s",
							e.Time.Unix()-t0, c.due-t0, c.kind, c.kv, p.logText())
					}
				}
				// The sleep before it was measured from the watchdog's
				// clock: it ends at the due time to the second, or, for a
				// job's rules, up to a second after it: once the job
				// exists the clock is the uptime against an epoch read in
				// whole seconds, which a date read late in its second
				// (as here) puts up to a second behind.
				if last < 0 {
					t.Fatalf("no tick before %s\nlog:\n%s", c.kind, p.logText())
				}
				slack := int64(0)
				if c.job {
					slack = 1
				}
				sleep, _ := strconv.ParseInt(evs[last].Fields["sleep"], 10, 64)
				if end := evs[last].Time.Unix() + sleep; end < c.due || end > c.due+slack {
					t.Errorf("the last sleep before %s %v ends at t0%+d, want its time t0%+d (+%d s)\nlog:\n%s",
						c.kind, c.kv, end-t0, c.due-t0, slack, p.logText())
				}
			})
		})
	}
}

// startTimed starts the watchdog with the default INTERVAL of 60 s, graces
// far away and env, and a job first when job is set, after setup.
func (p *pod) startTimed(env []string, job bool, setup func(p *pod)) {
	p.t.Helper()
	// The job here is silent for hours of fake time while the rule under
	// test falls due: the stall rule would take it first (it has its own
	// tests).
	p.setEnv("OVERBRAINER_INTERVAL", "60", "OVERBRAINER_BOOT_GRACE", "100000", "OVERBRAINER_RETRIEVE_GRACE", "100000",
		"OVERBRAINER_STALL_AFTER", "0")
	p.setEnv(env...)
	if job {
		p.startJob()
	}
	if setup != nil {
		setup(p)
	}
	p.start()
}
