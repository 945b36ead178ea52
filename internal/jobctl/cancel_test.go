package jobctl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// A cancel stops the job's whole group at once, KILL for a job that
// ignores TERM, marks it cancelled and wakes the watchdog; a second one
// finds it ended, and a run without a job has nothing to cancel.
func TestCancelStopsTheJobsGroup(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, shell []string) {
		marker := "cancel-me-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		runDir, jobEnv := newRun(t, "trap '' TERM\necho started\nsh -c 'while :; do sleep 0.05; done' "+marker+"\n")
		hups := fakeWatchdog(t, runDir)
		out, _, err := runScript(t, shell, nil, "", cancelProgram(), runDir)
		if r, perr := ParseCancel([]byte(out)); err != nil || perr != nil || r != CancelNoJob {
			t.Fatalf("cancel before the start: %q, %v, %v", out, err, perr)
		}
		if _, stderr, err := runScript(t, shell, nil, "\n", startProgram(), runDir, jobEnv); err != nil {
			t.Fatalf("start: %v\n%s", err, stderr)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, filepath.Join(runDir, "job.pid"))))
		shtest.Eventually(t, time.Minute, func() bool { return len(cmdlinesContaining(marker)) > 0 }, "the job did not start")
		waitHups(t, hups, 1, "the job's start")

		out, stderr, err := runScript(t, shell, nil, "", cancelProgram(), runDir)
		if r, perr := ParseCancel([]byte(out)); err != nil || perr != nil || r != CancelStopped {
			t.Fatalf("cancel: %q, %v, %v\n%s", out, err, perr, stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(runDir, "cancelled")); string(b) != CancelClient+"\n" {
			t.Fatalf("cancelled marker %q", b)
		}
		shtest.Eventually(t, time.Minute, func() bool {
			return len(cmdlinesContaining(marker)) == 0 && syscall.Kill(-pid, 0) == syscall.ESRCH
		}, "the job's group %d outlived the cancel", pid)
		// One wake at the job's start (a snapshot already due must reach
		// it at once), one at the cancel.
		waitHups(t, hups, 2, "the job's start and the cancel")
		if _, err := os.Stat(filepath.Join(runDir, "exit_code")); err == nil {
			t.Error("a cancelled job wrote an exit code")
		}

		out, _, err = runScript(t, shell, nil, "", cancelProgram(), runDir)
		if r, perr := ParseCancel([]byte(out)); err != nil || perr != nil || r != CancelEnded {
			t.Fatalf("second cancel: %q, %v, %v", out, err, perr)
		}
	})
}

func TestParseCancelRefusesOtherAnswers(t *testing.T) {
	if _, err := ParseCancel([]byte("motd\nkilled\n")); err == nil {
		t.Fatal("ParseCancel took an unknown answer")
	}
	if r, err := ParseCancel([]byte("a login banner\ncancelled\n")); err != nil || r != CancelStopped {
		t.Fatalf("ParseCancel = %q, %v", r, err)
	}
}
