package watchdog_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// BenchmarkReaction measures, on the real clock with the default INTERVAL of
// 60 s, how long after a time rule's due time the watchdog acts: the DELETE
// reaching the API, or snapshot.request appearing. Each due time is set a
// few seconds after the watchdog's first tick, so a loop that only slept
// INTERVAL would act up to a minute late; the interval_only sub-benchmark
// measures exactly that (the script with its due-time wakeup removed) in the
// same run, and every rule reports its latency as a ratio to it.
//
//	go test -run '^$' -bench Reaction ./watchdog
func BenchmarkReaction(b *testing.B) {
	sh, _ := shtest.Lookup("dash")
	shtest.Need(b, sh)
	shtest.NeedTool(b, "curl")
	const lead = 4 // seconds from the watchdog's start to the due time
	rules := []struct {
		name     string
		job      bool
		snapshot bool // the reaction is snapshot.request, not DELETE
		setup    func(b *testing.B, dir string, env map[string]string, due int64)
	}{
		{"deadline", false, false, func(b *testing.B, dir string, env map[string]string, due int64) {
			env["OVERBRAINER_DEADLINE"] = itoa(due)
		}},
		{"cost_cap_at", true, false, func(b *testing.B, dir string, env map[string]string, due int64) {
			env["OVERBRAINER_SNAPSHOT_LEAD"] = "0"
			writeB(b, filepath.Join(dir, watchdog.CostCapAt), itoa(due))
		}},
		{"snapshot_at", true, true, func(b *testing.B, dir string, env map[string]string, due int64) {
			writeB(b, filepath.Join(dir, watchdog.SnapshotAt), itoa(due))
		}},
		{"snapshot_lead", true, true, func(b *testing.B, dir string, env map[string]string, due int64) {
			env["OVERBRAINER_DEADLINE"] = itoa(due + 900)
			env["OVERBRAINER_SNAPSHOT_LEAD"] = "900"
		}},
		{"boot_grace", false, false, nil},
		{"retrieve_grace", true, false, func(b *testing.B, dir string, env map[string]string, due int64) {
			writeB(b, filepath.Join(dir, watchdog.ExitCode), "0\n")
		}},
	}
	var (
		baseOnce sync.Once
		baseline float64
	)
	base := func(b *testing.B) float64 {
		baseOnce.Do(func() {
			script := strings.Replace(watchdog.Script(), "    wait_s=$((next - n))\n", "    :\n", 1)
			if script == watchdog.Script() {
				b.Fatal("could not remove the due-time wakeup for the baseline")
			}
			baseline = reaction(b, sh, script, lead, false, false, func(b *testing.B, dir string, env map[string]string, due int64) {
				env["OVERBRAINER_DEADLINE"] = itoa(due)
			}, "")
		})
		return baseline
	}
	b.Run("interval_only", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.ReportMetric(base(b), "s/reaction")
		}
	})
	for _, r := range rules {
		b.Run(r.name, func(b *testing.B) {
			var sum float64
			for i := 0; i < b.N; i++ {
				sum += reaction(b, sh, watchdog.Script(), lead, r.job, r.snapshot, r.setup, r.name)
			}
			lat := sum / float64(b.N)
			b.ReportMetric(lat, "s/reaction")
			b.ReportMetric(lat/base(b), "ratio/interval_only")
			if lat > 2 {
				b.Errorf("%s: reacted %.2f s after its due time, want <= 2 s", r.name, lat)
			}
		})
	}
}

func writeB(b testing.TB, path, s string) {
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
}

// reaction runs one watchdog with INTERVAL=60 and a rule due lead seconds
// after its start, and returns the seconds from the due time to the action.
func reaction(b *testing.B, sh shtest.Shell, script string, lead int64, job, snapshot bool,
	setup func(*testing.B, string, map[string]string, int64), rule string) float64 {
	b.Helper()
	api := shtest.NewFakeAPI(b)
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, watchdog.PodDir), 0o755); err != nil {
		b.Fatal(err)
	}
	env := map[string]string{
		"OVERBRAINER_RUN_DIR": dir, "RUNPOD_POD_ID": podID, "RUNPOD_API_KEY": apiKey,
		"OVERBRAINER_API_URL": api.URL(), "OVERBRAINER_INTERVAL": "60", "OVERBRAINER_PROBE_WAIT": "0",
	}
	// Start late in a second: date +%s only counts whole seconds, so a tick
	// late in a second is the worst case (it wakes up that late after the
	// due second begins).
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 900*time.Millisecond)))
	start := time.Now().Unix()
	due := start + lead
	switch rule {
	case "boot_grace":
		env["OVERBRAINER_BOOT_GRACE"] = itoa(lead)
	case "retrieve_grace":
		env["OVERBRAINER_RETRIEVE_GRACE"] = itoa(lead)
	}
	if setup != nil {
		setup(b, dir, env, due)
	}
	if job {
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		writeB(b, filepath.Join(dir, watchdog.JobPID), itoa(int64(cmd.Process.Pid)))
	}
	p := shtest.Start(b, sh, script, shtest.Opts{Dir: dir, Env: env})
	var acted time.Time
	shtest.Eventually(b, 3*time.Minute, func() bool {
		if snapshot {
			if _, err := os.Stat(filepath.Join(dir, watchdog.SnapshotRequest)); err == nil {
				acted = time.Now()
				return true
			}
			return false
		}
		for _, r := range api.Requests() {
			if r.Method == "DELETE" {
				acted = r.Time
				return true
			}
		}
		return false
	}, "%s: no reaction", rule)
	p.KillGroup()
	// The boot and retrieve graces count from the watchdog's own start and
	// job end, which the log records (whole seconds, as the watchdog sees them).
	if rule == "boot_grace" || rule == "retrieve_grace" {
		kind := map[string]string{"boot_grace": watchdog.KindStart, "retrieve_grace": watchdog.KindJobEnded}[rule]
		f, _ := os.Open(filepath.Join(dir, watchdog.Log))
		evs, _ := watchdog.ParseLog(f)
		f.Close()
		if i := find(evs, -1, kind); i >= 0 {
			due = evs[i].Time.Unix() + lead
		}
	}
	return acted.Sub(time.Unix(due, 0)).Seconds()
}

