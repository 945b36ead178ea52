package sweep

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// The decisions over every status, known and unknown, every missing or
// odd field, every rule at its boundary, kept and not kept.
func TestJudgeTable(t *testing.T) {
	h, m := time.Hour, time.Minute
	p := Policy{Now: func() time.Time { return sweepNow }}
	// Boundaries, with the default graces: exited 10m, margin 5m, boot
	// grace 30m, extension 1h.
	deadlineAt := func(ago time.Duration) string { return unix(sweepNow.Add(-ago)) }
	type row struct {
		name string
		pod  runpod.Pod
		rule Rule
	}
	rows := []row{
		{"exited at the grace", guarded("a", runpod.StatusExited, h, h-10*m), RuleExited},
		{"exited a second before", guarded("a", runpod.StatusExited, h, h-10*m+time.Second), RuleKeep},
		{"error at the grace", guarded("a", runpod.StatusError, h, h-10*m), RuleExited},
		{"exited, never started, past the grace", guarded("a", runpod.StatusExited, 11*m, -1), RuleExited},
		{"provisioning at boot grace plus margin", guarded("a", runpod.StatusProvisioning, 35*m, -1), RuleNeverRan},
		{"provisioning a second before", guarded("a", runpod.StatusProvisioning, 35*m-time.Second, -1), RuleKeep},
		{"starting past it", guarded("a", runpod.StatusStarting, 36*m, -1), RuleNeverRan},
		{"starting, started once", guarded("a", runpod.StatusStarting, 36*m, m), RuleKeep},
		{"running without startedAt", guarded("a", runpod.StatusRunning, 100*h, -1), RuleKeep},
		// The default extension, an hour: a pod whose watchdog is gone
		// goes an hour and the margin past its deadline.
		{"at deadline plus extension plus margin", guarded("a", runpod.StatusRunning, 30*h, m,
			podenv.DeadlineEnv, deadlineAt(h+5*m)), RuleDeadline},
		{"a second before", guarded("a", runpod.StatusRunning, 30*h, m,
			podenv.DeadlineEnv, deadlineAt(h+5*m-time.Second)), RuleKeep},
		// A contract-1 pod states no extension: its watchdog took 24 h.
		{"contract 1 at deadline plus 24h plus margin", guarded("a", runpod.StatusRunning, 30*h, m,
			podenv.DeadlineEnv, deadlineAt(24*h+5*m), podenv.ContractEnv, "-", podenv.MaxExtensionEnv, "-"), RuleDeadline},
		{"contract 1 a second before", guarded("a", runpod.StatusRunning, 30*h, m,
			podenv.DeadlineEnv, deadlineAt(24*h+5*m-time.Second), podenv.ContractEnv, "-", podenv.MaxExtensionEnv, "-"), RuleKeep},
		{"hard deadline at the margin", guarded("a", runpod.StatusRunning, 30*h, m,
			podenv.DeadlineEnv, deadlineAt(5*m), podenv.MaxExtensionEnv, "0"), RuleDeadline},
		// 5 dollars at 2 an hour: 2.5 h, plus the margin.
		{"at the cap plus margin", guarded("a", runpod.StatusRunning, 150*m+5*m, m, podenv.MaxCostEnv, "5"), RuleCostCap},
		{"a second before the cap", guarded("a", runpod.StatusRunning, 155*m-time.Second, m, podenv.MaxCostEnv, "5"), RuleKeep},
		{"a cap past 2100", guarded("a", runpod.StatusRunning, 100*h, m, podenv.MaxCostEnv, "2000000000"), RuleKeep},
		{"a tiny cap at a tiny price", guarded("a", runpod.StatusRunning, 100*h, m, podenv.MaxCostEnv, "0.000001"), RuleCostCap},
		{"terminated", guarded("a", runpod.StatusTerminated, 100*h, m), RuleKeep},
		{"terminated, env garbled", guarded("a", runpod.StatusTerminated, 100*h, m, podenv.KeepEnv, "x"), RuleKeep},
	}
	for _, st := range []runpod.PodStatus{"PAUSED", "", "running", "EXITED "} {
		rows = append(rows, row{"status " + strconv.Quote(string(st)), guarded("a", st, 100*h, -1), RuleCannotJudge})
	}
	odd := func(name string, edit func(*runpod.Pod)) row {
		pod := guarded("a", runpod.StatusExited, 100*h, m, podenv.DeadlineEnv, deadlineAt(100*h))
		edit(&pod)
		return row{name, pod, RuleCannotJudge}
	}
	rows = append(rows,
		odd("no createdAt", func(p *runpod.Pod) { p.CreatedAt = time.Time{} }),
		odd("an empty startedAt", func(p *runpod.Pod) { p.StartedAt = &time.Time{} }),
		odd("a price not a number", func(p *runpod.Pod) { p.CostPerHr = math.NaN() }),
		odd("a negative price", func(p *runpod.Pod) { p.CostPerHr = -1 }),
		odd("an infinite price", func(p *runpod.Pod) { p.CostPerHr = math.Inf(1) }),
		odd("a contract from the future", func(p *runpod.Pod) { p.Env[podenv.ContractEnv] = "99" }),
	)
	for name := range podEnv("a") {
		switch name {
		case podenv.RunIDEnv, podenv.HostKeyEnv, "JUPYTER_DISABLE", podenv.ContractEnv, podenv.DeadlineEnv,
			podenv.StallAfterEnv: // an older release's pod lacks it
			continue // the marker (unmarked, below), not read, or optional
		}
		rows = append(rows, odd("without "+name, func(p *runpod.Pod) { delete(p.Env, name) }))
	}
	for _, kv := range [][2]string{
		{podenv.BootGraceEnv, "+3600"}, {podenv.BootGraceEnv, "1800s"}, {podenv.KeepEnv, "true"},
		{podenv.DeadlineEnv, "-1"}, {podenv.DeadlineEnv, "1.7e9"}, {podenv.MaxExtensionEnv, "1d"},
		{podenv.MaxCostEnv, "5$"}, {podenv.MaxCostEnv, "Inf"}, {podenv.WorkdirEnv, "relative"},
	} {
		rows = append(rows, odd(kv[0]+"="+kv[1], func(p *runpod.Pod) { p.Env[kv[0]] = kv[1] }))
	}
	unmarked := guarded("a", runpod.StatusExited, 100*h, m)
	unmarked.Env = nil
	other := guarded("a", runpod.StatusExited, 100*h, m, podenv.RunIDEnv, "b")
	badName := guarded("a", runpod.StatusExited, 100*h, m)
	badName.Name = podenv.PodNamePrefix + "a/b"
	rows = append(rows, row{"no env", unmarked, RuleUnmarked}, row{"another run's marker", other, RuleUnmarked},
		row{"a name that is no run id", badName, RuleUnmarked})

	for _, r := range rows {
		for _, kept := range []bool{false, true} {
			pod := r.pod
			want := r.rule
			if kept && pod.Env != nil && pod.Env[podenv.KeepEnv] == "0" {
				pod.Env = clone(pod.Env)
				pod.Env[podenv.KeepEnv], pod.Env[podenv.KeepIdleEnv] = "1", "3600"
				if want != RuleCannotJudge && want != RuleUnmarked {
					want = RuleKeep // a kept pod is never deleted by a rule
				}
			} else if kept {
				continue
			}
			d := Judge(pod, sweepNow, p)
			if d.Rule != want || d.Delete != deletes(want) || d.Why == "" {
				t.Errorf("%s (kept %v): %s; want rule %s", r.name, kept, d, want)
			}
		}
	}
}

