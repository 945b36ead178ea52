package watchdog_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Each log line also reaches the container's output (the watchdog's
// standard output), the last one too, and no secret goes with them.
func TestLogLinesReachTheContainerOutput(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.write(watchdog.Retrieved, "")
		p.write(watchdog.Log, "1700000000 start msg=an earlier watchdog\n")
		p.start()
		p.deleted(watchdog.DeleteRetrieved)
		shtest.Eventually(t, wait, func() bool { return strings.Contains(p.proc.Stdout(), " deleted method=delete") },
			"no `deleted` line on the output:\n%s\nlog:\n%s", lazy(p.proc.Stdout), p.logText())
		out := p.proc.Stdout()
		for _, kind := range []string{" start ", " probe result=ready", " delete_reason reason=retrieved"} {
			if !strings.Contains(out, kind) {
				t.Errorf("no %q line on the output:\n%s", kind, out)
			}
		}
		// Only this watchdog's lines: the log's earlier content stays off.
		if strings.Contains(out, "earlier") {
			t.Errorf("an earlier line was relayed:\n%s", out)
		}
		if strings.Contains(out, apiKey) || strings.Contains(p.proc.Stderr(), apiKey) {
			t.Errorf("the API key reached the output")
		}
	})
}

// A tail without --pid (busybox's) relays too, the last line included, and
// does not outlive the watchdog.
func TestLogRelayWithoutGNUTail(t *testing.T) {
	t.Parallel()
	busybox := shtest.NeedTool(t, "busybox")
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.bin.Stub("tail", "exec "+busybox+` tail "$@"`)
		p.write(watchdog.Retrieved, "")
		p.start()
		p.deleted(watchdog.DeleteRetrieved)
		if out := p.proc.Stdout(); !strings.Contains(out, " deleted method=delete") || !strings.Contains(out, " start ") {
			t.Errorf("the output lacks the first or the last line:\n%s", out)
		}
		shtest.Eventually(t, wait, func() bool { return !groupAlive(p.proc.Pgid) }, "the relay outlives the watchdog")
	})
}

// groupAlive says whether process group pgid still has a process.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

// lazy formats a function's result only when a failure message is printed.
type lazy func() string

func (f lazy) String() string { return f() }

// A container output that is closed, or a pipe that nobody drains, never
// holds or ends the watchdog: it still deletes the pod by its rule and
// exits.
func TestABrokenContainerOutputNeverStopsTheWatchdog(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		out  func(t *testing.T) *os.File
	}{
		{"closed", func(t *testing.T) *os.File {
			r, w := pipe(t)
			r.Close()
			return w
		}},
		{"full", func(t *testing.T) *os.File {
			r, w := pipe(t)
			t.Cleanup(func() { r.Close() })
			// Fill the pipe: every write past this blocks. (Fd, once,
			// puts the descriptor in blocking mode.)
			fd := int(w.Fd())
			if err := syscall.SetNonblock(fd, true); err != nil {
				t.Fatal(err)
			}
			chunk := make([]byte, 4096)
			for {
				if _, err := syscall.Write(fd, chunk); err != nil {
					break
				}
			}
			if err := syscall.SetNonblock(fd, false); err != nil {
				t.Fatal(err)
			}
			return w
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.write(watchdog.Retrieved, "")
				out := c.out(t)
				cmd := startWithOutput(t, p, out)
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("the watchdog ended with %v\nlog:\n%s", err, p.logText())
					}
				case <-time.After(wait):
					t.Fatalf("the watchdog still runs\nlog:\n%s", p.logText())
				}
				evs := p.events()
				if find(evs, -1, watchdog.KindDeleted, "method", "delete") < 0 {
					t.Fatalf("no `deleted method=delete`\nlog:\n%s", p.logText())
				}
			})
		})
	}
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return r, w
}

// startWithOutput runs p's watchdog as p.start does, with out as both its
// standard output and its standard error (the container's output), in a
// process group that is killed when the test ends.
func startWithOutput(t *testing.T, p *pod, out *os.File) *exec.Cmd {
	t.Helper()
	script := filepath.Join(t.TempDir(), "watchdog.sh")
	if err := os.WriteFile(script, []byte(watchdog.Script()), 0o644); err != nil {
		t.Fatal(err)
	}
	home, tmp := t.TempDir(), t.TempDir()
	cmd := exec.Command(p.sh.Argv[0], append(p.sh.Argv[1:], script)...)
	cmd.Dir = p.dir
	cmd.Env = []string{"PATH=" + p.bin.Dir + ":" + shtest.SystemPath, "HOME=" + home, "TMPDIR=" + tmp}
	for k, v := range p.env {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s", k, v))
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd
}
