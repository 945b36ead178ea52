package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// shortCap is a cost cap of 90 s of money with a snapshot lead of ten
// minutes: the cap is nearer than the lead before the job even starts.
func shortCap() (maxUSD float64, flags []string) {
	maxUSD = price * 90 / 3600
	return maxUSD, append(append([]string{}, fast...), "--max-cost-usd", strconv.FormatFloat(maxUSD, 'f', 6, 64), "--snapshot-lead", "600s")
}

// A cap nearer than the snapshot lead is said before the job starts; the
// job is asked at once, checkpoints and stops, and the run names the cost
// cap as what ended it.
func TestShortCostCapIsSaidAndReachesTheJob(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	maxUSD, flags := shortCap()
	p := w.run(append(append([]string{"run"}, flags...), demo(300)...)...)
	if p.code != 0 {
		t.Fatalf("exit %d\n%s", p.code, p.stderr.String())
	}
	stderr := p.stderr.String()
	warn := strings.Index(stderr, "less than the snapshot lead")
	started := strings.Index(stderr, "job started")
	if warn < 0 || started < 0 || warn > started {
		t.Fatalf("no warning of the short cap before the job started:\n%s", stderr)
	}
	mustContain(t, "stderr", stderr, "snapshot requested (cost)", "the cost cap of $", "ended the run", "results downloaded")
	w.costSnapshotCollected(maxUSD)
}

// costSnapshotCollected checks the only run's results hold the demo's
// checkpoint for the cost snapshot, that its pod billed no more than
// maxUSD, and that nothing is left.
func (w *world) costSnapshotCollected(maxUSD float64) {
	w.t.Helper()
	r := w.onlyRun()
	ckpt, _ := os.ReadFile(filepath.Join(r.OutDir, "outputs", "checkpoint.txt"))
	if !strings.Contains(string(ckpt), "reason=snapshot cost\n") {
		w.t.Fatalf("checkpoint %q", ckpt)
	}
	if bill := w.pod(r).Bill.USD; bill > maxUSD {
		w.t.Fatalf("bill %v over the cap %v", bill, maxUSD)
	}
	w.assertClean()
}

// A job that checkpoints at the cost request but never stops: its pod goes
// at the cap, the checkpoint was downloaded before, the launcher names the
// cost cap, and the cost it records is no more than what the pod billed.
func TestJobPastItsCostCapKeepsItsCheckpoint(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	_, flags := shortCap()
	p := w.run(append(append([]string{"run"}, flags...), "--cmd", `DEMO_STEPS=300 sh train.sh; trap "" TERM; while :; do sleep 1; done`)...)
	if p.code == 0 {
		t.Fatalf("exit 0 for a run its cap ended\n%s", p.stderr.String())
	}
	stderr := p.stderr.String()
	mustContain(t, "stderr", stderr, "its cost cap (--max-cost-usd)", "downloaded while the job ran", "cost: ~$")
	r := w.onlyRun()
	ckpt, _ := os.ReadFile(filepath.Join(r.OutDir, "outputs", "checkpoint.txt"))
	if !strings.Contains(string(ckpt), "reason=snapshot cost\n") {
		t.Fatalf("checkpoint %q\n%s", ckpt, stderr)
	}
	gone := w.waitPodGone(r, patience)
	// The cost told counts from the create call, before the fake starts
	// billing, so it may exceed the bill by the pod's start; what it must
	// not do is count past the delete.
	if r.Ended.IsZero() || r.Ended.After(gone.EndedAt) {
		t.Errorf("run ended at %v, its pod at %v: the cost told runs past the delete", r.Ended, gone.EndedAt)
	}
	if most := price * gone.EndedAt.Sub(r.BillingStart).Hours(); r.CostUSD <= 0 || r.CostUSD > most {
		t.Errorf("recorded cost %v, at most %v from the create call to the delete (billed %v)", r.CostUSD, most, gone.Bill.USD)
	}
	w.assertClean()
}
