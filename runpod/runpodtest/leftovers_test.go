package runpodtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// leaveBehindEnv makes the test binary a process that starts a Server,
// prints its directory and waits to be killed (see TestMain).
const leaveBehindEnv = "RUNPODTEST_LEAVE_BEHIND"

func leaveBehind() {
	srv := NewServer()
	fmt.Println(srv.tmp)
	select {}
}

// TestNewServerRemovesAKilledServersFiles: a child process that starts a
// Server and is killed leaves its directory behind; the next NewServer
// removes it, and keeps those of live owners, this process's included,
// while a directory whose owner pid now names another process goes too.
func TestNewServerRemovesAKilledServersFiles(t *testing.T) {
	if processStart(os.Getpid()) == "" {
		t.Skip("no /proc: leftovers are never removed here")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), leaveBehindEnv+"=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = child.Process.Kill()
		t.Fatalf("the child said %q: %v", line, err)
	}
	left := strings.TrimSpace(line)
	_ = child.Process.Kill()
	_ = child.Wait()
	if _, err := os.Stat(filepath.Join(left, ownerFile)); err != nil || !strings.HasPrefix(left, tmp) {
		t.Fatalf("the killed child's directory %q: %v", left, err)
	}

	live := NewServer() // owned by this process, which runs
	defer live.Close()
	reused := filepath.Join(tmp, "runpodtest-reused")
	unowned := filepath.Join(tmp, "runpodtest-unowned")
	for _, dir := range []string{reused, unowned} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// This process's pid with another start time: a pid reused since.
	if err := os.WriteFile(filepath.Join(reused, ownerFile), fmt.Appendf(nil, "%d 1\n", os.Getpid()), 0o600); err != nil {
		t.Fatal(err)
	}

	next := NewServer()
	defer next.Close()
	for dir, kept := range map[string]bool{left: false, reused: false, live.tmp: true, unowned: true, next.tmp: true} {
		if _, err := os.Stat(dir); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v (%v)", dir, err == nil, kept, err)
		}
	}
}
