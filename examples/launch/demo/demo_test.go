package demo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
)

func run(t *testing.T, shell []string, dir string, env ...string) string {
	t.Helper()
	cmd := exec.Command(shell[0], append(shell[1:], "train.sh")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", shell, err, out)
	}
	return string(out)
}

func TestDemoUnderEveryShell(t *testing.T) {
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		shell := sh.Argv
		dir := t.TempDir()
		if err := WriteTo(dir); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		req := filepath.Join(dir, "snapshot.request")
		progress := filepath.Join(dir, "progress")
		env := []string{"OVERBRAINER_OUTPUTS=" + out, "OVERBRAINER_SNAPSHOT_REQUEST=" + req, "DEMO_STEP_SECONDS=0",
			podenv.ProgressEnv + "=" + progress}

		log := run(t, shell, dir, append(env, "DEMO_STEPS=7")...)
		for _, want := range []string{"step 1/7 loss 1.050\n", "checkpoint: step 5 (periodic)", "step 7/7 loss 0.300\n", "training done\n"} {
			if !strings.Contains(log, want) {
				t.Fatalf("output lacks %q:\n%s", want, log)
			}
		}
		ckpt, _ := os.ReadFile(filepath.Join(out, "checkpoint.txt"))
		if string(ckpt) != "step=7\nloss=0.300\nreason=final\n" {
			t.Fatalf("checkpoint %q", ckpt)
		}
		// One progress line a step, as the stall rule and the pace read it.
		lines, _ := os.ReadFile(progress)
		if got := strings.Split(strings.TrimSuffix(string(lines), "\n"), "\n"); len(got) != 7 ||
			got[0] != "step=1 total=7 loss=1.050" || got[6] != "step=7 total=7 loss=0.300" {
			t.Fatalf("progress %q", lines)
		}

		// A snapshot request stops it with a checkpoint, exit 0; the
		// next run resumes from it.
		os.WriteFile(req, []byte("cost"), 0o600)
		log = run(t, shell, dir, append(env, "DEMO_STEPS=20")...)
		if !strings.Contains(log, "resuming from the checkpoint at step 7") ||
			!strings.Contains(log, "snapshot requested (cost)") || strings.Contains(log, "step 8/20") {
			t.Fatalf("output:\n%s", log)
		}
		ckpt, _ = os.ReadFile(filepath.Join(out, "checkpoint.txt"))
		if string(ckpt) != "step=7\nloss=0.300\nreason=snapshot cost\n" {
			t.Fatalf("checkpoint %q", ckpt)
		}
		proof, _ := os.ReadFile(filepath.Join(out, "snapshot.json"))
		if string(proof) != `{"checkpoint": "checkpoint.txt", "step": 7, "reason": "snapshot cost"}`+"\n" {
			t.Fatalf("snapshot.json %q", proof)
		}
		// A reason that JSON would need escaped is not written as is.
		os.WriteFile(req, []byte(`a"b`), 0o600)
		run(t, shell, dir, append(env, "DEMO_STEPS=20")...)
		proof, _ = os.ReadFile(filepath.Join(out, "snapshot.json"))
		if string(proof) != `{"checkpoint": "checkpoint.txt", "step": 7, "reason": "other"}`+"\n" {
			t.Fatalf("snapshot.json %q", proof)
		}
	})
}