func deletes(r Rule) bool {
	return r == RuleExited || r == RuleNeverRan || r == RuleDeadline || r == RuleCostCap
}

func clone(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// abandoned is the rules, computed apart from Judge, in float seconds
// from the raw fields: whether some rule would delete the pod.
func abandoned(pod runpod.Pod, now time.Time) bool {
	env := pod.Env
	if env[podenv.KeepEnv] != "0" || pod.CreatedAt.IsZero() {
		return false
	}
	num := func(name string, def float64) float64 {
		v, ok := env[name]
		if !ok {
			return def
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	secs := func(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
	n, created := secs(now), secs(pod.CreatedAt)
	const grace, margin = 600.0, 300.0
	switch pod.Status {
	case runpod.StatusExited, runpod.StatusError:
		since := created
		if pod.StartedAt != nil && secs(*pod.StartedAt) > since {
			since = secs(*pod.StartedAt)
		}
		if n-since >= grace {
			return true
		}
	}
	known := pod.Status == runpod.StatusProvisioning || pod.Status == runpod.StatusStarting ||
		pod.Status == runpod.StatusExited || pod.Status == runpod.StatusError
	if known && pod.StartedAt == nil && n-created >= num(podenv.BootGraceEnv, math.NaN())+margin {
		return true
	}
	if dl := num(podenv.DeadlineEnv, math.NaN()); n >= dl+num(podenv.MaxExtensionEnv, 86400)+margin {
		return true
	}
	c := num(podenv.MaxCostEnv, 0)
	return c > 0 && pod.CostPerHr > 0 && (n-created)/3600*pod.CostPerHr >= c+margin/3600*pod.CostPerHr
}

// randomPod is a guarded pod of random status, times, price and env.
func randomPod(r *rand.Rand) runpod.Pod {
	statuses := []runpod.PodStatus{runpod.StatusProvisioning, runpod.StatusStarting, runpod.StatusRunning,
		runpod.StatusExited, runpod.StatusError, runpod.StatusTerminated, "PAUSED"}
	span := func(max time.Duration) time.Duration { return time.Duration(r.Int64N(int64(max))) }
	age := span(100 * time.Hour)
	started := time.Duration(-1)
	if r.IntN(3) > 0 {
		started = span(age + 1)
	}
	pod := guarded("r"+strconv.Itoa(r.IntN(1000)), statuses[r.IntN(len(statuses))], age, started)
	pod.CostPerHr = []float64{0, 0.2, 2, 40}[r.IntN(4)]
	if r.IntN(2) == 0 {
		pod.Env[podenv.DeadlineEnv] = unix(sweepNow.Add(span(100*time.Hour) - 70*time.Hour))
	} else {
		delete(pod.Env, podenv.DeadlineEnv)
	}
	pod.Env[podenv.MaxExtensionEnv] = strconv.Itoa([]int{0, 60, 3600, 86400, 200000}[r.IntN(5)])
	pod.Env[podenv.BootGraceEnv] = strconv.Itoa([]int{1, 600, 1800, 7200}[r.IntN(4)])
	if r.IntN(2) == 0 {
		pod.Env[podenv.MaxCostEnv] = []string{"0.5", "5", "100", "2000000000"}[r.IntN(4)]
	}
	if r.IntN(5) == 0 {
		pod.Env[podenv.KeepEnv], pod.Env[podenv.KeepIdleEnv] = "1", "3600"
	}
	return pod
}

// Over generated pods: any pod Judge deletes satisfies a rule computed
// apart; and removing or garbling any one field never turns keep into
// delete. (Removing startedAt is not among the changes: its absence is
// the never-ran rule's evidence that the pod never started.)
func TestJudgeProperties(t *testing.T) {
	p := Policy{Now: func() time.Time { return sweepNow }}
	r := rand.New(rand.NewPCG(26, 1))
	for i := range 3000 {
		pod := randomPod(r)
		d := Judge(pod, sweepNow, p)
		if d.Delete && !abandoned(pod, sweepNow) {
			t.Fatalf("pod %d deleted by no rule computed apart: %s\n%+v", i, d, pod)
		}
		if d.Delete {
			continue
		}
		var changes []func(*runpod.Pod)
		for name := range pod.Env {
			changes = append(changes,
				func(q *runpod.Pod) { delete(q.Env, name) },
				func(q *runpod.Pod) { q.Env[name] = "x" },
				func(q *runpod.Pod) { q.Env[name] = "" },
				func(q *runpod.Pod) { q.Env[name] = q.Env[name] + "0" })
		}
		changes = append(changes,
			func(q *runpod.Pod) { q.Status = "GARBLED" },
			func(q *runpod.Pod) { q.Status = "" },
			func(q *runpod.Pod) { q.CreatedAt = time.Time{} },
			func(q *runpod.Pod) { q.StartedAt = &time.Time{} },
			func(q *runpod.Pod) { q.CostPerHr = math.NaN() },
			func(q *runpod.Pod) { q.CostPerHr = 0 },
			func(q *runpod.Pod) { q.Name = "garbled" },
			func(q *runpod.Pod) { q.Env = nil },
		)
		for j, change := range changes {
			q := pod
			q.Env = clone(pod.Env)
			change(&q)
			if dq := Judge(q, sweepNow, p); dq.Delete {
				t.Fatalf("pod %d, change %d turned keep (%s) into delete: %s\nbefore %+v\nafter %+v", i, j, d, dq, pod.Env, q.Env)
			}
		}
	}
}

// A kept pod is left, and the sweep says what ends it: its watchdog's idle
// bound, or nothing but rm when it has none (a pod of contract 2 had none).
func TestJudgeKeptSaysItsIdleBound(t *testing.T) {
	p := Policy{}
	for _, c := range []struct {
		name, contract, idle, want string
	}{
		{"bounded", "3", "5400", "unused for 1h30m0s after its job ended (kept_idle)"},
		{"unbounded", "3", "0", "no idle bound (--keep-idle 0)"},
		{"contract 2", "2", "", "no idle bound (--keep-idle 0)"},
	} {
		pod := guarded("k", runpod.StatusRunning, time.Hour, 0, podenv.KeepEnv, "1", podenv.ContractEnv, c.contract)
		pod.Env[podenv.KeepIdleEnv] = c.idle
		if c.idle == "" {
			delete(pod.Env, podenv.KeepIdleEnv)
		}
		d := Judge(pod, sweepNow, p)
		if d.Rule != RuleKeep || d.Delete || !d.Kept || !strings.Contains(d.Why, c.want) {
			t.Errorf("%s: %s (why %q); want kept, left, saying %q", c.name, d, d.Why, c.want)
		}
	}
}

// A kept pod its watchdog stopped when idle (kept_idle, a pod volume) is
// left however long it has been EXITED: its volume keeps the user's data
// until an explicit rm, and the sweep says its storage still bills.
func TestJudgeLeavesAStoppedKeptPod(t *testing.T) {
	pod := guarded("k", runpod.StatusExited, 100*time.Hour, time.Minute, podenv.KeepEnv, "1", podenv.PodVolumeGBEnv, "20")
	pod.CostPerHr = 0
	d := Judge(pod, sweepNow, Policy{})
	if d.Rule != RuleKeep || d.Delete || !d.Kept || !strings.Contains(d.Why, "storage still bills") {
		t.Errorf("%s (why %q); want kept and left, its storage billing", d, d.Why)
	}
}
