package bench_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// full reports whether bench/run.sh asked for the real measurement
// (OVERBRAINER_BENCH_FULL=1). Without it every benchmark runs a short
// version of itself, so that `go test -bench . -benchtime 1x ./...` stays a
// quick smoke test.
func full() bool { return os.Getenv("OVERBRAINER_BENCH_FULL") == "1" }

const (
	benchPodID  = "benchpod1"
	benchAPIKey = "rpa_BENCH_pod_scoped_key"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func writeFile(b testing.TB, path, s string) {
	b.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
}

// startJob starts a long job in its own process group, as the job scripts
// do, and records it in dir/job.pid.
func startJob(b testing.TB, dir string) *exec.Cmd {
	b.Helper()
	job := exec.Command("sleep", "3600")
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := job.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = syscall.Kill(-job.Process.Pid, syscall.SIGKILL)
		_ = job.Wait()
	})
	writeFile(b, filepath.Join(dir, watchdog.JobPID), itoa(int64(job.Process.Pid)))
	return job
}

// runDir makes a run directory with its .pod directory.
func runDir(b testing.TB) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, watchdog.PodDir), 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// watchdogEnv is the pod's environment for a watchdog talking to api.
func watchdogEnv(dir string, api *shtest.FakeAPI, interval int) map[string]string {
	return map[string]string{
		podenv.RunDirEnv:     dir,
		"RUNPOD_POD_ID":      benchPodID,
		"RUNPOD_API_KEY":     benchAPIKey,
		podenv.APIURLEnv:     api.URL(),
		podenv.IntervalEnv:   strconv.Itoa(interval),
		podenv.ProbeWaitEnv:  "1",
		podenv.ProbeTriesEnv: "3",
	}
}

// sleepChild returns the pid of pid's child running sleep, 0 when there is
// none. Every watchdog tick (and every turn of the baseline loop) ends in
// one sleep, so a new sleep child marks the start of a tick's pause.
func sleepChild(pid int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(raw)) {
		c, _ := strconv.Atoi(f)
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c))
		if strings.TrimSpace(string(comm)) == "sleep" {
			return c
		}
	}
	return 0
}

// pauses calls fn at the start of each of pid's pauses (each new sleep
// child), with the count so far, until fn returns false. It fails the
// benchmark when no new pause comes within timeout.
func pauses(b testing.TB, pid int, timeout time.Duration, fn func(k int) bool) {
	b.Helper()
	if err := watchPauses(pid, timeout, fn); err != nil {
		b.Fatal(err)
	}
}

// watchPauses is pauses for any goroutine: it returns the failure.
func watchPauses(pid int, timeout time.Duration, fn func(k int) bool) error {
	last, k := 0, 0
	deadline := time.Now().Add(timeout)
	for {
		if c := sleepChild(pid); c != 0 && c != last {
			last = c
			k++
			if !fn(k) {
				return nil
			}
			deadline = time.Now().Add(timeout)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d: no pause (sleep child) for %v after %d", pid, timeout, k)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cpuGroup is a cgroup v2 group whose cpu.stat counts the CPU time of every
// process in it, children included, to the microsecond. /proc's
// clock-tick counters (10 ms) are the fallback where no cgroup v2 hierarchy
// is writable.
type cpuGroup struct{ dir string }

var cgroupSeq atomic.Int64

// newCPUGroup makes a fresh cgroup v2 group, or returns nil when there is
// no writable cgroup v2 hierarchy.
func newCPUGroup(b testing.TB) *cpuGroup {
	b.Helper()
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != "cgroup2" {
			continue
		}
		dir := filepath.Join(f[1], fmt.Sprintf("overbrainer-bench-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			continue
		}
		g := &cpuGroup{dir: dir}
		if _, err := g.usage(); err != nil {
			_ = os.Remove(dir)
			continue
		}
		return g
	}
	return nil
}

// add moves pid (and its future children) into the group.
func (g *cpuGroup) add(pid int) error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// usage is the group's CPU time so far.
func (g *cpuGroup) usage() (time.Duration, error) {
	raw, err := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	return 0, fmt.Errorf("%s: no usage_usec", g.dir)
}

// remove deletes the group once its processes are gone (waiting a little
// for the kernel to let go of them).
func (g *cpuGroup) remove() {
	for i := 0; i < 200; i++ {
		if os.Remove(g.dir) == nil {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// procCPU is pid's CPU time with that of its reaped children, from
// /proc/PID/stat (clock ticks of 10 ms).
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// After the comm: state is field 3, utime..cstime are fields 14..17.
	var ticks int64
	for _, idx := range []int{14, 15, 16, 17} {
		v, err := strconv.ParseInt(f[idx-3], 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100, nil
}

// statusKiB reads a "Name:   N kB" line of /proc/PID/status.
func statusKiB(pid int, name string) int64 {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
