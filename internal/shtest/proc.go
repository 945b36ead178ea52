package shtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SystemPath is the PATH after the stub directory.
const SystemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Bin is a directory of stub commands, put first on PATH by [Opts.Bin].
type Bin struct {
	Dir string
	t   testing.TB
}

// NewBin makes an empty stub directory removed when the test ends.
func NewBin(t testing.TB) *Bin {
	t.Helper()
	return &Bin{Dir: t.TempDir(), t: t}
}

// Stub writes the executable name into the directory: `#!/bin/sh` followed by
// body. It returns the stub's absolute path. Writing the same name again
// replaces the stub (atomically, so a running script never sees half of it).
func (b *Bin) Stub(name, body string) string {
	b.t.Helper()
	if strings.ContainsRune(name, '/') || name == "" {
		b.t.Fatalf("shtest: bad stub name %q", name)
	}
	p := filepath.Join(b.Dir, name)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		b.t.Fatalf("shtest: stub %s: %v", name, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		b.t.Fatalf("shtest: stub %s: %v", name, err)
	}
	return p
}

// Clock is a fake Unix clock kept in a file, read by the `date` stub that
// [Bin.Clock] installs and advanced by its `sleep` stub.
type Clock struct {
	File string
	mu   sync.Mutex
}

// Clock installs `date` and `sleep` stubs driven by a clock file starting at
// start (Unix seconds). `date +%s` prints the file's time; any other use of
// date runs the real one. `sleep N` (whole seconds) advances the clock by N
// and really sleeps 10 ms so that loops still yield. Shells that run date or
// sleep as builtins ignore these stubs: use them only where PATH is honoured.
func (b *Bin) Clock(start int64) *Clock {
	b.t.Helper()
	c := &Clock{File: filepath.Join(b.Dir, ".clock")}
	c.Set(start)
	realDate, err := exec.LookPath("date")
	if err != nil {
		b.t.Fatalf("shtest: no date command: %v", err)
	}
	realSleep, err := exec.LookPath("sleep")
	if err != nil {
		b.t.Fatalf("shtest: no sleep command: %v", err)
	}
	b.Stub("date", fmt.Sprintf(`if [ "$*" = "+%%s" ]; then read -r t < %[1]q && echo "$t"; else exec %[2]q "$@"; fi`,
		c.File, realDate))
	b.Stub("sleep", fmt.Sprintf(`case $1 in ''|*[!0-9]*) exec %[2]q "$@";; esac
read -r t < %[1]q && echo $((t + $1)) > %[1]q.tmp && mv -f %[1]q.tmp %[1]q
exec %[2]q 0.01`, c.File, realSleep))
	return c
}

// Set moves the clock to t (Unix seconds).
func (c *Clock) Set(t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tmp := c.File + ".set"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(t, 10)+"\n"), 0o644); err == nil {
		_ = os.Rename(tmp, c.File)
	}
}

// Now reads the clock.
func (c *Clock) Now() int64 {
	b, err := os.ReadFile(c.File)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}

// Advance moves the clock forward by d seconds.
func (c *Clock) Advance(d int64) { c.Set(c.Now() + d) }

// Opts configures [Start].
type Opts struct {
	// Dir is the working directory (the run directory). Empty: a new
	// temporary directory, reported by [Proc.Dir].
	Dir string
	// Env holds the only variables set besides PATH, HOME and TMPDIR (which it
	// may override).
	Env map[string]string
	// Bin, when set, is put first on PATH.
	Bin *Bin
	// Args follow the script file on the command line ($1, $2, ...).
	Args []string
	// Stdin is the script's standard input; empty means /dev/null.
	Stdin string
}

// Proc is a script started by [Start].
type Proc struct {
	Cmd  *exec.Cmd
	Dir  string // the run directory
	Pgid int    // the process group, equal to the shell's pid

	outFile, errFile string
	done             chan struct{}
	waitErr          error
}

