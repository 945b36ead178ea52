package main_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// binary is the launcher, built once by TestMain: the tests drive it as a
// user would, against a fake Runpod in the test process.
var binary string

// Its tests mostly wait on pods and the launcher's polls, not on the CPU:
// at GOMAXPROCS (2) at a time a 2-core machine spent 11 minutes of CI
// waiting on them; at 8, under 4, for the same CPU.
func TestMain(m *testing.M) {
	localpod.PodInit()
	shtest.DefaultParallel(8)
	dir, err := os.MkdirTemp("", "launch-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "launch")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the launcher:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needPods skips (or fails with REQUIRE_SHELLS=1) when the fake's pod runner
// cannot run pods here.
func needPods(t *testing.T) {
	t.Helper()
	shtest.NeedPods(t, localpod.Check())
}

// world is one test's fake Runpod, every exchange of which is held to
// the OpenAPI document (internal/testkit/checkedfake), and state directory.
type world struct {
	t        *testing.T
	srv      *runpodtest.Server
	stateDir string
	env      []string
}

func newWorld(t *testing.T, opts ...runpodtest.Option) *world {
	t.Helper()
	needPods(t)
	srv := checkedfake.NewTestServer(t, append([]runpodtest.Option{runpodtest.WithPodRunner()}, opts...)...)
	return &world{t: t, srv: srv, stateDir: filepath.Join(t.TempDir(), "state")}
}

// patience bounds each wait of the tests: generous, since on a loaded
// machine a pod's SSH sessions (a login shell each) can take a minute.
const patience = 5 * time.Minute

// fast are the knobs that make a run take seconds: the watchdog ticks every
// second, the lease lives 5 s and is renewed every second.
var fast = []string{
	"--poll", "500ms", "--lease-every", "1s", "--lease-ttl", "5s", "--watchdog-interval", "1s",
	"--probe-wait", "1s", "--snapshot-lead", "3s", "--snapshot-wait", "30s",
	"--start-timeout", "90s", "--verdict-timeout", "90s",
}

// demo runs the built-in demo for steps steps of one second.
func demo(steps int) []string {
	return []string{"--cmd", fmt.Sprintf("DEMO_STEPS=%d sh train.sh", steps)}
}

func (w *world) command(args ...string) *exec.Cmd {
	name, rest := args[0], args[1:]
	full := append([]string{name, "--state-dir", w.stateDir, "--api-url", w.srv.BaseURL()}, rest...)
	cmd := exec.Command(binary, full...)
	// run's account check only where a test asks for it (its env).
	cmd.Env = append(os.Environ(), "RUNPOD_API_KEY="+w.srv.APIKey(), "OVERBRAINER_ACCOUNT_CHECK=off")
	cmd.Env = append(cmd.Env, w.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// local is a state directory for --local commands, which run their own
// emulator (or a local-server's) instead of the test's.
type local struct {
	t        *testing.T
	stateDir string
	env      []string // added to the launcher's environment
}

func newLocal(t *testing.T) *local {
	t.Helper()
	needPods(t)
	return &local{t: t, stateDir: filepath.Join(t.TempDir(), "state")}
}

func (l *local) start(args ...string) *proc {
	l.t.Helper()
	cmd := l.command(args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return startProc(l.t, cmd, args)
}

// command is the launcher with args, without RUNPOD_API_KEY nor any
// OVERBRAINER_ variable of the test's environment.
func (l *local) command(args ...string) *exec.Cmd {
	full := append([]string{"--state-dir", l.stateDir}, args...)
	cmd := exec.Command(binary, full...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNPOD_API_KEY=") && !strings.HasPrefix(kv, "OVERBRAINER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "OVERBRAINER_ACCOUNT_CHECK=off")
	cmd.Env = append(cmd.Env, l.env...)
	return cmd
}

func (l *local) run(args ...string) *proc {
	l.t.Helper()
	p := l.start(args...)
	p.wait(2 * patience)
	return p
}

// proc is a launcher running in the background.
type proc struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr *shtest.SyncBuffer
	done           chan struct{}
	code           int
}

func (w *world) start(args ...string) *proc {
	w.t.Helper()
	return startProc(w.t, w.command(args...), args)
}

func startProc(t *testing.T, cmd *exec.Cmd, args []string) *proc {
	t.Helper()
	p := &proc{t: t, cmd: cmd, stdout: &shtest.SyncBuffer{}, stderr: &shtest.SyncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	t.Logf("launch %s", strings.Join(args, " "))
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		if err != nil && p.code == 0 {
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("launch %s\n--- stdout:\n%s\n--- stderr:\n%s", strings.Join(args, " "), p.stdout, p.stderr)
		}
	})
	return p
}

// wait waits for the launcher to exit and returns its status.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		// A Go program dumps its goroutines on SIGQUIT: say where it hangs.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
		p.t.Fatalf("the launcher did not exit within %s\n--- stdout:\n%s\n--- stderr:\n%s", timeout, p.stdout, p.stderr)
	}
	return 0
}

// waitOutput waits until the launcher's stdout or stderr holds text.
func (p *proc) waitOutput(text string, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.stdout.String(), text) && !strings.Contains(p.stderr.String(), text) {
		select {
		case <-p.done:
			p.t.Fatalf("the launcher exited (%d) before writing %q\n--- stdout:\n%s\n--- stderr:\n%s", p.code, text, p.stdout, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q within %s\n--- stdout:\n%s\n--- stderr:\n%s", text, timeout, p.stdout, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// run runs the launcher to its end.
func (w *world) run(args ...string) *proc {
	w.t.Helper()
	p := w.start(args...)
	p.wait(2 * patience)
	return p
}

// runs reads the state directory's runs.
func (w *world) runs() []*state.Run {
	w.t.Helper()
	return readRuns(w.t, w.stateDir)
}

// readRuns reads a state directory's runs.
func readRuns(t *testing.T, dir string) []*state.Run {
	t.Helper()
	st, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func (w *world) onlyRun() *state.Run {
	w.t.Helper()
	runs := w.runs()
	if len(runs) != 1 {
		w.t.Fatalf("%d runs, want 1", len(runs))
	}
	return runs[0]
}

// pod returns the fake's pod of a run.
func (w *world) pod(r *state.Run) runpodtest.Pod {
	w.t.Helper()
	for _, p := range w.srv.Pods() {
		if p.Name == r.PodName {
			return p
		}
	}
	w.t.Fatalf("no pod named %s", r.PodName)
	return runpodtest.Pod{}
}

// waitPodGone waits until the run's pod is terminated.
func (w *world) waitPodGone(r *state.Run, timeout time.Duration) runpodtest.Pod {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p, err := w.srv.WaitStatus(ctx, w.pod(r).ID, runpodtest.StatusTerminated)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// assertClean checks that nothing bills and no secret is left.
func (w *world) assertClean() {
	w.t.Helper()
	for _, p := range w.srv.Billing() {
		w.t.Errorf("pod %s (%s) still %s and billing", p.ID, p.Name, p.Status)
	}
	for _, s := range w.srv.Secrets() {
		w.t.Errorf("secret %s left", s.Name)
	}
}

// assertPrivate checks the state directory's modes, and that none of the
// secrets appears in it.
func (w *world) assertPrivate(secrets ...string) {
	w.t.Helper()
	err := filepath.WalkDir(w.stateDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.stateDir, p)
		results := strings.Contains(rel, string(filepath.Separator)+"results") || strings.Contains(rel, string(filepath.Separator)+"job")
		switch {
		case d.IsDir() && !results && info.Mode().Perm() != 0o700:
			w.t.Errorf("%s: mode %o, want 0700", rel, info.Mode().Perm())
		case !d.IsDir() && !results && info.Mode().Perm()&0o077 != 0:
			w.t.Errorf("%s: mode %o, readable by others", rel, info.Mode().Perm())
		}
		if d.IsDir() || strings.Contains(rel, "results") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if s != "" && bytes.Contains(b, []byte(s)) {
				w.t.Errorf("%s holds a secret", rel)
			}
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s lacks %q:\n%s", what, sub, s)
		}
	}
}
