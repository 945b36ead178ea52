package watchdog_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// startGroup starts a process group of three sleeps (a leader and two
// children) and returns the group id and the children's pids.
func startGroup(t *testing.T) (pgid int, children []int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `sleep 300 & echo $!; sleep 300 & echo $!; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	sc := bufio.NewScanner(out)
	for len(children) < 2 && sc.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			t.Fatalf("bad child pid %q", sc.Text())
		}
		children = append(children, pid)
	}
	if len(children) != 2 {
		t.Fatal("group did not start")
	}
	return cmd.Process.Pid, children
}

// deadPID returns the pid of a process that has exited and been reaped: no
// process group has that id.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// gone reports whether pid no longer runs (absent, or a zombie).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndex(s, ")")
	return i > 0 && strings.HasPrefix(s[i:], ") Z")
}

func TestGroupSignal(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		pgid, children := startGroup(t)
		script := watchdog.GroupSignal() + `
group_signal 0 "$1"; echo "live=$?"
group_signal 0 "$2"; echo "dead=$?"
group_signal 0 1; echo "one=$?"
group_signal 0 0; echo "zero=$?"
group_signal 0 abc; echo "abc=$?"
group_signal 0 ""; echo "empty=$?"
group_signal TERM "$2"; echo "termdead=$?"
group_signal TERM "$1"; echo "term=$?"
`
		r := shtest.Run(t, sh, script, shtest.Opts{Args: []string{strconv.Itoa(pgid), strconv.Itoa(deadPID(t))}})
		got := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			k, v, _ := strings.Cut(l, "=")
			got[k] = v
		}
		if got["live"] != "0" {
			t.Errorf("live group: status %s, want 0", got["live"])
		}
		for _, k := range []string{"dead", "one", "zero", "abc", "empty", "termdead"} {
			if got[k] == "0" || got[k] == "" {
				t.Errorf("%s: status %q, want a failure", k, got[k])
			}
		}
		if got["term"] != "0" {
			t.Errorf("TERM to the group: status %s, want 0", got["term"])
		}
		for _, pid := range append([]int{pgid}, children...) {
			shtest.Eventually(t, 20*time.Second, func() bool { return gone(pid) },
				"process %d of the group survived TERM (stdout %q stderr %q)", pid, r.Stdout, r.Stderr)
		}
		if r.Stderr != "" {
			t.Errorf("stderr: %q", r.Stderr)
		}
	})
}
