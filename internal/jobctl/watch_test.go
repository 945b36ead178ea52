package jobctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// startWatch runs watch.sh under shell as the pod would, from the copy a
// pod keeps after its first session (see TestWatchOpenKeepsTheScript),
// and talks to it through a Watcher.
func startWatch(t *testing.T, shell []string, runDir string) *Watcher {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, watchFile()), []byte(WatchScript()), 0o600); err != nil {
		t.Fatal(err)
	}
	return startWatchArgv(t, append(shell, "-c", watchOpen(), "sh", runDir, dir), nil)
}

// startWatchArgv runs argv (which runs watchOpen) with env added to the
// test's, and talks to it through an open Watcher.
func startWatchArgv(t *testing.T, argv, env []string) *Watcher {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// An os.Pipe rather than StdoutPipe: Wait closes a StdoutPipe as soon
	// as the shell exits, which would cut off what a shell that exits at
	// once (a missing run directory) wrote before it went.
	out, wout, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	cmd.Stdout = wout
	err = cmd.Start()
	wout.Close()
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Closing the input ends watch.sh's loop, as closing the session does
	// on the pod.
	stop := func() { in.Close() }
	kill := func() { _ = cmd.Process.Kill() }
	t.Cleanup(func() {
		stop()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			kill()
		}
	})
	wait := func() error {
		err := <-exited
		exited <- err
		return err
	}
	w := newWatcher(in, out, stop, wait, kill)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.open(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

func poll(t *testing.T, w *Watcher, offset int64, touch bool, max int) (State, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, b, err := w.Poll(ctx, offset, touch, max)
	if err != nil {
		t.Fatal(err)
	}
	return st, string(b)
}

func TestWatchUnderEveryShell(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, jobEnv := newRun(t, `printf 'line one\nline two\n'
while [ ! -f "$OVERBRAINER_SNAPSHOT_REQUEST" ]; do sleep 0.05; done
echo "checkpoint"
exit 3
`)
		w := startWatch(t, shell, runDir)
		before := time.Now().Unix()
		st, logBytes := poll(t, w, 0, false, 1000)
		if diff := cmp.Diff(State{ExitCode: -1, DuKiB: -1, PodNow: st.PodNow}, st); diff != "" || logBytes != "" {
			t.Fatalf("before the job (-want +got):\n%s%q", diff, logBytes)
		}
		if st.PodNow < before-5 || st.PodNow > before+5 {
			t.Fatalf("pod clock %d, local %d", st.PodNow, before)
		}
		if _, err := os.Stat(filepath.Join(runDir, watchdog.Lease)); err == nil {
			t.Fatal("a look without touch made a lease")
		}

		// The verdict, with its reason.
		os.WriteFile(filepath.Join(runDir, watchdog.VerdictFile), []byte("failed bootstrap: host key mismatch\n"), 0o600)
		st, _ = poll(t, w, 0, true, 1000)
		if v := st.Verdict; !v.Failed || !v.Bootstrap || v.Reason != "host key mismatch" {
			t.Fatalf("verdict %+v", st.Verdict)
		}
		if _, err := os.Stat(filepath.Join(runDir, watchdog.Lease)); err != nil {
			t.Fatal("touch made no lease:", err)
		}
		os.WriteFile(filepath.Join(runDir, watchdog.VerdictFile), []byte("ready\n"), 0o600)

		if _, stderr, err := runScript(t, []string{"sh"}, nil, "\n", startProgram(), runDir, jobEnv); err != nil {
			t.Fatalf("start: %v %s", err, stderr)
		}
		var log strings.Builder
		var offset int64
		deadline := time.Now().Add(60 * time.Second)
		for log.Len() < len("line one\nline two\n") {
			if time.Now().After(deadline) {
				t.Fatalf("the log never reached %q", log.String())
			}
			st, b := poll(t, w, offset, false, 4)
			if len(b) > 4 {
				t.Fatalf("a look returned %d bytes, max 4", len(b))
			}
			if !st.Started() || !st.Alive || st.Ended() || !st.Verdict.Ready {
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
			st, b := poll(t, w, offset, false, 1000)
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
		// The chunk file goes with the watcher.
		w.Close()
		shtest.Eventually(t, time.Minute, func() bool {
			left, _ := filepath.Glob(filepath.Join(runDir, ".pod", "watch.*"))
			return len(left) == 0
		}, "watch.sh's chunk file left behind")
	})
}

// A job killed before it could write its exit code has ended all the same.
func TestWatchSeesAKilledJob(t *testing.T) {
	t.Parallel()
	runDir, jobEnv := newRun(t, "exec sleep 300\n")
	out, stderr, err := runScript(t, []string{"sh"}, nil, "\n", startProgram(), runDir, jobEnv)
	if err != nil {
		t.Fatalf("start: %v %s", err, stderr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	w := startWatch(t, []string{"sh"}, runDir)
	st, _ := poll(t, w, 0, false, 10)
	if !st.Alive || st.Ended() {
		t.Fatalf("%+v", st)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, _ = poll(t, w, 0, false, 10)
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

// A job that ends between the look's reads is seen with its exit code, not
// as killed: the exit code is read after the group's check. Here the check
// itself plays the job writing its exit code and going.
func TestWatchSeesAJobEndingDuringTheLook(t *testing.T) {
	runDir, _ := newRun(t, "")
	if err := os.WriteFile(filepath.Join(runDir, "job.pid"), []byte("4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := watchdog.GroupSignal() + `
group_signal() {
  printf '0\n' > exit_code
  return 1
}
` + watchScript
	out, _, err := runScript(t, []string{"sh"}, nil, "poll 0 0 10\n", script, runDir)
	if err != nil {
		t.Fatal(err)
	}
	header, verdict, _ := strings.Cut(out, "\n")
	st, _, err := parseHeader(header, verdict)
	if err != nil {
		t.Fatal(err)
	}
	if st.ExitCode != 0 || st.Alive || !st.Ended() {
		t.Fatalf("a job that ended with 0 during the look: %+v", st)
	}
}

// watch.sh in a run directory that does not exist fails, and the watcher
// says so rather than waiting.
func TestWatchOfAMissingRunDir(t *testing.T) {
	w := startWatch(t, []string{"sh"}, filepath.Join(t.TempDir(), "absent"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := w.Poll(ctx, 0, false, 10); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll = %v", err)
	}
}

// Bad requests get an error line, and the loop goes on.
func TestWatchRefusesBadRequests(t *testing.T) {
	runDir, _ := newRun(t, "")
	out, _, err := runScript(t, []string{"sh"}, nil, "poll x 0 1\nstop\npoll 0 0 10\n", WatchScript(), runDir)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != "ob1-error bad request" || lines[1] != "ob1-error unknown request" || !strings.HasPrefix(lines[2], "ob1 - - - 0 0 ") {
		t.Fatalf("answers %q", out)
	}
}

// What a login shell's rc file prints before watch.sh is skipped; a header
// that does not parse is an error.
func TestWatcherReadsPastNoise(t *testing.T) {
	answer := "conda: activated\nob1 42 0 0 0 10 1700000000 stop 99 cost_cap - - 1699999990 6\nready\nstep=3 total=9\x07\nbytes\n"
	w := newWatcher(io.Discard, strings.NewReader(answer), func() {}, func() error { return nil }, func() {})
	st, b, err := w.Poll(context.Background(), 0, true, 100)
	want := State{PID: 42, ExitCode: 0, LogSize: 10, PodNow: 1700000000, Request: "stop", DuKiB: 99, Verdict: watchdog.Verdict{Ready: true}, DeleteReason: "cost_cap", Progress: "step=3 total=9", Moved: 1699999990}
	if err != nil || string(b) != "bytes\n" {
		t.Fatal(err, string(b))
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Fatal(diff)
	}
	if !st.Ended() {
		t.Fatal("exit code 0 is an end")
	}
	for _, bad := range []string{
		"ob1 - - - 0 0 1 - -\n\n",
		"ob1 - - - 0 0 1 - - 0\n\n",
		"ob1 - - - 0 0 1 - - - 0\n\n",
		"ob1 - - - 0 0 1 - - - - - 0\n\n",
		"ob1 x - - 0 0 1 - - - - - - 0\n\n",
		"ob1 - - - 0 0 1 - - Cost-Cap - - - 0\n\n",
		"ob1 - - - 0 0 1 - - - - - soon 0\n\n",
		"ob1 - - - 0 0 1 - - - - - - 200\n\n" + strings.Repeat("x", 200),
		"ob1-error bad request\n",
		"ob1 - - - 0 0 1 - - - - - - 5\nready\nab",
		"ob1 - - - 0 0 1 - - - Unproven - - 0\n\n",
		"ob1 - - - 0 0 1 - - - - 17@$(id) - 0\n\n",
	} {
		w := newWatcher(io.Discard, strings.NewReader(bad), func() {}, func() error { return nil }, func() {})
		if _, _, err := w.Poll(context.Background(), 0, false, 100); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := LastLine([]byte("banner\n1700000000\n\n")); got != "1700000000" {
		t.Fatalf("LastLine %q", got)
	}
}

// The look reports what the watchdog's probe said of the key's right to
// delete the pod, and its last delete_failed line since it last started
// (time and codes), so that a following client can say a delete was
// refused.
func TestWatchReportsDeleteRightAndFailures(t *testing.T) {
	t.Parallel()
	line := func(at int64, kind string, fields map[string]string) string {
		return watchdog.Event{Time: time.Unix(at, 0), Kind: kind, Fields: fields}.String() + "\n"
	}
	start := line(1_700_000_000, watchdog.KindStart, map[string]string{"interval": "1"})
	probe := line(1_700_000_000, watchdog.KindProbe, map[string]string{"result": "ready", "delete_right": "unproven"})
	failed := func(at int64, codes string) string {
		return line(at, watchdog.KindDeleteReason, map[string]string{"reason": "cost_cap"}) +
			line(at, watchdog.KindDeleteFailed, map[string]string{"retry_in": "60", "codes": codes})
	}
	const forbidden = "DELETE:403,terminate:403,stop:403,runpodctl:absent"
	cases := []struct {
		name, log string
		right     watchdog.DeleteRight
		at        int64
		codes     string
	}{
		{"no log", "", "", 0, ""},
		{"an older watchdog's probe", start + line(1_700_000_000, watchdog.KindProbe, map[string]string{"result": "ready"}), "", 0, ""},
		{"unproven", start + probe, watchdog.UnprovenDeleteRight, 0, ""},
		{"refused", start + probe + failed(1_700_000_060, forbidden), watchdog.UnprovenDeleteRight, 1_700_000_060, forbidden},
		{"the last counts", start + probe + failed(1_700_000_060, forbidden) + failed(1_700_000_120, "DELETE:404/unconfirmed"),
			watchdog.UnprovenDeleteRight, 1_700_000_120, "DELETE:404/unconfirmed"},
		{"a restart forgets", start + probe + failed(1_700_000_060, forbidden) + start, "", 0, ""},
		{"bad codes", start + probe + "1700000060 delete_failed retry_in=1 codes=$(id)\n", watchdog.UnprovenDeleteRight, 1_700_000_060, ""},
	}
	forEachShell(t, func(t *testing.T, shell []string) {
		look := lookWithLog(t, shell)
		for _, c := range cases {
			if d := look(c.log).Delete; d != (watchdog.DeleteState{Right: c.right, FailedAt: c.at, Codes: c.codes}) {
				t.Errorf("%s: delete state %+v, want right %q, failed at %d with %q", c.name, d, c.right, c.at, c.codes)
			}
		}
	})
}

// lookWithLog starts a watch session of a new run under shell, and returns
// a look at the run with its watchdog log holding content ("": none).
func lookWithLog(t *testing.T, shell []string) func(content string) State {
	runDir, _ := newRun(t, "")
	w := startWatch(t, shell, runDir)
	return func(content string) State {
		log := filepath.Join(runDir, watchdog.Log)
		os.Remove(log)
		if content != "" {
			if err := os.WriteFile(log, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		st, _ := poll(t, w, 0, false, 10)
		return st
	}
}

// The look reports the rule by which the watchdog is deleting the pod: the
// reason of its last delete_reason line since it last started, read from
// the log's tail only.
func TestWatchReportsTheDeleteReason(t *testing.T) {
	t.Parallel()
	line := func(kind string, fields map[string]string) string {
		return watchdog.Event{Time: time.Unix(1_700_000_000, 0), Kind: kind, Fields: fields}.String() + "\n"
	}
	start := line(watchdog.KindStart, map[string]string{"deadline": "none", "interval": "1"})
	deleting := func(reason watchdog.DeleteReason) string {
		return line(watchdog.KindDeleteReason, map[string]string{"reason": string(reason)}) +
			line(watchdog.KindDeleteCode, map[string]string{"method": "DELETE", "code": "403"}) +
			line(watchdog.KindDeleteFailed, map[string]string{"retry_in": "1"})
	}
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, _ := newRun(t, "")
		log := filepath.Join(runDir, watchdog.Log)
		w := startWatch(t, shell, runDir)
		for _, c := range []struct {
			name, log string
			want      watchdog.DeleteReason
		}{
			{"no log", "", ""},
			{"probing", start + line(watchdog.KindProbe, map[string]string{"result": "ready"}), ""},
			{"cost cap", start + deleting(watchdog.DeleteCostCap), watchdog.DeleteCostCap},
			{"the last try counts", start + deleting(watchdog.DeleteCostCap) + deleting(watchdog.DeletePodDirUnsafe), watchdog.DeletePodDirUnsafe},
			{"a restart forgets the last watchdog's", start + deleting(watchdog.DeleteCostCap) + start, ""},
			{"a restarted watchdog's own", start + deleting(watchdog.DeleteCostCap) + start + deleting(watchdog.DeletePodDirUnsafe), watchdog.DeletePodDirUnsafe},
			{"after a long log", strings.Repeat("1700000000 probe result=ready\n", 20000) + deleting(watchdog.DeleteNeverStarted), watchdog.DeleteNeverStarted},
			{"not a reason", start + deleting(watchdog.DeleteAbandoned) + "1700000001 delete_reason reason=$(id)\n1700000001 delete_reason reason=Bad-1\n", watchdog.DeleteAbandoned},
			{"no newline at the end", start + strings.TrimSuffix(line(watchdog.KindDeleteReason, map[string]string{"reason": string(watchdog.DeleteDeadline)}), "\n"), watchdog.DeleteDeadline},
		} {
			os.Remove(log)
			if c.log != "" {
				if err := os.WriteFile(log, []byte(c.log), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if st, _ := poll(t, w, 0, false, 10); st.DeleteReason != c.want {
				t.Errorf("%s: delete reason %q, want %q", c.name, st.DeleteReason, c.want)
			}
		}
		// A fifo in the log's place is not read: the look does not hang.
		os.Remove(log)
		if err := syscall.Mkfifo(log, 0o600); err != nil {
			t.Fatal(err)
		}
		if st, _ := poll(t, w, 0, false, 10); st.DeleteReason != "" {
			t.Errorf("fifo log: delete reason %q", st.DeleteReason)
		}
	})
}

// A peer that never answers: Poll returns when its context ends, closing
// the session, and takes the connection down when even that does not end
// the exchange.
func TestPollOnAPeerThatNeverAnswers(t *testing.T) {
	defer func(d time.Duration) { abandonAfter = d }(abandonAfter)
	abandonAfter = 100 * time.Millisecond
	for _, closes := range []bool{true, false} {
		pr, pw := io.Pipe()
		var dropped atomic.Bool
		stop := func() {
			if closes {
				pw.CloseWithError(errors.New("session closed"))
			}
		}
		drop := func() {
			dropped.Store(true)
			pw.CloseWithError(errors.New("connection closed"))
		}
		w := newWatcher(io.Discard, pr, stop, func() error { return nil }, drop)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, _, err := w.Poll(ctx, 0, false, 10)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("closes=%v: Poll = %v", closes, err)
		}
		if dropped.Load() == closes {
			t.Fatalf("closes=%v: connection dropped %v", closes, dropped.Load())
		}
		if _, _, err := w.Poll(context.Background(), 0, false, 10); err == nil {
			t.Fatal("a broken watcher answered")
		}
	}
}

// put writes the client's files, and only those, atomically, and wakes the
// watchdog after each, so that a cost cap written during its 60 s sleep
// lands on time.
func TestPutUnderEveryShell(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, _ := newRun(t, "")
		hups := fakeWatchdog(t, runDir)
		w := startWatch(t, shell, runDir)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i, c := range []struct{ name, value, file string }{
			{watchdog.SnapshotAt, "1700000000", watchdog.SnapshotAt},
			{watchdog.SnapshotAt, "1700000999", watchdog.SnapshotAt},
			{watchdog.CostCapAt, "1700001000", watchdog.CostCapAt},
			{watchdog.VolumeGB, "13", watchdog.VolumeGB},
			{watchdog.Retrieved, "", watchdog.Retrieved},
			{watchdog.SnapshotRequest, string(watchdog.ReasonStop), watchdog.SnapshotRequest},
		} {
			if err := w.Put(ctx, c.name, c.value); err != nil {
				t.Fatalf("put %s: %v", c.name, err)
			}
			if b, err := os.ReadFile(filepath.Join(runDir, c.file)); err != nil || string(b) != c.value {
				t.Fatalf("%s = %q, %v", c.file, b, err)
			}
			waitHups(t, hups, i+1, "the put of "+c.name)
		}
		left, _ := filepath.Glob(filepath.Join(runDir, ".pod", "*.tmp"))
		if len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
		// The answer of a look after puts is still in step.
		if st, _ := poll(t, w, 0, false, 10); st.Request != watchdog.ReasonStop {
			t.Fatalf("%+v", st)
		}
	})
}

// Only the client's files, and only one word: anything else is refused
// before it reaches the pod, or by watch.sh.
func TestPutRefuses(t *testing.T) {
	runDir, _ := newRun(t, "")
	w := startWatch(t, []string{"sh"}, runDir)
	ctx := context.Background()
	if err := w.Put(ctx, "a b", "1"); err == nil {
		t.Fatal("a name with a space was sent")
	}
	if err := w.Put(ctx, watchdog.SnapshotAt, "1\n2"); err == nil {
		t.Fatal("a value with a newline was sent")
	}
	if err := w.Put(ctx, watchdog.VerdictFile, "ready"); err == nil || !strings.Contains(err.Error(), "not a client file") {
		t.Fatalf("put of the verdict: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runDir, watchdog.VerdictFile)); err == nil {
		t.Fatal("the verdict was written")
	}
	out, _, err := runScript(t, []string{"sh"}, nil, "put snapshot_at 1$(id)\nput snapshot_at ../x\n", WatchScript(), runDir)
	if err != nil || out != "ob1-error bad value\nob1-error bad value\n" {
		t.Fatalf("%q %v", out, err)
	}
}

// maxWatchCommand bounds the command that opens a look's session (issue
// 42).
const maxWatchCommand = 2 << 10

// The look's command is small: it runs the copy of watch.sh the pod keeps.
func TestWatchCommandIsSmall(t *testing.T) {
	if n := len(watchCommand("/workspace/overbrainer-0123456789abcdef", lookDir)); n > maxWatchCommand {
		t.Errorf("the look's command is %d bytes, the bound is %d", n, maxWatchCommand)
	}
	want := WatchScript()
	if !strings.Contains(want, "group_signal()") || !strings.Contains(want, "wake_watchdog()") || !strings.Contains(want, "look()") ||
		strings.Contains(want, "\n#") {
		t.Fatalf("WatchScript is not watch.sh and its helpers without comments:\n%s", want)
	}
}

// A pod's first session asks for watch.sh, which the client sends packed;
// under every shell it unpacks to WatchScript, answers the looks, and is
// kept for the next session, which runs it without asking; where it
// cannot be kept, it still runs.
func TestWatchOpenKeepsTheScript(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, _ := newRun(t, "")
		dir := t.TempDir()
		kept := filepath.Join(dir, watchFile())
		open := func(dir, stdin string) string {
			t.Helper()
			out, _, _ := runScript(t, shell, nil, stdin, watchOpen(), runDir, dir)
			return out
		}
		look := "poll 0 0 10\n"
		if out := open(dir, watchPacked()+look); !strings.HasPrefix(out, "ob1-need\nob1-ready\nob1 - - - 0 0 ") {
			t.Fatalf("first session: %q", out)
		}
		if b, err := os.ReadFile(kept); err != nil || string(b) != WatchScript() {
			t.Fatalf("the kept script is not WatchScript (%v):\n%s", err, b)
		}
		if out := open(dir, look); !strings.HasPrefix(out, "ob1-ready\nob1 - - - 0 0 ") {
			t.Fatalf("second session: %q", out)
		}
		if out := open(filepath.Join(dir, "missing"), watchPacked()+look); !strings.HasPrefix(out, "ob1-need\nob1-ready\nob1 - - - 0 0 ") {
			t.Fatalf("a session that cannot keep the script: %q", out)
		}
		if out := open(filepath.Join(dir, "other"), "not base64\n"+look); out != "ob1-need\nob1-error cannot unpack watch.sh (base64 -d | gzip -d)\n" {
			t.Fatalf("a session sent garbage: %q", out)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("the look's directory holds %d files, want the kept script alone", len(entries))
		}
	})
}

// The command lines carry the scripts and their arguments, quoted.
func TestCommandLines(t *testing.T) {
	if got := StartCommand("/w/r", "/etc/overbrainer/job.env"); !strings.HasSuffix(got, " sh '/w/r' '/etc/overbrainer/job.env'") {
		t.Fatal(got)
	}
}

// A look runs on every poll of a running job, so its steady state (a live
// job, no new output, no lease to renew) must stay cheap: it starts date
// and one wc, plus what a shell cannot do itself (posh's printf). Before,
// it started 13 to 17 processes a look.
func TestASteadyLookStartsFewProcesses(t *testing.T) {
	t.Parallel()
	strace := shtest.NeedTool(t, "strace")
	const maxPerLook = 4
	forEachShell(t, func(t *testing.T, shell []string) {
		perLook := lookProcesses(t, strace, shell, WatchScript())
		t.Logf("%.1f processes per steady look", perLook)
		if perLook > maxPerLook {
			t.Errorf("a steady look started %.1f processes, want at most %d", perLook, maxPerLook)
		}
	})
}

// clockOnly answers every request with the pod's clock alone: the least a
// look can do, the baseline of BenchmarkLookProcesses. Its answers carry
// the fields lookProcesses checks.
const clockOnly = `while read -r _; do printf 'ob1 - - 1 0 1700 '; date +%s; done`

// BenchmarkLookProcesses counts the processes one steady look of watch.sh
// starts (a live job, no new output, no lease to renew) under strace, per
// shell, and those of clockOnly, the baseline.
//
//	go test -run '^$' -bench LookProcesses ./internal/jobctl
func BenchmarkLookProcesses(b *testing.B) {
	strace := shtest.NeedTool(b, "strace")
	for _, sh := range shtest.All() {
		if sh.Name != "dash" && sh.Name != "busybox" && sh.Name != "bash" {
			continue
		}
		for _, baseline := range []bool{false, true} {
			name, script := sh.Name, WatchScript()
			if baseline {
				name, script = "clock_only_"+sh.Name, clockOnly
			}
			b.Run(name, func(b *testing.B) {
				shtest.Need(b, sh)
				for i := 0; i < b.N; i++ {
					b.ReportMetric(lookProcesses(b, strace, sh.Argv, script), "procs/look")
				}
			})
		}
	}
}

// BenchmarkLookCommandSize reports the bytes the client sends to open a
// look's session on a launcher's run directory, cmd-bytes; those it sends
// once per pod, the packed watch.sh of the first session, first-bytes;
// and those of watch.sh with its helpers as the package embeds them,
// comments included (script-bytes, the baseline). Each poll then sends
// one request line.
//
//	go test -run '^$' -bench LookCommandSize -benchtime 1x ./internal/jobctl
func BenchmarkLookCommandSize(b *testing.B) {
	var cmd string
	for b.Loop() {
		cmd = watchCommand("/workspace/overbrainer-0123456789abcdef", lookDir)
	}
	b.ReportMetric(float64(len(cmd)), "cmd-bytes")
	b.ReportMetric(float64(len(watchPacked())), "first-bytes")
	b.ReportMetric(float64(len(watchdog.GroupSignal()+watchdog.WakeFunction()+watchScript)), "script-bytes")
}

// lookProcesses counts under strace the processes that script (watch.sh
// or a baseline) starts per steady look of a running job: the difference
// between a session of one look and one of more looks, per look.
func lookProcesses(tb testing.TB, strace string, shell []string, script string) float64 {
	tb.Helper()
	runDir, _ := newRun(tb, "")
	logText := strings.Repeat("a line of output\n", 100)
	for name, body := range map[string]string{
		watchdog.JobPID:      strconv.Itoa(liveGroup(tb)),
		JobLog:               logText,
		watchdog.Log:         "1700000000 start deadline=none\n1700000001 probe result=ready\n",
		watchdog.Du:          "12\t/workspace\n",
		watchdog.VerdictFile: "ready\n",
	} {
		if err := os.WriteFile(filepath.Join(runDir, name), []byte(body), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	first := "poll 0 0 100000\n"
	steady := fmt.Sprintf("poll %d 0 100\n", len(logText))
	// clones counts those of a session of a first look and then steady
	// ones.
	clones := func(steadyLooks int) int {
		looks := 1 + steadyLooks
		out := filepath.Join(tb.TempDir(), "strace")
		argv := append([]string{strace, "-f", "-qq", "-o", out, "-e", "trace=clone,clone3,fork,vfork"}, shell...)
		stdout, stderr, err := runScript(tb, argv, nil, first+strings.Repeat(steady, steadyLooks), script, runDir)
		if err != nil {
			tb.Fatalf("%s: %v\n%s", shell[0], err, stderr)
		}
		// Every look answered, watch.sh's with the job alive and no
		// exit code.
		if got := strings.Count(stdout, "ob1 "); got != looks {
			tb.Fatalf("%d answers to %d looks:\n%s", got, looks, stdout)
		}
		if script == WatchScript() {
			want := fmt.Sprintf(" 1 0 %d ", len(logText))
			if got := strings.Count(stdout, want); got != looks {
				tb.Fatalf("%d of %d answers say %q:\n%s", got, looks, want, stdout)
			}
		}
		return shtest.CountClones(out)
	}
	const more = 5
	return float64(clones(1+more)-clones(1)) / more
}

// liveGroup starts a process in a group of its own, there until the test
// ends, and returns the group's id (its pid).
func liveGroup(t testing.TB) int {
	t.Helper()
	p := exec.Command("sleep", "600")
	p.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Process.Kill(); _ = p.Wait() })
	return p.Process.Pid
}

// A pod's endless line (rc-file chatter, a verdict the job wrote) is cut
// at a bound and marked; what follows it is read as usual.
func TestWatcherBoundsItsLines(t *testing.T) {
	long := strings.Repeat("\x1b[2J", 1<<18)
	answer := long + "\nob1 42 - - 0 10 1700000000 - 0 - - - - 6\n" + long + "\n" + long + "\nbytes\n"
	w := newWatcher(io.Discard, strings.NewReader(answer), func() {}, func() error { return nil }, func() {})
	st, b, err := w.Poll(context.Background(), 0, false, 100)
	if err != nil || string(b) != "bytes\n" {
		t.Fatalf("%v %q", err, b)
	}
	if o := st.Verdict.Other; len(o) > maxLine+len(termtext.CutMark) || !strings.HasSuffix(o, strings.TrimSpace(termtext.CutMark)) {
		t.Fatalf("verdict of %d bytes, ending %q", len(o), o[max(0, len(o)-20):])
	}
}

// The job's last progress line reaches the client, through the file its
// OVERBRAINER_PROGRESS names, without its carriage return or other
// control characters; a line longer than 256 bytes comes cut to its end.
func TestWatchReportsProgress(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, jobEnv := newRun(t, `printf 'step=1 total=10\r\n' >> "$OVERBRAINER_PROGRESS"
printf 'step=2 total=10 loss=0.5\033[2J\r\n' >> "$OVERBRAINER_PROGRESS"
while [ ! -f "$OVERBRAINER_SNAPSHOT_REQUEST" ]; do sleep 0.05; done
printf 'step=3 %0300d\n' 7 >> "$OVERBRAINER_PROGRESS"
`)
		w := startWatch(t, shell, runDir)
		if _, stderr, err := runScript(t, []string{"sh"}, nil, "\n", startProgram(), runDir, jobEnv); err != nil {
			t.Fatalf("start: %v %s", err, stderr)
		}
		var st State
		shtest.Eventually(t, time.Minute, func() bool {
			st, _ = poll(t, w, 0, false, 0)
			return st.Progress != ""
		}, "a progress line")
		if want := "step=2 total=10 loss=0.5[2J"; st.Progress != want {
			t.Fatalf("progress %q, want %q", st.Progress, want)
		}
		os.WriteFile(filepath.Join(runDir, watchdog.SnapshotRequest), []byte("stop"), 0o600)
		shtest.Eventually(t, time.Minute, func() bool {
			st, _ = poll(t, w, 0, false, 0)
			return st.Ended()
		}, "the job's end")
		if want := strings.Repeat("0", 254) + "7"; st.Progress != want {
			t.Fatalf("progress %q, want the last 255 bytes before the newline %q", st.Progress, want)
		}
	})
}

// The watchdog's time of the last movement it saw (.pod/moved) reaches the
// client; none, or anything but a regular file holding a number, is 0.
func TestWatchReportsMoved(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, _ := newRun(t, "true\n")
		w := startWatch(t, shell, runDir)
		if st, _ := poll(t, w, 0, false, 0); st.Moved != 0 {
			t.Fatalf("moved %d without .pod/moved", st.Moved)
		}
		moved := filepath.Join(runDir, watchdog.Moved)
		if err := os.WriteFile(moved, []byte("1800000123\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if st, _ := poll(t, w, 0, false, 0); st.Moved != 1800000123 {
			t.Fatalf("moved %d, want 1800000123", st.Moved)
		}
		if err := os.Remove(moved); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(moved, 0o600); err != nil {
			t.Fatal(err)
		}
		if st, _ := poll(t, w, 0, false, 0); st.Moved != 0 {
			t.Fatalf("moved %d from a FIFO", st.Moved)
		}
	})
}