// BenchmarkTickProcesses counts the processes one steady-state tick creates
// (a running job, no rule near, df of the run directory), under strace, per
// shell, averaged over one cycle of the watchdog's periodic work (tickCycle);
// "volume" adds a network volume, measured by a background du.
//
//	go test -run '^$' -bench TickProcesses ./watchdog
func BenchmarkTickProcesses(b *testing.B) {
	strace := shtest.NeedTool(b, "strace")
	for _, volume := range []bool{false, true} {
		for _, sh := range shtest.All() {
			name := sh.Name
			if volume {
				if sh.Name != "dash" {
					continue
				}
				name += "_volume"
			}
			b.Run(name, func(b *testing.B) {
				shtest.Need(b, sh)
				for i := 0; i < b.N; i++ {
					b.ReportMetric(tickProcesses(b, strace, sh, volume), "procs/tick")
				}
			})
		}
	}
}

func tickProcesses(b testing.TB, strace string, sh shtest.Shell, volume bool) float64 {
	api := shtest.NewFakeAPI(b)
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, watchdog.PodDir), 0o755); err != nil {
		b.Fatal(err)
	}
	job := exec.Command("sleep", "600")
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := job.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = job.Process.Kill(); _ = job.Wait() })
	writeB(b, filepath.Join(dir, watchdog.JobPID), itoa(int64(job.Process.Pid)))
	env := map[string]string{
		"OVERBRAINER_RUN_DIR": dir, "RUNPOD_POD_ID": podID, "RUNPOD_API_KEY": apiKey,
		"OVERBRAINER_API_URL": api.URL(), "OVERBRAINER_INTERVAL": "1",
		"OVERBRAINER_DEADLINE": itoa(time.Now().Unix() + 86400),
	}
	if volume {
		env["OVERBRAINER_VOLUME_DIR"] = b.TempDir()
		env["OVERBRAINER_VOLUME_GB"] = "10"
	}
	out := filepath.Join(b.TempDir(), "strace")
	wrapped := shtest.Shell{Name: sh.Name, Argv: append([]string{strace, "-f", "-qq", "-o", out,
		"-e", "trace=clone,clone3,fork,vfork,execve"}, sh.Argv...)}
	p := shtest.Start(b, wrapped, watchdog.Script(), shtest.Opts{Dir: dir, Env: env})
	ticks := tickCycle(b)
	shtest.Eventually(b, time.Minute, func() bool {
		_, sleeps := shtest.CountTicks(out)
		return sleeps >= ticks+1
	}, "%d ticks", ticks)
	p.KillGroup()
	<-p.Done()
	clones, sleeps := shtest.CountTicks(out)
	if sleeps < 2 {
		b.Fatal("no ticks traced")
	}
	return float64(clones) / float64(sleeps-1)
}

// tickCycle is the number of ticks over which the watchdog's periodic work
// repeats: date every CLOCK_EVERY ticks, df at least every DISK_EVERY (on a
// disk under 87% full, exactly that). A count over whole cycles counts each
// of them at its rate, whatever tick the count starts at.
func tickCycle(b testing.TB) int {
	cycle := 1
	for _, name := range []string{"CLOCK_EVERY", "DISK_EVERY"} {
		m := regexp.MustCompile(`(?m)^` + name + `=([0-9]+)$`).FindStringSubmatch(watchdog.Script())
		if m == nil {
			b.Fatalf("no %s in the watchdog script", name)
		}
		k, _ := strconv.Atoi(m[1])
		if k < 1 {
			b.Fatalf("%s=%s in the watchdog script", name, m[1])
		}
		c := cycle
		for c%k != 0 {
			c += cycle
		}
		cycle = c
	}
	return cycle
}
