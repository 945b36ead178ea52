package main_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The example run file (the README's) runs as it says: its settings arm
// the run (its job, GPU, cap, stall rule, exclude, deadline), and the
// command line's flags win over its own (the demo's steps, the fast knobs).
func TestRunFromTheExampleRunFile(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	began := time.Now()
	p := w.run(args([]string{"run", "-f", "run.yaml"}, fast, demo(2))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	mustContain(t, "stdout", p.stdout.String(), "step 2/2", "training done")
	r := w.onlyRun()
	demoDir, err := filepath.Abs("demo")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.JobDir != demoDir:
		t.Errorf("job dir %q, want the file's job: demo, next to it (%s)", r.JobDir, demoDir)
	case r.Command != "DEMO_STEPS=2 sh train.sh":
		t.Errorf("command %q: the command line's --cmd did not win", r.Command)
	case r.GPU != "NVIDIA GeForce RTX 4090" || r.MaxCostUSD != 3 || r.StallAfter != 30*time.Minute:
		t.Errorf("armed GPU %q, cap %v, stall after %v: not the file's", r.GPU, r.MaxCostUSD, r.StallAfter)
	case !slices.Equal(r.Results.Exclude, []string{"ckpt-*"}):
		t.Errorf("exclude %q", r.Results.Exclude)
	case r.Deadline.Before(began.Add(2*time.Hour-time.Minute)) || r.Deadline.After(time.Now().Add(2*time.Hour)):
		t.Errorf("deadline %s, want 2h after the start (%s)", r.Deadline, began)
	}
	w.assertClean()
}
