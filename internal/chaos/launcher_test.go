package chaos_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

var builds struct {
	sync.Mutex
	bins map[string]string // "" = the real launcher, else the rule removed
	errs map[string]error
}

// launcherBinary builds examples/launch once. With rule set, the binary's
// embedded watchdog lacks that rule (see mutate), through a build overlay
// of watchdog/watchdog.sh: the pods it creates run the mutant.
func launcherBinary(t testing.TB, rule string) string {
	t.Helper()
	builds.Lock()
	defer builds.Unlock()
	if builds.bins == nil {
		builds.bins, builds.errs = map[string]string{}, map[string]error{}
	}
	if p, ok := builds.bins[rule]; ok {
		return p
	}
	if err, ok := builds.errs[rule]; ok {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	name := "launch"
	args := []string{"build"}
	if rule != "" {
		name = "launch-without-" + rule
		src := filepath.Join(root, "watchdog", "watchdog.sh")
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		mut := filepath.Join(buildDir, name+".watchdog.sh")
		if err := os.WriteFile(mut, []byte(mutate(t, string(b), rule)), 0o644); err != nil {
			t.Fatal(err)
		}
		ov, _ := json.Marshal(map[string]map[string]string{"Replace": {src: mut}})
		ovFile := filepath.Join(buildDir, name+".overlay.json")
		if err := os.WriteFile(ovFile, ov, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-overlay", ovFile)
	}
	out := filepath.Join(buildDir, name)
	cmd := exec.Command("go", append(args, "-o", out, "./examples/launch")...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		builds.errs[rule] = fmt.Errorf("building the launcher: %v\n%s", err, b)
		t.Fatal(builds.errs[rule])
	}
	builds.bins[rule] = out
	return out
}

// needPods skips (or fails under REQUIRE_SHELLS=1) when runpodtest cannot
// run pods on this machine.
func needPods(t *testing.T) {
	t.Helper()
	if err := runpodtest.CheckPodRunner(); err != nil {
		if shtest.Required() {
			t.Fatalf("REQUIRE_SHELLS=1 but %v", err)
		}
		t.Skip(err)
	}
	for _, tool := range []string{"curl", "setsid", "tar", "bash"} {
		shtest.NeedTool(t, tool)
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		shtest.NeedTool(t, "sshd")
	}
}

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// launcher is one launch process, driven as a user would drive it.
type launcher struct {
	t              *testing.T
	args           []string
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int
	exitedAt       time.Time
}

func startLauncher(t *testing.T, bin string, env []string, args ...string) *launcher {
	t.Helper()
	l := &launcher{t: t, args: args, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	l.cmd = exec.Command(bin, args...)
	l.cmd.Env = env
	l.cmd.Stdout, l.cmd.Stderr = l.stdout, l.stderr
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = l.cmd.Wait()
		l.exitedAt = time.Now()
		l.code = l.cmd.ProcessState.ExitCode()
		close(l.done)
	}()
	t.Cleanup(func() {
		l.kill()
		if t.Failed() {
			t.Logf("launch %s\n--- stdout:\n%s\n--- stderr:\n%s", strings.Join(args, " "), l.stdout, l.stderr)
		}
	})
	return l
}

func (l *launcher) exited() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the launcher's process group and waits for it.
func (l *launcher) kill() {
	if !l.exited() {
		_ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-l.done
}

func (l *launcher) output() string { return l.stdout.String() + l.stderr.String() }

// waitFor polls until cond holds and reports whether it did before the
// launcher exited or the wait ran out.
func (l *launcher) waitFor(cond func() bool) bool {
	deadline := time.Now().Add(wait)
	for !cond() {
		if l.exited() {
			return cond()
		}
		if time.Now().After(deadline) {
			if cond() {
				return true
			}
			l.dump()
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// says is a condition: the launcher wrote text.
func (l *launcher) says(text string) func() bool {
	return func() bool { return strings.Contains(l.output(), text) }
}

// wait waits for the launcher to exit and returns its exit code. A run
// under faults may take a client timeout (60 s) or two on top of its own
// time.
func (l *launcher) wait() int {
	l.t.Helper()
	limit := 2 * wait
	select {
	case <-l.done:
	case <-time.After(limit):
		l.dump()
		l.t.Fatalf("launch %s: still running after %s", strings.Join(l.args, " "), limit)
	}
	return l.code
}

// dump makes a stuck launcher print its goroutines (SIGQUIT) into its
// stderr, which the test shows when it fails.
func (l *launcher) dump() {
	_ = l.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-l.done:
	case <-time.After(5 * time.Second):
	}
}
