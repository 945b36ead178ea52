package main_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/sweep"
)

// With the launcher SIGKILLed and the pod's watchdog killed by the job, no
// enforcer is left on either side: two sweepers running at once delete the
// pod (as EXITED when the watchdog's death ended the container, or at its
// hard deadline plus the margin), once.
func TestSweepDeletesWhatNobodyGuards(t *testing.T) {
	t.Parallel()
	// Runpod restarts a container whose command ended, and the new boot
	// starts a new watchdog: the pod here is one that does not come back
	// (a restart that fails, an image that crash-loops), left EXITED.
	w := newWorld(t, runpodtest.WithExitedOnEnd())
	began := time.Now()
	// The job kills the watchdog once the launcher is gone: when the
	// lease it renews every second has not moved for 10 s. (A fixed
	// sleep let a busy machine kill the watchdog while the launcher still
	// followed, and the launcher deleted the EXITED pod itself.) The
	// deadline is far enough for a slow start: the watchdog's death
	// leaves the pod EXITED, which the sweepers judge at once.
	job := `DEMO_STEPS=600 sh train.sh &
lease=../.pod/lease
until [ -e "$lease" ] && [ $(($(date +%s) - $(stat -c %Y "$lease"))) -ge 10 ]; do sleep 1; done
kill -KILL "$(cat ../.pod/watchdog.pid)"; wait`
	p := w.start(append([]string{"run"}, append(fast, "--max-hours", "0.1", "--max-extension", "0", "--cmd", job)...)...)
	p.waitOutput("step 2/600", patience)
	p.signal(syscall.SIGKILL)
	p.wait(patience)
	r := w.onlyRun()

	sweepArgs := []string{"sweep", "--every", "2s", "--margin", "1s", "--exited-grace", "1s", "--json"}
	a, b := w.start(sweepArgs...), w.start(sweepArgs...)
	pod := w.waitPodGone(r, patience)
	time.Sleep(3 * time.Second) // one more period of each sweeper
	a.signal(syscall.SIGINT)
	b.signal(syscall.SIGINT)
	a.wait(patience)
	b.wait(patience)

	deletes := 0
	for _, req := range w.srv.Requests() {
		if req.Method == "DELETE" && strings.HasSuffix(req.Path, "/pods/"+pod.ID) {
			if req.Caller == pod.ID {
				t.Fatal("the pod's watchdog deleted it: it was meant to be dead")
			}
			if req.Status == 200 || req.Status == 204 {
				deletes++
			}
		}
	}
	if deletes != 1 {
		t.Errorf("%d successful deletes of the pod, want 1 (two sweepers, one delete)", deletes)
	}
	var done []sweep.Decision
	for _, out := range []string{a.stdout.String(), b.stdout.String()} {
		for line := range strings.Lines(out) {
			var d sweep.Decision
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				t.Fatalf("a --json line that is not a decision: %q: %v", line, err)
			}
			if d.PodID == pod.ID && d.Done {
				done = append(done, d)
			}
		}
	}
	if len(done) == 0 || (done[0].Rule != sweep.RuleDeadline && done[0].Rule != sweep.RuleExited) {
		t.Fatalf("the sweepers' decisions on the pod: %+v\n%s\n%s", done, a.stderr, b.stderr)
	}
	t.Logf("deleted by rule %s: %s", done[0].Rule, done[0].Why)
	if max := price * time.Since(began).Hours(); pod.Bill.USD > max {
		t.Fatalf("bill %v > %v", pod.Bill.USD, max)
	}
}

// Without a key, sweep refuses (it sweeps an account) unless --local asks
// for the local emulator; a period under a minute against Runpod itself is
// refused.
func TestSweepDryRunLocalAndPeriod(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	if p := l.run("sweep", "--dry-run"); p.code != 2 || !strings.Contains(p.stderr.String(), "sweep needs RUNPOD_API_KEY") {
		t.Fatalf("sweep without a key: exit %d, want 2\n%s", p.code, p.stderr)
	}
	p := l.run("--local", "sweep", "--dry-run")
	if p.code != 0 {
		t.Fatalf("sweep --dry-run exit %d\n%s", p.code, p.stderr)
	}
	mustContain(t, "sweep stdout", p.stdout.String(), "sweep: 0 pods, 0 secrets, 0 deleted")
	w := newWorld(t)
	// Without --api-url: Runpod itself (nothing is called before the refusal).
	cmd := w.command("sweep", "--every", "30s")
	cmd.Args = slices.DeleteFunc(cmd.Args, func(a string) bool {
		return strings.HasPrefix(a, "--api-url") || strings.Contains(a, "127.0.0.1") && strings.HasSuffix(a, "/v2")
	})
	q := startProc(t, cmd, cmd.Args[1:])
	if q.wait(patience); q.code != 2 {
		t.Fatalf("sweep --every 30s against Runpod: exit %d, want 2 (usage)\n%s", q.code, q.stderr)
	}
	mustContain(t, "sweep stderr", q.stderr.String(), "every: 30s is under 1m0s")
}

// A fresh sweeper, from another state directory (another machine), never
// deletes a live run it did not make: not by sweep, not by rm
// --all-orphans, even with a cost cap so large that its time overflowed a
// Duration (which once read as past the cap).
func TestAFreshSweeperLeavesAnotherMachinesRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(args([]string{"run", "--max-cost-usd", "5000000"}, fast, demo(600))...)
	p.waitOutput("step 1/600", patience)
	r := w.onlyRun()
	other := &world{t: t, srv: w.srv, stateDir: filepath.Join(t.TempDir(), "elsewhere")}
	s := other.run("sweep", "--margin", "1s", "--exited-grace", "1s")
	if s.code != 0 || w.pod(r).Status != runpodtest.StatusRunning {
		t.Fatalf("sweep from elsewhere: exit %d, pod %s\n%s\n%s", s.code, w.pod(r).Status, s.stdout, s.stderr)
	}
	o := other.run("rm", "--all-orphans", "--margin", "1s", "--exited-grace", "1s")
	if o.code != 0 || w.pod(r).Status != runpodtest.StatusRunning {
		t.Fatalf("rm --all-orphans from elsewhere: exit %d, pod %s\n%s", o.code, w.pod(r).Status, o.stderr)
	}
	mustContain(t, "rm --all-orphans", o.stderr.String(), "keep pod "+r.PodID, "no rule applies")
	p.signal(syscall.SIGINT)
	p.wait(patience)
	if rm := w.run("rm", "--force", r.ID); rm.code != 0 {
		t.Fatalf("rm exit %d\n%s", rm.code, rm.stderr)
	}
}
