package jobctl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/overbrainer/overbrainer-go/examples/launch/internal/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// poll runs PollCommand's script under shell and parses it.
func poll(t *testing.T, shell []string, runDir string, offset int64, touch bool, max int) (State, string) {
	t.Helper()
	touchArg := "0"
	if touch {
		touchArg = "1"
	}
	out, stderr, err := runScript(t, shell, nil, "", watchdog.GroupSignal()+pollScript,
		runDir, strconv.FormatInt(offset, 10), touchArg, strconv.Itoa(max))
	if err != nil {
		t.Fatalf("poll: %v\n%s", err, stderr)
	}
	st, logBytes, err := ParsePoll([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	return st, string(logBytes)
}

func TestPollUnderEveryShell(t *testing.T) {
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, jobEnv := newRun(t, `printf 'line one\nline two\n'
while [ ! -f "$OVERBRAINER_SNAPSHOT_REQUEST" ]; do sleep 0.05; done
echo "checkpoint"
exit 3
`)
		st, logBytes := poll(t, shell, runDir, 0, false, 1000)
		before := time.Now().Unix()
		if diff := cmp.Diff(State{ExitCode: -1, DuKiB: -1, PodNow: st.PodNow}, st); diff != "" || logBytes != "" {
			t.Fatalf("before the job (-want +got):\n%s%q", diff, logBytes)
		}
		if st.PodNow < before-5 || st.PodNow > before+5 {
			t.Fatalf("pod clock %d, local %d", st.PodNow, before)
		}
		if _, err := os.Stat(filepath.Join(runDir, watchdog.Lease)); err == nil {
			t.Fatal("a poll without touch made a lease")
		}

		// The verdict, with its reason.
		os.WriteFile(filepath.Join(runDir, watchdog.Verdict), []byte("failed bootstrap: host key mismatch\n"), 0o600)
		st, _ = poll(t, shell, runDir, 0, true, 1000)
		if reason, failed := st.VerdictFailed(); !failed || reason != "bootstrap: host key mismatch" {
			t.Fatalf("verdict %q", st.Verdict)
		}
		if _, err := os.Stat(filepath.Join(runDir, watchdog.Lease)); err != nil {
			t.Fatal("touch made no lease:", err)
		}
		os.WriteFile(filepath.Join(runDir, watchdog.Verdict), []byte("ready\n"), 0o600)

		if _, stderr, err := runScript(t, []string{"sh"}, nil, "\n", startScript, runDir, jobEnv); err != nil {
			t.Fatalf("start: %v %s", err, stderr)
		}
		var log strings.Builder
		var offset int64
		deadline := time.Now().Add(60 * time.Second)
		for log.Len() < len("line one\nline two\n") {
			if time.Now().After(deadline) {
				t.Fatalf("the log never reached %q", log.String())
			}
			st, b := poll(t, shell, runDir, offset, false, 4)
			if len(b) > 4 {
				t.Fatalf("poll returned %d bytes, max 4", len(b))
			}
			if !st.Started() || !st.Alive || st.Ended() || st.Verdict != "ready" {
				t.Fatalf("running job: %+v", st)
			}
			log.WriteString(b)
			offset += int64(len(b))
		}
		if log.String() != "line one\nline two\n" {
			t.Fatalf("log %q", log.String())
		}

		os.WriteFile(filepath.Join(runDir, watchdog.Du), []byte("1234\t/workspace\n"), 0o600)
		os.WriteFile(filepath.Join(runDir, watchdog.SnapshotRequest), []byte("cost"), 0o600)
		for {
			st, b := poll(t, shell, runDir, offset, false, 1000)
			if st.Request != "cost" || st.DuKiB != 1234 {
				t.Fatalf("request %q du %d", st.Request, st.DuKiB)
			}
			offset += int64(len(b))
			if st.Ended() {
				// The group may linger a moment as a zombie after
				// exit_code: Ended does not depend on it.
				if st.ExitCode != 3 {
					t.Fatalf("ended: %+v", st)
				}
				if st.LogSize != offset {
					t.Fatalf("log size %d, read %d", st.LogSize, offset)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job never ended: %+v", st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// A job killed before it could write its exit code has ended all the same.
func TestPollSeesAKilledJob(t *testing.T) {
	runDir, jobEnv := newRun(t, "exec sleep 300\n")
	out, stderr, err := runScript(t, []string{"sh"}, nil, "\n", startScript, runDir, jobEnv)
	if err != nil {
		t.Fatalf("start: %v %s", err, stderr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	st, _ := poll(t, []string{"sh"}, runDir, 0, false, 10)
	if !st.Alive || st.Ended() {
		t.Fatalf("%+v", st)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, _ = poll(t, []string{"sh"}, runDir, 0, false, 10)
		if st.Ended() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never ended: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.ExitCode != -1 || st.Alive {
		t.Fatalf("%+v", st)
	}
}

func TestParsePollRefusesGarbage(t *testing.T) {
	for _, out := range []string{
		"",
		"ob1 - - - 0 0 1 - -",
		"ob2 - - - 0 0 1 - -\n\n",
		"ob1 - - - 0 0 1 -\n\n",
		"ob1 x - - 0 0 1 - -\n\n",
	} {
		if _, _, err := ParsePoll([]byte(out)); err == nil {
			t.Errorf("ParsePoll(%q) accepted", out)
		}
	}
	st, b, err := ParsePoll([]byte("ob1 42 0 0 0 10 1700000000 stop 99\nready\nbytes\n"))
	want := State{PID: 42, ExitCode: 0, LogSize: 10, PodNow: 1700000000, Request: "stop", DuKiB: 99, Verdict: "ready"}
	if err != nil || string(b) != "bytes\n" {
		t.Fatal(err, string(b))
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Fatal(diff)
	}
	if !st.Ended() {
		t.Fatal("exit code 0 is an end")
	}
	// What a login shell's rc file printed first is skipped.
	noisy, b2, err := ParsePoll([]byte("conda: activated\nob1 42 0 0 0 10 1700000000 stop 99\nready\nbytes\n"))
	if err != nil || string(b2) != "bytes\n" || noisy != st {
		t.Fatalf("with noise: %+v %q %v", noisy, b2, err)
	}
	if got := LastLine([]byte("banner\n1700000000\n\n")); got != "1700000000" {
		t.Fatalf("LastLine %q", got)
	}
}

func TestPutUnderEveryShell(t *testing.T) {
	forEachShell(t, func(t *testing.T, shell []string) {
		file := filepath.Join(t.TempDir(), "a", "b", ".pod", "snapshot_at")
		for _, content := range []string{"1700000000", "new\nlines\n"} {
			if _, stderr, err := runScript(t, shell, nil, content, putScript, file); err != nil {
				t.Fatalf("put: %v %s", err, stderr)
			}
			if b, _ := os.ReadFile(file); string(b) != content {
				t.Fatalf("file %q, want %q", b, content)
			}
		}
		left, _ := filepath.Glob(file + ".*")
		if len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
	})
}

// The command lines carry the scripts and their arguments, quoted.
func TestCommandLines(t *testing.T) {
	if got := PutCommand("/w/it's"); got != podssh.Command(putScript, "/w/it's") {
		t.Fatal(got)
	}
	if got := PollCommand("/w/r", 12, true, 99); !strings.HasSuffix(got, " sh '/w/r' '12' '1' '99'") ||
		!strings.Contains(got, "group_signal()") {
		t.Fatal(got)
	}
	if got := StartCommand("/w/r", "/etc/overbrainer/job.env"); !strings.HasSuffix(got, " sh '/w/r' '/etc/overbrainer/job.env'") {
		t.Fatal(got)
	}
}
