package chaos_test

import (
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
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

var builds struct {
	sync.Mutex
	m map[string]*build // by mutant: "" = the real launcher
}

// build is one launcher binary, built once.
type build struct {
	once sync.Once
	path string
	err  error
}

// launcherBinary builds examples/launch once per mutant. mutant is "" for
// the real launcher, else what the binary lacks, parts joined by "+": a
// watchdog rule removes that rule from the binary's embedded watchdog (see
// mutate), through a build overlay of watchdog/watchdog.sh, so the pods it
// creates run the mutant; ruleClient removes the launcher's own deletion
// of its pod at the end of a run (see clientMutations), through an overlay
// of guard's Go source. Different binaries build at once: a cell
// waits only for its own.
func launcherBinary(t testing.TB, mutant string) string {
	t.Helper()
	builds.Lock()
	if builds.m == nil {
		builds.m = map[string]*build{}
	}
	b := builds.m[mutant]
	if b == nil {
		b = &build{}
		builds.m[mutant] = b
	}
	builds.Unlock()
	b.once.Do(func() {
		// Kept if buildLauncher fails the test (the first caller's) on
		// the spot.
		b.err = fmt.Errorf("the launcher without %q did not build: see the first test that built it", mutant)
		b.path, b.err = buildLauncher(t, mutant)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildLauncher builds the launcher without mutant into buildDir.
func buildLauncher(t testing.TB, mutant string) (string, error) {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		return "", err
	}
	name := "launch"
	args := []string{"build"}
	if mutant != "" {
		name = "launch-without-" + mutant
		replace := map[string]string{}
		overlay := func(src, content string) {
			dst := filepath.Join(buildDir, name+"."+filepath.Base(src))
			if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			replace[src] = dst
		}
		script := ""
		for _, part := range strings.Split(mutant, "+") {
			if part == ruleClient {
				checkDeleteCallers(t, root)
				for _, m := range clientMutations {
					src := filepath.Join(root, filepath.FromSlash(m.file))
					overlay(src, m.apply(t, readFile(t, src)))
				}
				continue
			}
			if script == "" {
				script = readFile(t, filepath.Join(root, "watchdog", "watchdog.sh"))
			}
			script = mutate(t, script, part)
		}
		if script != "" {
			overlay(filepath.Join(root, "watchdog", "watchdog.sh"), script)
		}
		ov, _ := json.Marshal(map[string]map[string]string{"Replace": replace})
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
		return "", fmt.Errorf("building the launcher %s: %v\n%s", name, err, b)
	}
	return out, nil
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// clientPkgs are the packages whose pod deletions a client mutant removes:
// guard, which deletes a run's pod, and the launcher over it.
var clientPkgs = []string{"guard", "examples/launch/internal/launcher"}

// sourceMutation replaces one statement of a Go file (a path from the
// module's root).
type sourceMutation struct {
	file, from, to string
}

// deleteCall is how a pod deletion is called: the runpod client's method.
const deleteCall = ".DeletePod("

// clientMutations remove every deletion of a run's pod by its client:
// guard's deletePod, through which a run's teardown and a failed create
// go. The statement becomes one that reports the pod as not deleted, on
// the same line.
var clientMutations = []sourceMutation{
	{"guard/remove.go", "res, err := r.api.DeletePod(ctx, r.rec.PodID)", "res, err := runpod.NotDeleted, error(nil) // chaos mutant: the client leaves its pod"},
}

// checkDeleteCallers fails the test when a file of clientPkgs other than
// those of clientMutations calls DeletePod: a new call there would survive
// the mutation.
func checkDeleteCallers(t testing.TB, root string) {
	t.Helper()
	mutated := map[string]bool{}
	for _, m := range clientMutations {
		mutated[m.file] = true
	}
	for _, pkg := range clientPkgs {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			rel := filepath.ToSlash(filepath.Join(pkg, filepath.Base(f)))
			if strings.HasSuffix(rel, "_test.go") || mutated[rel] {
				continue
			}
			if strings.Contains(readFile(t, f), deleteCall) {
				t.Fatalf("%s calls DeletePod: update clientMutations", rel)
			}
		}
	}
}

// apply returns src mutated. It fails the test unless the statement is
// there exactly once and is the file's only call of DeletePod, so that a
// refactored client cannot make the mutant pass by accident (a call moved
// or added would survive the mutation).
func (m sourceMutation) apply(t testing.TB, src string) string {
	t.Helper()
	if n := strings.Count(src, m.from); n != 1 {
		t.Fatalf("%s has %d statements %q, want 1: update clientMutations", m.file, n, m.from)
	}
	out := strings.Replace(src, m.from, m.to, 1)
	if n := strings.Count(out, deleteCall); n != 0 {
		t.Fatalf("%s still calls DeletePod %d times once %q is gone: update clientMutations", m.file, n, m.from)
	}
	return out
}

// needPods skips (or fails under REQUIRE_SHELLS=1) when runpodtest cannot
// run pods on this machine.
func needPods(t *testing.T) {
	t.Helper()
	shtest.NeedPods(t, localpod.Check())
}

// launcher is one launch process, driven as a user would drive it.
type launcher struct {
	t              *testing.T
	args           []string
	cmd            *exec.Cmd
	stdout, stderr *shtest.SyncBuffer
	done           chan struct{}
	code           int
	exitedAt       time.Time
}

func startLauncher(t *testing.T, bin string, env []string, args ...string) *launcher {
	t.Helper()
	l := &launcher{t: t, args: args, stdout: &shtest.SyncBuffer{}, stderr: &shtest.SyncBuffer{}, done: make(chan struct{})}
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

// state says whether the launcher still runs, or its exit code: code is
// only read once the launcher has exited.
func (l *launcher) state() string {
	if !l.exited() {
		return "still running"
	}
	return fmt.Sprintf("exit %d", l.code)
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
