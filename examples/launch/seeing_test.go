package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
)

// waitRequest waits until the fake has been asked for a path ending so.
func (w *world) waitRequest(method, suffix string, timeout time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, r := range w.srv.Requests() {
			if r.Method == method && strings.HasSuffix(r.Path, suffix) {
				return
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no %s …%s within %s", method, suffix, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Ctrl-C ends "logs --follow" as the user asked: exit 130, no error.
func TestLogsFollowInterruptedExits130(t *testing.T) {
	t.Parallel()
	w := newAPIWorld(t)
	r, _ := w.seedRun("20260101-000000-cccc")
	p := w.start("logs", r.ID, "--pod", "--follow")
	w.waitRequest("GET", "/logs", patience)
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 130 {
		t.Fatalf("logs --follow after Ctrl-C: exit %d, want 130\n%s", code, p.stderr)
	}
	if strings.Contains(p.stderr.String(), "context canceled") {
		t.Errorf("logs --follow after Ctrl-C says it as an error:\n%s", p.stderr)
	}
}

// lastLine is s's last line, without its newline.
func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// What logs --pod prints of the watchdog's lines reads its times as
// RFC 3339; the kept copy is printed, not rewritten.
func TestLogsPodReadsWatchdogTimes(t *testing.T) {
	t.Parallel()
	w := newAPIWorld(t)
	r, _ := w.seedRun("20260101-000000-dddd")
	st, err := state.Open(w.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	kept := "2026-01-01T00:00:01Z container 1767225600 start deadline=1767229200 interval=60\n" +
		"2026-01-01T00:00:02Z container overbrainer bootstrap: 1767225600 stays\n"
	if err := os.WriteFile(filepath.Join(st.RunPath(r.ID), "pod.log"), []byte(kept), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := w.run("logs", r.ID, "--pod")
	want := "2026-01-01T00:00:01Z container 2026-01-01T00:00:00Z start deadline=2026-01-01T01:00:00Z interval=60\n" +
		"2026-01-01T00:00:02Z container overbrainer bootstrap: 1767225600 stays\n"
	if logs.code != 0 || logs.stdout.String() != want {
		t.Errorf("logs --pod: exit %d\n%s\nwant\n%s", logs.code, logs.stdout, want)
	}
}

// runs reads the local state directory's runs.
func (l *local) runs() []*state.Run {
	l.t.Helper()
	return readRuns(l.t, l.stateDir)
}

// The bill an in-process emulator gave a run at its end stays the run's:
// a later ls, whose emulator is another that never knew the pod, reads
// nothing over it.
func TestLocalRunKeepsItsBill(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	if p := l.run(args([]string{"run"}, fast, demo(1))...); p.code != 0 {
		t.Fatalf("run: exit %d\n%s", p.code, p.stderr)
	}
	runs := l.runs()
	if len(runs) != 1 || runs[0].Bill == nil || len(runs[0].Bill.Pods) == 0 {
		t.Fatalf("the run's bill was not recorded at its end: %+v", runs)
	}
	r := runs[0]
	ls := l.run("--local", "ls")
	line := lineWith(ls.stdout.String(), r.ID)
	if strings.Contains(line, "pending") || strings.Contains(line, "+") {
		t.Errorf("ls line %q: the recorded bill is taken for one to come", line)
	}
	if after := l.runs()[0]; after.Bill == nil || after.Bill.USD != r.Bill.USD || len(after.Bill.Pods) != len(r.Bill.Pods) {
		t.Errorf("ls replaced the recorded bill %+v with %+v", r.Bill, after.Bill)
	}
}

// A run detached in a local-server that was then stopped is said to have
// lived in an emulator that ended (not an in-process one), and rm clears
// it.
func TestRunOfAStoppedLocalServer(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	srv, _ := l.detachedInServer()
	srv.signal(syscall.SIGINT)
	if code := srv.wait(patience); code != 0 {
		t.Fatalf("local-server: exit %d", code)
	}
	id := l.runs()[0].ID

	at := l.run("--local", "attach", id)
	if at.code != 1 || strings.Contains(at.stderr.String(), "in-process local emulator") {
		t.Errorf("attach: exit %d, want 1 and no in-process emulator blamed\n%s", at.code, at.stderr)
	}
	mustContain(t, "attach stderr", at.stderr.String(), "lived in a local emulator that has ended", "launch rm "+id)
	rm := l.run("--local", "rm", id)
	if rm.code != 0 {
		t.Fatalf("rm: exit %d\n%s", rm.code, rm.stderr)
	}
	if r := l.runs()[0]; r.Phase != state.PhaseRemoved {
		t.Errorf("phase %s after rm, want removed", r.Phase)
	}
}

// detachedInServer starts a local-server and a --local run of the demo in
// it, detached by Ctrl-C once it made a step: the server, and the run's
// launcher (exited).
func (l *local) detachedInServer() (srv, run *proc) {
	l.t.Helper()
	srv = l.start("local-server")
	srv.waitOutput("local Runpod emulator at", patience)
	run = l.start(args([]string{"--local", "run"}, fast, demo(600))...)
	run.waitOutput("step 1/600", patience)
	run.signal(syscall.SIGINT)
	if code := run.wait(patience); code != 130 {
		l.t.Fatalf("run: exit %d after Ctrl-C", code)
	}
	return srv, run
}

// local-server --lose-after loses each run's first pod, so that recovery
// can be tried locally, as the README shows.
func TestLocalServerLosesAPodForRecovery(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	srv := l.start("local-server", "--lose-after", "8s")
	srv.waitOutput("local Runpod emulator at", patience)
	p := l.run(args([]string{"--local", "run", "--recover", "1", "--pull-every", "2s"}, fast, demo(20))...)
	if p.code != 0 {
		t.Fatalf("run: exit %d\n%s", p.code, p.stderr)
	}
	mustContain(t, "run stderr", p.stderr.String(), "recovering (1 of 1)")
	mustContain(t, "run stdout", p.stdout.String(), "training done")
	mustContain(t, "local-server stderr", srv.stderr.String(), "on purpose: its host failed (--lose-after)")
	assertReadmeLines(t, readmeSample(t, "<!-- TestLocalServerLosesAPodForRecovery"), p.stdout.String()+p.stderr.String())
	if n := strings.Count(srv.stderr.String(), "on purpose"); n != 1 {
		t.Errorf("%d pods lost, want the run's first only", n)
	}
}

// --lose-by restart restarts the first pod's container instead: with a
// pod volume, the job starts again on the same pod.
func TestLocalServerRestartsAPodForRecovery(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	srv := l.start("local-server", "--lose-after", "8s", "--lose-by", "restart")
	srv.waitOutput("local Runpod emulator at", patience)
	p := l.run(args([]string{"--local", "run", "--recover", "1", "--volume-gb", "10"}, fast, demo(20))...)
	if p.code != 0 {
		t.Fatalf("run: exit %d\n%s", p.code, p.stderr)
	}
	mustContain(t, "run stderr", p.stderr.String(), "recovering (1 of 1)", "the job starts again on the same pod")
	mustContain(t, "local-server stderr", srv.stderr.String(), "on purpose: its container restarted (--lose-after)")
	assertReadmeLines(t, readmeSample(t, "<!-- TestLocalServerRestartsAPodForRecovery"), p.stdout.String()+p.stderr.String())
}