// Start runs script under sh as described in the package documentation. It
// fails the test when the process cannot start, and kills the whole process
// group when the test ends.
func Start(t testing.TB, sh Shell, script string, o Opts) *Proc {
	t.Helper()
	Need(t, sh)
	priv := t.TempDir()
	dir := o.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	file := filepath.Join(priv, "script.sh")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatalf("shtest: %v", err)
	}
	home := filepath.Join(priv, "home")
	tmpdir := filepath.Join(priv, "tmp")
	for _, d := range []string{home, tmpdir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatalf("shtest: %v", err)
		}
	}
	path := SystemPath
	if o.Bin != nil {
		path = o.Bin.Dir + ":" + path
	}
	env := map[string]string{"PATH": path, "HOME": home, "TMPDIR": tmpdir}
	for k, v := range o.Env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	envList := make([]string, 0, len(keys))
	for _, k := range keys {
		envList = append(envList, k+"="+env[k])
	}

	p := &Proc{Dir: dir, done: make(chan struct{}),
		outFile: filepath.Join(priv, "stdout"), errFile: filepath.Join(priv, "stderr")}
	stdout, err := os.Create(p.outFile)
	if err != nil {
		t.Fatalf("shtest: %v", err)
	}
	defer stdout.Close()
	stderr, err := os.Create(p.errFile)
	if err != nil {
		t.Fatalf("shtest: %v", err)
	}
	defer stderr.Close()

	argv := append(append(append([]string{}, sh.Argv...), file), o.Args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = envList
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	if o.Stdin != "" {
		cmd.Stdin = strings.NewReader(o.Stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("shtest: start %v: %v", argv, err)
	}
	p.Cmd = cmd
	p.Pgid = cmd.Process.Pid
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.KillGroup()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Errorf("shtest: %s did not exit after SIGKILL", sh.Name)
		}
	})
	return p
}

// KillGroup sends SIGKILL to the script's whole process group.
func (p *Proc) KillGroup() { _ = syscall.Kill(-p.Pgid, syscall.SIGKILL) }

// Signal sends sig to the shell process alone.
func (p *Proc) Signal(sig syscall.Signal) error { return p.Cmd.Process.Signal(sig) }

// Done is closed when the shell process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the shell has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitCode is the shell's exit status once it exited (-1 when killed by a
// signal or still running).
func (p *Proc) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	var ee *exec.ExitError
	if p.waitErr == nil {
		return 0
	}
	if errors.As(p.waitErr, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Wait waits up to timeout for the shell to exit and returns its exit code;
// it fails the test (showing stdout and stderr) on timeout.
func (p *Proc) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("shtest: script still running after %v\nstdout:\n%s\nstderr:\n%s", timeout, p.Stdout(), p.Stderr())
		return -1
	}
}

// Stdout returns what the script wrote on standard output so far.
func (p *Proc) Stdout() string { b, _ := os.ReadFile(p.outFile); return string(b) }

// Stderr returns what the script wrote on standard error so far.
func (p *Proc) Stderr() string { b, _ := os.ReadFile(p.errFile); return string(b) }

// Result is the outcome of [Run].
type Result struct {
	Code           int
	Stdout, Stderr string
	Dir            string
}

// RunTimeout bounds [Run].
var RunTimeout = 2 * time.Minute

// Run starts script and waits for it (at most RunTimeout).
func Run(t testing.TB, sh Shell, script string, o Opts) Result {
	t.Helper()
	p := Start(t, sh, script, o)
	code := p.Wait(t, RunTimeout)
	return Result{Code: code, Stdout: p.Stdout(), Stderr: p.Stderr(), Dir: p.Dir}
}

// Eventually polls cond until it holds, failing the test with msg (fmt
// args) after timeout.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	// The poll backs off from 5 ms to 100 ms: a quick event is seen at
	// once, and a long wait (dozens of tests at once, each reading and
	// parsing a log at every poll) leaves the CPU to the shells under test.
	pause := 5 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("shtest: timed out after %v: "+msg, append([]any{timeout}, args...)...)
		}
		time.Sleep(pause)
		pause = min(pause*2, 100*time.Millisecond)
	}
}

// WaitFile waits until path exists and returns its content.
func WaitFile(t testing.TB, path string, timeout time.Duration) string {
	t.Helper()
	var b []byte
	Eventually(t, timeout, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil
	}, "waiting for %s", path)
	return string(b)
}
