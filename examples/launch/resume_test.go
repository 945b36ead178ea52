package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
)

// Run 1 is stopped with a checkpoint and collected; run 2, --resume-from
// run 1, starts at the checkpointed step on a new pod and finishes. Off a
// terminal the transfers' progress comes as plain lines, never a carriage
// return.
func TestResumeFromACheckpoint(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	unknown := w.run("run", "--resume-from", "20260101-000000-abcd")
	if unknown.code != 2 || !strings.Contains(unknown.stderr.String(), "no such run") {
		t.Fatalf("--resume-from an unknown run: exit %d\n%s", unknown.code, unknown.stderr)
	}
	// A run whose results were never collected has nothing to resume from.
	st, err := state.Open(w.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	empty := &state.Run{Record: guard.Record{ID: "20260101-000000-0000"}, OutDir: filepath.Join(t.TempDir(), "results")}
	if err := st.Create(empty); err != nil {
		t.Fatal(err)
	}
	refused := w.run("run", "--resume-from", empty.ID)
	if refused.code != 2 || !strings.Contains(refused.stderr.String(), "has no collected outputs") || len(w.runs()) != 1 {
		t.Fatalf("--resume-from a run without outputs: exit %d, %d runs\n%s", refused.code, len(w.runs()), refused.stderr)
	}
	if err := os.RemoveAll(st.RunPath(empty.ID)); err != nil {
		t.Fatal(err)
	}
	first := w.start(args([]string{"run"}, fast, demo(600))...)
	first.waitOutput("step 3/600", patience)
	one := w.onlyRun()
	if s := w.run("stop", one.ID); s.code != 0 {
		t.Fatalf("stop exit %d\n%s", s.code, s.stderr)
	}
	if code := first.wait(patience); code != 0 {
		t.Fatalf("run 1 exit %d", code)
	}
	ckpt, _ := os.ReadFile(filepath.Join(one.OutDir, "outputs", "checkpoint.txt"))
	m := regexp.MustCompile(`(?m)^step=(\d+)\nloss=.*\nreason=snapshot stop\n`).FindSubmatch(ckpt)
	if m == nil {
		t.Fatalf("run 1's checkpoint %q", ckpt)
	}
	step, _ := strconv.Atoi(string(m[1]))
	steps := step + 3

	second := w.run(args([]string{"run", "--resume-from", one.ID}, fast, demo(steps))...)
	if second.code != 0 {
		t.Fatalf("run 2 exit %d\n%s", second.code, second.stderr)
	}
	out, errOut := second.stdout.String(), second.stderr.String()
	mustContain(t, "run 2 stdout", out, fmt.Sprintf("resuming from the checkpoint at step %d\n", step),
		fmt.Sprintf("step %d/%d loss", step+1, steps), "training done\n")
	if strings.Contains(out, "step 1/") {
		t.Errorf("run 2 started from the first step:\n%s", out)
	}
	mustContain(t, "run 2 stderr", errOut, "resuming from "+filepath.Join(one.OutDir, "outputs"),
		fmt.Sprintf("resuming from step %d (checkpoint.txt, snapshot stop) in the outputs ", step),
		"launch: uploading: ", "launch: downloading the results: ", "results downloaded")
	for _, p := range []*proc{first, second} {
		if strings.Contains(p.stderr.String(), "\r") {
			t.Errorf("a carriage return off a terminal:\n%q", p.stderr)
		}
	}
	var two string
	for _, r := range w.runs() {
		if r.ID != one.ID {
			two = r.OutDir
		}
	}
	want := fmt.Sprintf("step=%d\n", steps)
	if b, _ := os.ReadFile(filepath.Join(two, "outputs", "checkpoint.txt")); !strings.HasPrefix(string(b), want) || !strings.HasSuffix(string(b), "reason=final\n") {
		t.Errorf("run 2's checkpoint %q, want %q ... final", b, want)
	}
	w.assertClean()
}
