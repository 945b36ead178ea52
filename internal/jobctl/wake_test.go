package jobctl

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// startWatchdog runs the real watchdog over runDir under sh, with a fake API,
// an INTERVAL of an hour and env, and returns it once it sleeps: a rule that
// acts after that acts because something woke it. Its sleep notes each
// pause in the file it returns.
func startWatchdog(t *testing.T, sh shtest.Shell, runDir string, env ...string) (*shtest.Proc, string) {
	t.Helper()
	api := shtest.NewFakeAPI(t)
	bin := shtest.NewBin(t)
	pauses := filepath.Join(bin.Dir, ".pauses")
	realSleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	bin.Stub("sleep", fmt.Sprintf(`echo "$1" >> %q; exec %q "$@"`, pauses, realSleep))
	vars := map[string]string{
		"OVERBRAINER_RUN_DIR":      runDir,
		"RUNPOD_POD_ID":            "pod-wake",
		"RUNPOD_API_KEY":           "rpa_WAKE_TEST_KEY",
		"OVERBRAINER_API_URL":      api.URL(),
		"OVERBRAINER_INTERVAL":     "3600",
		"OVERBRAINER_BOOT_GRACE":   "100000",
		"OVERBRAINER_PROBE_WAIT":   "0",
		"OVERBRAINER_CURL_TIMEOUT": "5",
	}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	wd := shtest.Start(t, sh, watchdog.Script(), shtest.Opts{Dir: runDir, Env: vars, Bin: bin})
	shtest.Eventually(t, time.Minute, func() bool {
		b, _ := os.ReadFile(pauses)
		return strings.Contains(string(b), "3600\n") || wd.Exited()
	}, "the watchdog never paused")
	if wd.Exited() {
		t.Fatalf("the watchdog exited: %s", wd.Stderr())
	}
	return wd, pauses
}

// A cost snapshot already due when the job starts reaches the job at its
// start, not at the watchdog's next tick an hour later: starting the job
// wakes the watchdog (a short --max-cost-usd asked nothing of the job
// before this).
func TestStartWakesTheWatchdogForADueSnapshot(t *testing.T) {
	t.Parallel()
	shtest.NeedTool(t, "setsid")
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		runDir, jobEnv := newRun(t, `while [ ! -f "$OVERBRAINER_SNAPSHOT_REQUEST" ]; do sleep 0.05; done
cat "$OVERBRAINER_SNAPSHOT_REQUEST"
`)
		due := strconv.FormatInt(time.Now().Unix()-1, 10) + "\n"
		if err := os.WriteFile(filepath.Join(runDir, watchdog.SnapshotAt), []byte(due), 0o644); err != nil {
			t.Fatal(err)
		}
		startWatchdog(t, sh, runDir)
		out, stderr, err := runScript(t, sh.Argv, nil, "\n", startProgram(), runDir, jobEnv)
		if err != nil {
			t.Fatalf("start: %v\n%s", err, stderr)
		}
		// A job never asked would wait for ever: its group goes with the
		// test.
		if pid, err := strconv.Atoi(strings.TrimSpace(out)); err == nil && pid > 1 {
			t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
		}
		// The job ends once it read the request: the watchdog asked.
		if code := waitFile(t, filepath.Join(runDir, "exit_code")); code != "0\n" {
			t.Fatalf("exit_code %q", code)
		}
		waitEvent(t, runDir, func(e watchdog.Event) bool {
			return e.Kind == watchdog.KindSnapshotRequested && e.Fields["reason"] == "cost"
		}, "a cost snapshot request")
		if log, _ := os.ReadFile(filepath.Join(runDir, JobLog)); !strings.Contains(string(log), "cost\n") {
			t.Fatalf("the job did not read a cost request:\n%s", log)
		}
	})
}

// waitEvent waits for a line of the watchdog log of runDir that matches.
func waitEvent(t *testing.T, runDir string, match func(watchdog.Event) bool, what string) watchdog.Event {
	t.Helper()
	var got watchdog.Event
	var b []byte
	shtest.Eventually(t, time.Minute, func() bool {
		b, _ = os.ReadFile(filepath.Join(runDir, watchdog.Log))
		if i := strings.LastIndexByte(string(b), '\n'); i >= 0 {
			b = b[:i+1]
		}
		evs, err := watchdog.ParseLog(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("the watchdog log does not parse: %v\n%s", err, b)
		}
		for _, e := range evs {
			if match(e) {
				got = e
				return true
			}
		}
		return false
	}, "no %s in the watchdog log", what)
	return got
}
