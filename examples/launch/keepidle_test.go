package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// --keep-idle 0 keeps the pod unbounded, as asked: the pod's env says so,
// and the warning gives the price by the month, what such a pod costs
// forgotten.
func TestKeepIdleZeroWarnsTheMonthlyPrice(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.run(args([]string{"run", "--keep-pod", "--keep-idle", "0"}, fast, demo(1))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	r := w.onlyRun()
	warning := lineWith(p.stderr.String(), "warning: pod "+r.PodID+" is kept")
	for _, want := range []string{"nothing deletes it (--keep-idle 0)", "~$0.690/h", "~$504.0", "a month", "launch rm " + r.ID} {
		if !strings.Contains(warning, want) {
			t.Errorf("warning %q lacks %q", warning, want)
		}
	}
	if got := w.pod(r).Env[podenv.KeepIdleEnv]; got != "0" {
		t.Errorf("the pod's idle bound is %q, want 0", got)
	}
	if rm := w.run("rm", r.ID); rm.code != 0 {
		t.Fatalf("rm exit %d", rm.code)
	}
	w.assertClean()
}

// A kept pod whose job ended stays while an SSH session is open on it,
// well past its idle bound (a `launch ssh` command that outlives it, on
// the pod's real sshd), and its watchdog deletes it once the session
// closed and the bound passed again.
func TestKeptPodIdleBoundWaitsForTheSession(t *testing.T) {
	t.Parallel()
	const idle = 12 * time.Second
	w := newWorld(t)
	p := w.run(args([]string{"run", "--keep-pod", "--keep-idle", idle.String()}, fast, demo(1))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	r := w.onlyRun()
	mustContain(t, "stderr", p.stderr.String(), "after 12s with no SSH session open")
	// The session lasts more than twice the bound.
	s := w.run("ssh", r.ID, "--", "sleep", "30")
	if s.code != 0 {
		t.Fatalf("the session ended with exit %d: the pod went under it?\n%s\npod log:\n%s", s.code, s.stderr, w.srv.PodLog(w.pod(r).ID))
	}
	closed := time.Now()
	if pod := w.pod(r); pod.Status != runpodtest.StatusRunning {
		t.Fatalf("the kept pod is %s right after its session", pod.Status)
	}
	gone := w.waitPodGone(r, patience)
	// The container's output relays the watchdog's log, up to the hold
	// at least (the delete may kill the relay before its last lines).
	if log := w.srv.PodLog(gone.ID); !strings.Contains(log, watchdog.KindKeptHeld+" sessions=1") {
		t.Errorf("the pod's log lacks the session's hold:\n%s", log)
	}
	// Its own watchdog deleted it, with the pod's key.
	deletes := 0
	for _, req := range w.srv.Requests() {
		if req.Method == "DELETE" && req.Path == "/v2/pods/"+gone.ID {
			deletes++
			if req.Caller != gone.ID {
				t.Errorf("the pod was deleted by %q, not by its watchdog", req.Caller)
			}
		}
	}
	if deletes == 0 {
		t.Error("no DELETE of the pod")
	}
	if gone.EndedAt.Before(closed.Add(idle - time.Second)) {
		t.Errorf("deleted %s after the session closed, before the idle bound (%s)", gone.EndedAt.Sub(closed), idle)
	}
	if rm := w.run("rm", r.ID); rm.code != 0 {
		t.Fatalf("rm exit %d\n%s", rm.code, rm.stderr)
	}
	w.assertClean()
}
