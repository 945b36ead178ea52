package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// sketchPrelude is what the README's Python sketch leaves to its user: a
// model that counts its steps, its save and load, and a training step.
const sketchPrelude = `import json, time
total = 100000
model = {"step": 0}

def save(model, path):
    with open(path, "w") as f:
        json.dump(model, f)

def load(model, path):
    with open(path) as f:
        model.update(json.load(f))
    return model["step"]

def train_step(model):
    time.sleep(0.2)
    model["step"] += 1
    return 1.0 / model["step"]

`

// The README's path for a job of one's own, walked as a newcomer does: its
// Python sketch (the block itself, so that an edit that breaks it fails
// here) as the job, kept in a run file, run with run -f; stop from
// another terminal, and the launcher says the job proved its checkpoint
// for the request; logs shows the job's output.
func TestReadmeJobSketch(t *testing.T) {
	t.Parallel()
	shtest.NeedTool(t, "python3")
	w := newWorld(t)
	dir := t.TempDir()
	sketch := readmeBlock(t, "<!-- TestReadmeJobSketch", "python")
	if err := os.Mkdir(filepath.Join(dir, "my-job"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "my-job", "train.py"), []byte(sketchPrelude+sketch), 0o644); err != nil {
		t.Fatal(err)
	}
	runFile := "job: my-job\ncmd: python3 train.py\nmax-hours: 1\nmax-cost-usd: 1\n"
	if err := os.WriteFile(filepath.Join(dir, "run.yaml"), []byte(runFile), 0o644); err != nil {
		t.Fatal(err)
	}

	p := w.start(args([]string{"run", "-f", filepath.Join(dir, "run.yaml")}, fast)...)
	p.waitOutput("step 2/100000 loss ", patience) // printed unbuffered, as it ran
	r := w.onlyRun()
	if s := w.run("stop", r.ID); s.code != 0 {
		t.Fatalf("stop: exit %d\n%s", s.code, s.stderr)
	}
	if code := p.wait(patience); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	mustContain(t, "run stderr", p.stderr.String(), "the job checkpointed on request (stop): step ", "(ckpt.pt, stop)", "results downloaded")

	var proof struct {
		Checkpoint, Reason string
		Step               int
	}
	b, err := os.ReadFile(filepath.Join(r.OutDir, "outputs", "snapshot.json"))
	if err == nil {
		err = json.Unmarshal(b, &proof)
	}
	if err != nil || proof.Checkpoint != "ckpt.pt" || proof.Reason != "stop" || proof.Step < 2 {
		t.Errorf("the collected proof %s (%v): want ckpt.pt, stop, step 2 or more", b, err)
	}
	if _, err := os.Stat(filepath.Join(r.OutDir, "outputs", "ckpt.pt")); err != nil {
		t.Errorf("the checkpoint was not collected: %v", err)
	}

	logs := w.run("logs", r.ID)
	if logs.code != 0 {
		t.Fatalf("logs: exit %d\n%s", logs.code, logs.stderr)
	}
	mustContain(t, "logs", logs.stdout.String(), "step 1/100000 loss 1.000\n", "step 2/100000 loss 0.500\n")
	w.assertClean()
}

// cancel of a run that run follows in another terminal, as the README's
// list of commands invites, says what to do instead of only refusing:
// stop works alongside, and the following launcher must end first for
// the rest.
func TestCancelWhileFollowedSaysHow(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(args([]string{"run"}, fast, demo(600))...)
	p.waitOutput("step 2/600", patience)
	r := w.onlyRun()
	c := w.run("cancel", r.ID)
	if c.code != 1 {
		t.Errorf("cancel: exit %d, want 1", c.code)
	}
	mustContain(t, "cancel stderr", c.stderr.String(), "another launcher is following run "+r.ID, "launch stop "+r.ID, "Ctrl-C")
	if s := w.run("stop", r.ID); s.code != 0 {
		t.Fatalf("stop: exit %d\n%s", s.code, s.stderr)
	}
	if code := p.wait(patience); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	w.assertClean()
}

// wordsOnly keeps a line's words: its numbers, a pod's id, a run's id
// and the directory before a run's pulls are what differ from run to run,
// and so does the detail of how a lost pod was found (a look that ended,
// or a dial refused), which the README's sample leaves out.
var wordsOnly = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bis (EXITED|TERMINATED|ERROR) \([^)]*\)`), "is $1"},
	{regexp.MustCompile(`\bpod [a-z0-9]{6,14}\b`), "pod POD"},
	{regexp.MustCompile(`\b\d{8}-\d{6}-[0-9a-f]{4}\b`), "RUN"},
	{regexp.MustCompile(`\S*/pulls/`), ".../pulls/"},
	{regexp.MustCompile(`\d+`), "N"},
}

// assertReadmeLines checks that each line of a README sample is a line of
// out, both read by wordsOnly.
func assertReadmeLines(t *testing.T, sample, out string) {
	t.Helper()
	words := func(line string) string {
		for _, r := range wordsOnly {
			line = r.re.ReplaceAllString(line, r.with)
		}
		return line
	}
	seen := map[string]bool{}
	for line := range strings.Lines(out) {
		seen[words(strings.TrimSuffix(line, "\n"))] = true
	}
	for line := range strings.Lines(sample) {
		if w := words(strings.TrimSuffix(line, "\n")); !seen[w] {
			t.Errorf("the README's line %q is not what a real run prints (read as %q):\n%s", line, w, out)
		}
	}
}

// While "launch run" follows a run in its in-process emulator, logs, ssh
// and ls from another terminal (as the README's "See a run" has them) do
// not call that emulator ended nor the pod gone: they say where the run
// is seen, and how to see runs from other terminals.
func TestInProcessRunSeenFromAnotherTerminal(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	p := l.start(args([]string{"run"}, fast, demo(600))...)
	p.waitOutput("step 2/600", patience)
	id := l.runs()[0].ID
	for _, cmd := range [][]string{{"logs", id}, {"ssh", id, "--", "true"}} {
		c := l.run(cmd...)
		if c.code != 1 || strings.Contains(c.stderr.String(), "has ended") {
			t.Errorf("%s: exit %d, want 1 and no emulator said to have ended\n%s", cmd[0], c.code, c.stderr)
		}
		mustContain(t, cmd[0]+" stderr", c.stderr.String(), "in-process emulator of the launcher that started it", "launch local-server")
	}
	ls := l.run("ls")
	if line := lineWith(ls.stdout.String(), id); strings.Contains(line, "gone") {
		t.Errorf("ls says the running pod is gone: %q", line)
	}
	p.signal(syscall.SIGINT) // an in-process run collects and deletes on Ctrl-C
	if code := p.wait(patience); code != 130 {
		t.Errorf("run: exit %d after Ctrl-C, want 130", code)
	}
}
