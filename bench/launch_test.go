package bench_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// launcherEnv names a launcher binary to drive (bench/run.sh builds one);
// without it the benchmarks build ../examples/launch once.
const launcherEnv = "OVERBRAINER_BENCH_LAUNCH"

// launchJob is the job every launch runs: the built-in demo, one step of a
// second, whose first output line comes as soon as it starts.
var launchJob = []string{"--cmd", "DEMO_STEPS=1 sh train.sh"}

var (
	launcherOnce sync.Once
	launcherPath string
	launcherErr  error
)

// launcherBinary returns the launcher, built once per test binary.
func launcherBinary(b *testing.B) string {
	b.Helper()
	launcherOnce.Do(func() {
		if p := os.Getenv(launcherEnv); p != "" {
			launcherPath = p
			return
		}
		dir, err := os.MkdirTemp("", "overbrainer-bench-launch-")
		if err != nil {
			launcherErr = err
			return
		}
		launcherPath = filepath.Join(dir, "launch")
		out, err := exec.Command("go", "build", "-o", launcherPath, "../examples/launch").CombinedOutput()
		if err != nil {
			launcherErr = fmt.Errorf("building the launcher: %v\n%s", err, out)
		}
	})
	if launcherErr != nil {
		b.Fatal(launcherErr)
	}
	return launcherPath
}

// needLauncher skips (or fails under REQUIRE_SHELLS=1) where the fake's pod
// runner cannot run pods, and returns the launcher.
func needLauncher(b *testing.B) string {
	b.Helper()
	shtest.NeedPods(b, localpod.Check())
	bin := launcherBinary(b)
	if err := exec.Command(bin, "run", "-h").Run(); err != nil {
		b.Skipf("%s has no run command (yet): %v", bin, err)
	}
	return bin
}

// line is one line the launcher printed, stamped when it arrived.
type line struct {
	at     time.Time
	stdout bool
	text   string
}

// launch is one launcher process, its output stamped line by line.
type launch struct {
	started time.Time
	done    chan struct{}
	err     error

	mu    sync.Mutex
	lines []line
}

// startLaunch starts `launch run` against srv with its own state directory.
func startLaunch(b *testing.B, bin string, srv *runpodtest.Server, args ...string) *launch {
	b.Helper()
	full := append([]string{"run", "--state-dir", filepath.Join(b.TempDir(), "state"),
		"--api-url", srv.BaseURL()}, args...)
	cmd := exec.Command(bin, full...)
	cmd.Env = append(os.Environ(), "RUNPOD_API_KEY="+srv.APIKey())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l := &launch{done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	read := func(r io.Reader, isOut bool) {
		defer wg.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			now := time.Now()
			l.mu.Lock()
			l.lines = append(l.lines, line{at: now, stdout: isOut, text: sc.Text()})
			l.mu.Unlock()
		}
	}
	l.started = time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	wg.Add(2)
	go read(stdout, true)
	go read(stderr, false)
	go func() {
		wg.Wait()
		l.err = cmd.Wait()
		close(l.done)
	}()
	b.Cleanup(func() {
		select {
		case <-l.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-l.done
		}
	})
	return l
}

// wait waits for the launcher to end, and fails unless it succeeded.
func (l *launch) wait(b *testing.B, timeout time.Duration) {
	b.Helper()
	select {
	case <-l.done:
	case <-time.After(timeout):
		b.Fatalf("the launcher still runs after %v:\n%s", timeout, l.output())
	}
	if l.err != nil {
		b.Fatalf("the launcher failed: %v\n%s", l.err, l.output())
	}
}

func (l *launch) output() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s strings.Builder
	for _, ln := range l.lines {
		fmt.Fprintf(&s, "%7.3f %s\n", ln.at.Sub(l.started).Seconds(), ln.text)
	}
	return s.String()
}

// first returns when the first line matching pred arrived.
func (l *launch) first(pred func(line) bool) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.lines {
		if pred(ln) {
			return ln.at, true
		}
	}
	return time.Time{}, false
}

func stderrHas(s string) func(line) bool {
	return func(l line) bool { return !l.stdout && strings.Contains(l.text, s) }
}

func isStdout(l line) bool { return l.stdout }

