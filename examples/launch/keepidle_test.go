package main_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
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

// A kept pod stays while a loop started over `launch ssh` with nohup (gone
// to init once its session closed) uses CPU, past its idle bound; once the
// loop is killed and the bound passed again, its watchdog stops it, never
// deletes it: with --volume-gb, the pod volume keeps the data. `ls` shows
// it stopped, with its storage's price by the month, until rm.
func TestKeptPodHeldByANohupLoopThenStopped(t *testing.T) {
	t.Parallel()
	const idle = 10 * time.Second
	w := newWorld(t)
	p := w.run(args([]string{"run", "--keep-pod", "--keep-idle", idle.String(), "--volume-gb", "10"}, fast, demo(1))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	r := w.onlyRun()
	mustContain(t, "stderr", p.stderr.String(), "its watchdog stops it (not deletes it) after 10s", "its 10 GB pod volume stays", "~$2.000 a month")
	id := w.pod(r).ID
	if got := w.pod(r).Env[podenv.PodVolumeGBEnv]; got != "10" {
		t.Errorf("the pod's %s is %q, want 10", podenv.PodVolumeGBEnv, got)
	}
	loop := `while :; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 1; done`
	s := w.run("ssh", r.ID, "--", "sh", "-c", `echo kept >/workspace/mine.txt; nohup sh -c 'echo $$ >/workspace/loop.pid; `+loop+`' </dev/null >/dev/null 2>&1 &`)
	if s.code != 0 {
		t.Fatalf("ssh exit %d\n%s", s.code, s.stderr)
	}
	closed := time.Now()
	running := func() {
		t.Helper()
		if st := w.pod(r).Status; st != runpodtest.StatusRunning {
			t.Fatalf("the kept pod is %s while its loop runs\npod log:\n%s", st, w.srv.PodLog(id))
		}
	}
	held := regexp.MustCompile(watchdog.KindKeptHeld + ` sessions=\d+ procs=[1-9]`)
	shtest.Eventually(t, patience, func() bool {
		running()
		return held.MatchString(w.srv.PodLog(id))
	}, "the loop's hold")
	// Two bounds after the session closed, the loop still holds the pod.
	shtest.Eventually(t, patience, func() bool {
		running()
		return time.Since(closed) > 2*idle
	}, "two idle bounds")
	if k := w.run("ssh", r.ID, "--", "sh", "-c", `kill "$(cat /workspace/loop.pid)"`); k.code != 0 {
		t.Fatalf("kill exit %d\n%s", k.code, k.stderr)
	}
	killed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := w.srv.WaitStatus(ctx, id, runpodtest.StatusExited); err != nil {
		t.Fatalf("%v\npod log:\n%s", err, w.srv.PodLog(id))
	}
	stops := 0
	for _, req := range w.srv.Requests() {
		switch {
		case req.Method == "DELETE" && req.Path == "/v2/pods/"+id:
			t.Errorf("the kept pod with a pod volume was deleted (by %q)", req.Caller)
		case req.Method == "POST" && req.Path == "/v2/pods/"+id+"/action" && strings.Contains(string(req.Body), `"stop"`):
			stops++
			if req.Caller != id {
				t.Errorf("the pod was stopped by %q, not by its watchdog", req.Caller)
			}
			if req.Time.Before(killed.Add(idle - time.Second)) {
				t.Errorf("stopped %s after the loop was killed, before the idle bound (%s)", req.Time.Sub(killed), idle)
			}
		}
	}
	if stops != 1 {
		t.Errorf("%d stop actions, want 1", stops)
	}
	ls := w.run("ls")
	mustContain(t, "ls", lineWith(ls.stdout.String(), r.ID), "EXITED", "~$2.000/month (storage, est.)")
	if rm := w.run("rm", r.ID); rm.code != 0 {
		t.Fatalf("rm exit %d\n%s", rm.code, rm.stderr)
	}
	w.assertClean()
}
