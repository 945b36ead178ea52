package bench_test

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// loopScript is the baseline: the cheapest loop that wakes up every
// INTERVAL, doing nothing else.
const loopScript = `while :; do sleep "${OVERBRAINER_INTERVAL:-60}"; done
`

// tickShells are the shells the watchdog is measured under; the goal is
// stated for dash.
var tickShells = []string{"dash", "busybox", "bash"}

// BenchmarkTick measures the watchdog's steady-state tick (a running job,
// its deadline a day away, df of the run directory; INTERVAL=1) under each
// shell, and the baseline loop under the same shell, in the same way:
//
//   - cpu-ms/tick: CPU time of the shell and every process it starts, from
//     a cgroup v2 group (microseconds) or else /proc/PID/stat (10 ms ticks),
//     between the start of its 2nd pause and the start of its (2+N)th;
//   - rss-KiB: the shell's own peak resident set (VmHWM), read before it
//     is killed. (getrusage's ru_maxrss would not do: a child forked from
//     this Go process counts the parent's pages before its exec.)
//
// N is whole cycles of the watchdog's periodic work (date every
// CLOCK_EVERY ticks, df every DISK_EVERY on a disk under 87% full), so each
// counts at its rate: two cycles (20 ticks) with OVERBRAINER_BENCH_FULL=1,
// else one. The loop is measured over as many ticks.
//
//	OVERBRAINER_BENCH_FULL=1 go test -run '^$' -bench Tick/ ./bench
func BenchmarkTick(b *testing.B) {
	for _, name := range tickShells {
		for _, loop := range []bool{true, false} {
			sub := name
			script := watchdog.Script()
			if loop {
				sub = "loop_" + name
				script = loopScript
			}
			b.Run(sub, func(b *testing.B) {
				sh, _ := shtest.Lookup(name)
				shtest.Need(b, sh)
				ticks := watchdogCycle(b)
				if full() {
					ticks *= 2
				}
				for i := 0; i < b.N; i++ {
					m := measureTicks(b, sh, script, ticks)
					b.ReportMetric(float64(m.cpu.Microseconds())/1000/float64(ticks), "cpu-ms/tick")
					b.ReportMetric(float64(m.rss), "rss-KiB")
				}
			})
		}
	}
}

type tickMeasure struct {
	cpu time.Duration // over all the ticks measured
	rss int64         // KiB
}

func measureTicks(b *testing.B, sh shtest.Shell, script string, ticks int) tickMeasure {
	b.Helper()
	api := shtest.NewFakeAPI(b)
	dir := runDir(b)
	startJob(b, dir)
	env := watchdogEnv(dir, api, 1)
	env[podenv.DeadlineEnv] = itoa(time.Now().Unix() + 86400)
	g := newCPUGroup(b)
	p := shtest.Start(b, sh, script, shtest.Opts{Dir: dir, Env: env})
	pid := p.Cmd.Process.Pid
	cpu := func() time.Duration { d, _ := procCPU(pid); return d }
	if g != nil {
		defer g.remove()
		if err := g.add(pid); err != nil {
			b.Fatalf("cgroup: %v", err)
		}
		cpu = func() time.Duration { d, _ := g.usage(); return d }
	} else {
		b.Log("no writable cgroup v2: CPU time from /proc/PID/stat (10 ms resolution)")
	}
	var from, to time.Duration
	pauses(b, pid, 30*time.Second, func(k int) bool {
		switch k {
		case 2:
			from = cpu()
		case 2 + ticks:
			to = cpu()
			return false
		}
		return true
	})
	m := tickMeasure{cpu: to - from, rss: statusKiB(pid, "VmHWM")}
	p.KillGroup()
	<-p.Done()
	if m.rss == 0 {
		b.Fatal("no VmHWM for the shell")
	}
	return m
}

// BenchmarkLoopProcesses counts the processes the baseline loop creates per
// turn, by the rule the watchdog package's BenchmarkTickProcesses applies to
// the watchdog itself: strace -f, process creations after the first sleep,
// divided by the sleeps that followed. bench/run.sh reports the two side by
// side.
//
//	go test -run '^$' -bench LoopProcesses ./bench
func BenchmarkLoopProcesses(b *testing.B) {
	for _, name := range tickShells {
		b.Run(name, func(b *testing.B) {
			sh, _ := shtest.Lookup(name)
			shtest.Need(b, sh)
			strace := shtest.NeedTool(b, "strace")
			for i := 0; i < b.N; i++ {
				out := filepath.Join(b.TempDir(), "strace")
				traced := shtest.Shell{Name: sh.Name, Argv: append([]string{strace, "-f", "-qq", "-o", out,
					"-e", "trace=clone,clone3,fork,vfork,execve"}, sh.Argv...)}
				p := shtest.Start(b, traced, loopScript, shtest.Opts{Env: map[string]string{podenv.IntervalEnv: "1"}})
				turns := 2
				if full() {
					turns = 5
				}
				shtest.Eventually(b, time.Minute, func() bool {
					_, sleeps := shtest.CountTicks(out)
					return sleeps >= turns+1
				}, "%d turns of the loop", turns)
				p.KillGroup()
				<-p.Done()
				clones, sleeps := shtest.CountTicks(out)
				b.ReportMetric(float64(clones)/float64(sleeps-1), "procs/tick")
			}
		})
	}
}

// watchdogCycle is the least number of ticks that holds a whole number of
// each period the watchdog script sets (its *_EVERY variables).
func watchdogCycle(b *testing.B) int {
	cycle := 1
	periods := regexp.MustCompile(`(?m)^[A-Z]+_EVERY=([0-9]+)$`).FindAllStringSubmatch(watchdog.Script(), -1)
	if len(periods) == 0 {
		b.Fatal("no *_EVERY period in the watchdog script")
	}
	for _, m := range periods {
		k, err := strconv.Atoi(m[1])
		if err != nil || k < 1 {
			b.Fatalf("bad period %s", m[0])
		}
		for c := cycle; cycle%k != 0; {
			cycle += c
		}
	}
	return cycle
}