// BenchmarkLaunchFirstOutput runs `launch run` with the demo job against
// the fake Runpod with its pod runner (the local emulator: real bootstrap,
// sshd and watchdog) and splits the time from the launcher's start to the
// job's first output line, from the launcher's stamped output and the
// fake's request log:
//
//   - create-s: start → the create call reaches the fake (state, keys, secret);
//   - provision-s: the create call → the pod runs (the emulator starts it);
//   - boot-s: the pod runs → its watchdog's first probe (bootstrap, sshd);
//   - connect-s: the probe → "watchdog verdict: ready" (the launcher sees
//     the pod running, connects over SSH, reads the verdict);
//   - upload-s, start-s, output-s: → "uploaded", → "job started", → the
//     job's first output line.
//
// pod-s (provision + boot) is the pod's share, and sdk-s the rest: the
// launcher's own share on top of it (goal ≤ 1 s). body-bytes is the size of
// the create call's body, body-margin-bytes what is left of Runpod's limit
// (runpod.MaxCreatePodBody). seen-running-s is how long
// after the pod ran the launcher said so (its poll). "default" runs with the
// launcher's defaults (a 2 s poll), "poll200ms" with --poll 200ms.
//
//	go test -run '^$' -bench LaunchFirstOutput -benchtime 1x ./bench
func BenchmarkLaunchFirstOutput(b *testing.B) {
	for _, v := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"poll200ms", []string{"--poll", "200ms"}},
	} {
		b.Run(v.name, func(b *testing.B) {
			bin := needLauncher(b)
			for i := 0; i < b.N; i++ {
				srv := runpodtest.NewTestServer(b, runpodtest.WithPodRunner())
				l := startLaunch(b, bin, srv, append(slices.Clone(launchJob), v.args...)...)
				l.wait(b, 3*time.Minute)
				pods := srv.Pods()
				if len(pods) != 1 {
					b.Fatalf("%d pods, want 1", len(pods))
				}
				pod := pods[0]
				var created, probed time.Time
				body := 0
				for _, r := range srv.Requests() {
					if created.IsZero() && r.Method == "POST" && r.Path == "/v2/pods" {
						created, body = r.Time, len(r.Body)
					}
					if probed.IsZero() && r.Caller == pod.ID && r.Method == "GET" {
						probed = r.Time
					}
				}
				verdict, ok1 := l.first(stderrHas("watchdog verdict: ready"))
				uploaded, ok2 := l.first(stderrHas("uploaded"))
				started, ok3 := l.first(stderrHas("job started"))
				output, ok4 := l.first(isStdout)
				if created.IsZero() || probed.IsZero() || pod.StartedAt.IsZero() || !ok1 || !ok2 || !ok3 || !ok4 {
					b.Fatalf("a phase is missing (create %v, running %v, probe %v; verdict, upload, start, output: %v %v %v %v):\n%s",
						created, pod.StartedAt, probed, ok1, ok2, ok3, ok4, l.output())
				}
				s := func(from, to time.Time) float64 { return to.Sub(from).Seconds() }
				total, podShare := s(l.started, output), s(created, probed)
				b.ReportMetric(s(l.started, created), "create-s")
				b.ReportMetric(s(created, pod.StartedAt), "provision-s")
				b.ReportMetric(s(pod.StartedAt, probed), "boot-s")
				if seen, ok := l.first(stderrHas("is running; SSH at")); ok {
					b.ReportMetric(s(pod.StartedAt, seen), "seen-running-s")
				}
				b.ReportMetric(s(probed, verdict), "connect-s")
				b.ReportMetric(s(verdict, uploaded), "upload-s")
				b.ReportMetric(s(uploaded, started), "start-s")
				b.ReportMetric(s(started, output), "output-s")
				b.ReportMetric(total, "total-s")
				b.ReportMetric(podShare, "pod-s")
				b.ReportMetric(total-podShare, "sdk-s")
				b.ReportMetric(float64(body), "body-bytes")
				b.ReportMetric(float64(runpod.MaxCreatePodBody-body), "body-margin-bytes")
				if testing.Verbose() {
					b.Logf("launch output:\n%s", l.output())
				}
			}
		})
	}
}

// BenchmarkLaunchConcurrent starts N launchers at once (the demo job, the
// launcher's defaults), each with its own run and state directory, against
// one fake Runpod whose pod runner really runs every pod, and waits for all
// of them to end with their pod deleted. It reports launches per minute,
// the median, least and most duration of a launch, the launches that failed
// (logged, not fatal), and the API requests per launch: the account key's
// (the launcher's), and the pods' own (their watchdogs').
//
//	go test -run '^$' -bench LaunchConcurrent -benchtime 1x ./bench
func BenchmarkLaunchConcurrent(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			bin := needLauncher(b)
			if !full() && n > 1 {
				b.Skip("more than one launch at once only with OVERBRAINER_BENCH_FULL=1 (bench/run.sh)")
			}
			for i := 0; i < b.N; i++ {
				srv := runpodtest.NewTestServer(b, runpodtest.WithPodRunner())
				began := time.Now()
				ls := make([]*launch, n)
				for j := range ls {
					ls[j] = startLaunch(b, bin, srv, launchJob...)
				}
				var durs []float64
				failed := 0
				for _, l := range ls {
					select {
					case <-l.done:
					case <-time.After(10 * time.Minute):
						b.Fatalf("a launcher still runs after 10 minutes:\n%s", l.output())
					}
					// A failed launch is counted, not fatal: the others'
					// numbers still stand, and the summary shows the count.
					if l.err != nil {
						if failed == 0 {
							b.Logf("a launch failed (%v):\n%s", l.err, l.output())
						}
						failed++
						continue
					}
					end, ok := l.first(stderrHas("cost: ~"))
					if !ok {
						end = time.Now()
					}
					durs = append(durs, end.Sub(l.started).Seconds())
				}
				wall := time.Since(began)
				if len(durs) == 0 {
					b.Fatalf("all %d launches failed", n)
				}
				account, pods := 0, 0
				for _, r := range srv.Requests() {
					switch r.Caller {
					case runpodtest.CallerAccount:
						account++
					case runpodtest.CallerNone:
					default:
						pods++
					}
				}
				if left := srv.Billing(); len(left) > 0 {
					b.Fatalf("%d pods left billing", len(left))
				}
				slices.Sort(durs)
				b.ReportMetric(float64(len(durs))/wall.Minutes(), "launches/min")
				b.ReportMetric(median(durs), "s/launch")
				b.ReportMetric(durs[0], "s-min/launch")
				b.ReportMetric(durs[len(durs)-1], "s-max/launch")
				b.ReportMetric(float64(len(durs)), "samples")
				b.ReportMetric(float64(failed), "failed-launches")
				b.ReportMetric(float64(account)/float64(n), "requests/launch")
				b.ReportMetric(float64(pods)/float64(n), "pod-requests/launch")
			}
		})
	}
}
