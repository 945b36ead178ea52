package watchdog_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The job runs as root and may replace date: once the job exists, the
// watchdog's time is the kernel's alone. On the fake clock, a job that
// starts mid-run and at once replaces date by a frozen one (2001), a far
// future one (2100) or one that hangs leaves every time rule firing at its
// time to the second: the cost snapshot and cap, the deadline's snapshot
// and delete, the extension's end, and the abandoned rule. Each rule falls
// due more than CLOCK_EVERY (10) ticks after the job started, past the tick
// at which a watchdog without a job reads date again; no further (at 83
// ticks the 84 runs were a quarter of the package's CPU).
func TestReplacedDateLeavesTheRulesOnTime(t *testing.T) {
	const t0 = 1_800_000_000
	const jobAt = t0 + 30 // the job starts, and replaces date
	type at struct {
		kind string
		kv   []string
		time int64
	}
	cases := []struct {
		name  string
		env   []string
		ended bool // the job ends as it starts
		setup func(p *pod)
		want  []at
	}{
		{"cost", nil, false,
			func(p *pod) {
				p.write(watchdog.SnapshotAt, itoa(t0+77))
				p.write(watchdog.CostCapAt, itoa(t0+1003))
			},
			[]at{
				{watchdog.KindSnapshotRequested, []string{"reason", "cost"}, t0 + 77},
				{watchdog.KindDeleteReason, []string{"reason", "cost_cap"}, t0 + 1003},
			}},
		{"deadline", []string{"OVERBRAINER_DEADLINE", itoa(t0 + 1007)}, false, nil,
			[]at{
				{watchdog.KindSnapshotRequested, []string{"reason", "deadline"}, t0 + 107},
				{watchdog.KindDeleteReason, []string{"reason", "deadline"}, t0 + 1007},
			}},
		// A lease that stays fresh holds the deadline off, up to the
		// extension's end.
		{"max_extension", []string{"OVERBRAINER_DEADLINE", itoa(t0 + 1007), "OVERBRAINER_MAX_EXTENSION", "600", "OVERBRAINER_LEASE_TTL", "100000"}, false,
			func(p *pod) { p.lease(t0) },
			[]at{
				{watchdog.KindSnapshotRequested, []string{"reason", "deadline"}, t0 + 707},
				{watchdog.KindDeleteReason, []string{"reason", "max_extension"}, t0 + 1607},
			}},
		// The job is seen ended at the first tick after it started (the
		// test does not wake the watchdog), t0+60.
		{"abandoned", []string{"OVERBRAINER_RETRIEVE_GRACE", "1201"}, true, nil,
			[]at{{watchdog.KindDeleteReason, []string{"reason", "abandoned"}, t0 + 60 + 1201}}},
	}
	modes := map[string]string{
		"frozen":  `echo 1000000000`,
		"future":  `echo 4102444800`,
		"hanging": "", // set below: the real sleep, for an hour
	}
	realSleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	modes["hanging"] = fmt.Sprintf("exec %q 3600", realSleep)
	for _, c := range cases {
		for mode, body := range modes {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
					p := newPod(t, sh)
					clk := p.fakeClock(t0)
					p.bin.Stub("date.job", body)
					job := p.jobGroup()
					hook := fmt.Sprintf(`echo %d > "$OVERBRAINER_RUN_DIR/job.pid.tmp" && mv -f "$OVERBRAINER_RUN_DIR/job.pid.tmp" "$OVERBRAINER_RUN_DIR/job.pid"; mv -f %q %q`,
						job, filepath.Join(p.bin.Dir, "date.job"), filepath.Join(p.bin.Dir, "date"))
					if c.ended {
						hook += `; echo 0 > "$OVERBRAINER_RUN_DIR/exit_code"`
					}
					clk.stepAt(jobAt, 0, hook)
					p.startTimed(c.env, false, c.setup)
					p.exit()
					evs := p.events()
					if find(evs, -1, watchdog.KindJobStarted) < 0 {
						t.Fatalf("the job was never seen\nlog:\n%s", p.logText())
					}
					for _, w := range c.want {
						i := find(evs, -1, w.kind, w.kv...)
						if i < 0 {
							t.Fatalf("no %s %v\nlog:\n%s", w.kind, w.kv, p.logText())
						}
						if got := evs[i].Time.Unix(); got != w.time {
							t.Errorf("%s %v at t0%+d, want t0%+d\nlog:\n%s", w.kind, w.kv, got-t0, w.time-t0, p.logText())
						}
					}
				})
			})
		}
	}
}

// jobGroup starts a job process group (a sleep) without writing job.pid,
// and returns its number; it is killed when the test ends.
func (p *pod) jobGroup() int {
	p.t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}
