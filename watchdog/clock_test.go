package watchdog_test

import (
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
				p.bin.Clock(t0)
				p.setEnv("OVERBRAINER_INTERVAL", "60", "OVERBRAINER_BOOT_GRACE", "100000", "OVERBRAINER_RETRIEVE_GRACE", "100000")
				p.setEnv(c.env...)
				if c.job {
					p.startJob()
				}
				if c.setup != nil {
					c.setup(p)
				}
				p.start()
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
