package watchdog_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The watchdog sees that its background du ended without signalling it:
// once the shell reaped du, its pid may name another process. strace lists
// every kill the watchdog's processes make; none may name a du (or the
// timeout around it).
func TestDuEndSeenWithoutSignals(t *testing.T) {
	t.Parallel()
	strace := shtest.NeedTool(t, "strace")
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		pids, runs := filepath.Join(p.bin.Dir, ".du-pids"), filepath.Join(p.bin.Dir, ".du-runs")
		// The du's pid, and its parent's when that is timeout.
		p.onVolume(fmt.Sprintf(`{ echo $$; [ "$(cat /proc/$PPID/comm)" != timeout ] || echo $PPID; } >> %q
printf '10\t%%s\n' "$3"; echo >> %q`, pids, runs))
		p.setEnv("OVERBRAINER_SNAPSHOT_LEAD", "0")
		p.startJob()
		out := filepath.Join(t.TempDir(), "strace")
		traced := shtest.Shell{Name: sh.Name, Argv: append([]string{strace, "-f", "-qq", "-o", out, "-e", "trace=kill"}, sh.Argv...)}
		p.proc = shtest.Start(t, traced, watchdog.Script(), shtest.Opts{Dir: p.dir, Env: p.env, Bin: p.bin})
		// Two whole du runs, then the cap: a fixed cap time let a busy
		// machine reach it before the second.
		shtest.Eventually(t, wait, func() bool {
			b, _ := os.ReadFile(runs)
			return strings.Count(string(b), "\n") >= 2 || p.proc.Exited()
		}, "two du runs")
		p.write(watchdog.CostCapAt, itoa(now()))
		p.deleted(watchdog.DeleteCostCap)
		b, _ := os.ReadFile(pids)
		dus := strings.Fields(string(b))
		if len(dus) < 2 {
			t.Fatalf("du ran %d times, want several:\n%s", len(dus), p.logText())
		}
		trace, _ := os.ReadFile(out)
		for _, pid := range dus {
			if m := regexp.MustCompile(`(?m)^.*kill\(` + pid + `, .*$`).Find(trace); m != nil {
				t.Errorf("the watchdog signalled du %s: %s", pid, m)
			}
		}
	})
}

// A du stuck on a hung mount is never followed by another: here under a
// timeout that cannot end it (as with a du in uninterruptible sleep), on a
// fake clock, for minutes.
func TestHungDuNeverPilesUp(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		realSleep, err := exec.LookPath("sleep")
		if err != nil {
			t.Fatal(err)
		}
		const t0 = 1_800_000_000
		clock := p.fakeClock(t0)
		p.bin.Stub("timeout", `shift 3; exec "$@"`)
		calls := filepath.Join(p.bin.Dir, ".du-calls")
		p.onVolume(`echo "$*" >> ` + calls + `; exec ` + realSleep + ` 1000`)
		// Ten-second ticks: twenty in the 200 s, each of which would
		// start a du if a hung one did not hold the next back.
		p.setEnv("OVERBRAINER_INTERVAL", "10")
		p.startJob()
		p.start()
		shtest.Eventually(t, wait, func() bool { return clock.Now() >= t0+200 || p.proc.Exited() },
			"200 s of fake clock")
		if p.proc.Exited() {
			t.Fatalf("watchdog exited\nlog:\n%s", p.logText())
		}
		b, _ := os.ReadFile(calls)
		if n := strings.Count(string(b), "\n"); n != 1 {
			t.Errorf("du started %d times in 200 s, want 1 (the first never ended)", n)
		}
	})
}

// A steady tick on a network volume costs at most 2 processes on average
// (its sleep, and a share of the du every few ticks, which starts with an
// rm and ends with an mv): a du restarted every other tick, and the volume's
// size read at every tick, cost 4.6 under dash. Counted as
// BenchmarkTickProcesses counts them (strace), over a cycle of the
// watchdog's periodic work; a real du of an empty volume.
func TestVolumeTickProcesses(t *testing.T) {
	t.Parallel()
	strace := shtest.NeedTool(t, "strace")
	// posh and mksh have no printf, posh no kill of its own: their
	// steady tick costs more with a volume or without, and the goal is
	// stated for the shells a pod's sh is.
	shtest.ForShells(t, []string{"dash", "busybox", "bash"}, func(t *testing.T, sh shtest.Shell) {
		if got := tickProcesses(t, strace, sh, true); got > 2 {
			t.Errorf("%s: %.2f processes per tick on a network volume, want at most 2", sh.Name, got)
		}
	})
}
