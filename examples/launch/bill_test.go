package main_test

import (
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// The real bill: a run reads Runpod's billing of its pod after the
// delete; while Runpod has not billed it, ls shows it pending and reads it
// again, and once billed shows it next to the estimate and keeps it.
func TestBillInLs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, runpodtest.WithBillingDelay(24*time.Hour))
	p := w.run(args([]string{"run"}, fast, demo(2))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	mustContain(t, "stderr", p.stderr.String(), "cost: ~$", "billed: not yet known")
	r := w.onlyRun()
	if r.Bill == nil || len(r.Bill.Missing) != 1 || r.Bill.Missing[0] != r.PodID {
		t.Fatalf("bill at the end %+v, want the pod missing", r.Bill)
	}

	ls := w.run("ls")
	if ls.code != 0 {
		t.Fatalf("ls exit %d", ls.code)
	}
	mustContain(t, "ls", ls.stdout.String(), "ESTIMATED", "BILLED")
	mustContain(t, "ls", lineWith(ls.stdout.String(), r.ID), "~"+costplan.Money(r.CostUSD), "pending")

	// Runpod bills it now: ls reads it, shows it and keeps it.
	w.srv.SetBillingDelay(0)
	want := costplan.Money(w.pod(r).Bill.USD)
	ls = w.run("ls")
	line := lineWith(ls.stdout.String(), r.ID)
	mustContain(t, "ls", line, "~"+costplan.Money(r.CostUSD), want+"+")
	if strings.Contains(line, "pending") {
		t.Errorf("ls still shows the bill pending: %s", line)
	}
	mustContain(t, "ls", ls.stdout.String(), "billed: what Runpod's billing says")
	r = w.onlyRun()
	if r.Bill == nil || len(r.Bill.Missing) != 0 || costplan.Money(r.Bill.USD) != want {
		t.Errorf("saved bill %+v, want %s", r.Bill, want)
	}
	w.assertClean()
}
