package main_test

import (
	"os"
	"path/filepath"
	"testing"
)

// jobDir is a job whose train.sh is script.
func jobDir(t *testing.T, script string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "train.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// What a run downloads: excluded files stay on the pod, empty outputs
// fail a run that requires them, and results past the cap are left on
// the pod for its retrieve grace.
func TestResultsPolicy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	job := jobDir(t, `o=$OVERBRAINER_OUTPUTS
mkdir -p "$o/ckpt-1"
echo weights > "$o/model"; echo big > "$o/ckpt-1/state"; echo s > "$o/scratch.tmp"
`)
	p := w.run(args([]string{"run", "--job", job, "--cmd", "sh train.sh", "--require-outputs", "--exclude", "ckpt-*", "--exclude", "*.tmp"}, fast)...)
	if p.code != 0 {
		t.Fatalf("exit %d: %s", p.code, p.stderr.String())
	}
	r := w.onlyRun()
	if b, err := os.ReadFile(filepath.Join(r.OutDir, "outputs", "model")); err != nil || string(b) != "weights\n" {
		t.Fatalf("outputs/model %q, %v", b, err)
	}
	for _, kept := range []string{"ckpt-1", "scratch.tmp"} {
		if _, err := os.Lstat(filepath.Join(r.OutDir, "outputs", kept)); err == nil {
			t.Errorf("the excluded %s was downloaded", kept)
		}
	}
	w.assertClean()

	w = newWorld(t)
	p = w.run(args([]string{"run", "--job", jobDir(t, "echo nothing kept\n"), "--cmd", "sh train.sh", "--require-outputs"}, fast)...)
	if p.code != 1 {
		t.Fatalf("a run without outputs: exit %d, want 1", p.code)
	}
	mustContain(t, "stderr", p.stderr.String(), "the job left no outputs")
	w.assertClean()

	w = newWorld(t)
	p = w.run(args([]string{"run", "--job", job, "--cmd", "sh train.sh", "--max-results-gb", "0.000000001", "--retrieve-grace", "10m"}, fast)...)
	if p.code != 1 {
		t.Fatalf("a run past the cap: exit %d, want 1", p.code)
	}
	mustContain(t, "stderr", p.stderr.String(), "the results pass the cap", "is left to its watchdog")
	r = w.onlyRun()
	if pod := w.pod(r); pod.Status == "TERMINATED" {
		t.Fatal("the pod holding the only copy was deleted by the launcher")
	}
	// A larger cap on attach collects them.
	if p = w.run("attach", "--max-results-gb", "1", r.ID); p.code != 0 {
		t.Fatalf("attach with a larger cap: exit %d: %s", p.code, p.stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(r.OutDir, "outputs", "model")); err != nil || string(b) != "weights\n" {
		t.Fatalf("outputs/model after the attach: %q, %v", b, err)
	}
	w.assertClean()
}
