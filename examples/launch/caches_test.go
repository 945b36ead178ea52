package main_test

import (
	"os"
	"path/filepath"
	"testing"
)

// A job on a network volume finds HF_HOME, TORCH_HOME and PIP_CACHE_DIR
// under it, so that what it downloads is there for the next pod; the
// pod's own variable of one of those names wins.
func TestCachesOnTheNetworkVolume(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	vol := w.srv.AddNetworkVolume("vol-cache", 10)
	job := t.TempDir()
	script := `echo "HF_HOME=$HF_HOME TORCH_HOME=$TORCH_HOME PIP_CACHE_DIR=$PIP_CACHE_DIR"
mkdir -p "$HF_HOME/hub" && echo model > "$HF_HOME/hub/weights"
`
	if err := os.WriteFile(filepath.Join(job, "job.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p := w.run(args([]string{"run", "--job", job, "--cmd", "sh job.sh", "--network-volume", "vol-cache", "--pod-env", "TORCH_HOME=/opt/torch"}, fast)...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	mustContain(t, "stdout", p.stdout.String(), "HF_HOME=/workspace/.cache/huggingface TORCH_HOME=/opt/torch PIP_CACHE_DIR=/workspace/.cache/pip\n")
	if b, err := os.ReadFile(filepath.Join(vol.Dir, ".cache", "huggingface", "hub", "weights")); err != nil || string(b) != "model\n" {
		t.Fatalf("the cache is not on the volume: %q %v", b, err)
	}
	w.assertClean()
}
