package main_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
)

const rtx4090 = "NVIDIA GeForce RTX 4090"

// TestWaitForGPUCreatesWhenBack: the only type is out of stock until the
// launcher says it waits; --wait-for-gpu waits, saying so, with no pod,
// and the run gets its one pod once the type is back.
func TestWaitForGPUCreatesWhenBack(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// Out of stock until the launcher says it waits, however late a busy
	// machine gets it there.
	w.srv.OutOfStock(rtx4090, time.Time{})
	p := w.start(args([]string{"run", "--gpu", rtx4090, "--wait-for-gpu", "10m"}, fast, demo(1))...)
	p.waitOutput("waiting for one, no pod meanwhile", patience)
	w.srv.Restock(rtx4090)
	if p.wait(2*patience) != 0 {
		t.Fatalf("exit %d\n%s", p.code, p.stderr)
	}
	mustContain(t, "stderr", p.stderr.String(), "no GPU available", "waiting for one, no pod meanwhile", "next look in", "created: "+rtx4090)
	r := w.onlyRun()
	var got []string
	for _, a := range r.Attempts {
		got = append(got, string(a.Outcome))
	}
	if diff := cmp.Diff([]string{"no_capacity", "created"}, got); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if pods := w.srv.Pods(); len(pods) != 1 {
		t.Errorf("pods %+v, want one", pods)
	}
	w.assertClean()
}

// TestWaitForGPUInterrupted: Ctrl-C ends a wait for capacity at once,
// with no pod and the run's secret deleted.
func TestWaitForGPUInterrupted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.srv.OutOfStock(rtx4090, time.Time{})
	p := w.start(args([]string{"run", "--gpu", rtx4090, "--wait-for-gpu", "1h"}, fast, demo(1))...)
	p.waitOutput("waiting for one, no pod meanwhile", patience)
	if pods := w.srv.Pods(); len(pods) != 0 {
		t.Errorf("pods while waiting: %+v", pods)
	}
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130\n%s", code, p.stderr)
	}
	if r := w.onlyRun(); r.Phase != state.PhaseFailed {
		t.Errorf("phase %s, want failed", r.Phase)
	}
	if pods := w.srv.Pods(); len(pods) != 0 {
		t.Errorf("pods %+v", pods)
	}
	w.assertClean()
}
