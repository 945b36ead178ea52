package guard

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// files writes name → content under dir.
func files(t *testing.T, dir string, contents map[string][]byte) {
	t.Helper()
	for name, b := range contents {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// emulatorAPI is a client of a new emulator that closes with the test.
func emulatorAPI(t *testing.T, opts ...runpodtest.Option) *runpod.Client {
	t.Helper()
	srv := runpodtest.NewTestServer(t, opts...)
	api := checkedfake.Client(t, srv)
	return api
}

// byKind is the events of one kind.
func byKind(events []Event, kind EventKind, stage ...Stage) []Event {
	var out []Event
	for _, e := range events {
		if e.Kind == kind && (len(stage) == 0 || e.Stage == stage[0]) {
			out = append(out, e)
		}
	}
	return out
}

// checkGrowth says what is wrong with a transfer's events: they must
// grow, and the last must carry the bytes that moved, of total.
func checkGrowth(t *testing.T, what string, events []Event, moved, total int64) {
	t.Helper()
	if len(events) == 0 {
		t.Fatalf("no %s events", what)
	}
	var counts []int64
	for _, e := range events {
		counts = append(counts, e.Bytes)
		if e.Total != total {
			t.Errorf("%s event of total %d, want %d", what, e.Total, total)
		}
	}
	if !slices.IsSorted(counts) || len(slices.Compact(slices.Clone(counts))) != len(counts) || counts[len(counts)-1] != moved {
		t.Errorf("%s counts %v, want growing to %d", what, counts, moved)
	}
}

// A run resumed from earlier outputs finds them in $OVERBRAINER_OUTPUTS
// before its job starts, on a real pod of the emulator, and its
// collection brings them back with the new ones; the upload and the
// download tell growing counts that end at the bytes that moved.
func TestResumeFromUploadsTheOutputsFirst(t *testing.T) {
	shtest.NeedPods(t, localpod.Check())
	shtest.NeedTool(t, "sha256sum")
	api := emulatorAPI(t, runpodtest.WithPodRunner())
	dir := t.TempDir()
	job, earlier := filepath.Join(dir, "job"), filepath.Join(dir, "earlier")
	script := []byte(`o=$OVERBRAINER_OUTPUTS
echo "resumed at $(cat "$o/checkpoint.txt")"
cmp -s "$o/sub/model.bin" "$o/model.copy" || cp "$o/sub/model.bin" "$o/model.copy"
echo step=8 > "$o/checkpoint.txt"
`)
	files(t, job, map[string][]byte{"train.sh": script})
	model := make([]byte, 3<<20)
	rand.Read(model)
	files(t, earlier, map[string][]byte{"checkpoint.txt": []byte("step=7\n"), "sub/model.bin": model})
	if err := os.Symlink("sub/model.bin", filepath.Join(earlier, "latest")); err != nil {
		t.Fatal(err)
	}
	// Named through a link, it goes up as the directory.
	link := filepath.Join(dir, "earlier-link")
	if err := os.Symlink(earlier, link); err != nil {
		t.Fatal(err)
	}
	var events []Event
	ctx := context.Background()
	spec := Spec{Job: Job{Dir: job, Command: "sh train.sh", ResumeFrom: link}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	r, err := Launch(ctx, api, spec, WithEvents(func(e Event) { events = append(events, e) }), WithPoll(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Delete(ctx)
	if err := r.Start(ctx, Job{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := r.Follow(ctx, &out); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	got, err := r.Collect(ctx, results)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "resumed at step=7\n") {
		t.Errorf("the job's output: %q", out.String())
	}
	if rec := r.Record(); rec.ResumeFrom != earlier {
		t.Errorf("Record.ResumeFrom %q", rec.ResumeFrom)
	}
	sent := int64(len(script) + len("sh train.sh\n") + len("step=7\n") + len(model))
	checkGrowth(t, "upload", byKind(events, EventTransfer, StageUpload), sent, sent)
	checkGrowth(t, "download", byKind(events, EventTransfer, StageDownload), got.Bytes, got.Bytes)
	resumed := byKind(events, EventResumed)
	if len(resumed) != 1 || resumed[0].Dir != earlier || resumed[0].Files != 2 || resumed[0].Bytes != int64(len("step=7\n")+len(model)) ||
		resumed[0].Remote != jobctl.RunFile(r.Record().RunDir, jobctl.OutputsDir) {
		t.Errorf("resumed events %+v", resumed)
	}
	outputs := filepath.Join(results, jobctl.OutputsDir)
	for name, want := range map[string][]byte{"checkpoint.txt": []byte("step=8\n"), "sub/model.bin": model, "model.copy": model} {
		if b, err := os.ReadFile(filepath.Join(outputs, name)); err != nil || !bytes.Equal(b, want) {
			t.Errorf("collected %s: %d bytes, %v", name, len(b), err)
		}
	}
	if got.Outputs != 3 || !slices.Contains(got.Skipped, "outputs/latest") {
		t.Errorf("collected %+v", got)
	}
}

// A ResumeFrom that could not go up whole, or come back, is refused
// before any pod exists, naming the field.
func TestResumeFromIsChecked(t *testing.T) {
	api := emulatorAPI(t) // no pod runner: no pod is made
	dir := t.TempDir()
	job := filepath.Join(dir, "job")
	files(t, job, map[string][]byte{"train.sh": []byte("true\n")})
	mk := func(name string, contents map[string][]byte, link, to string) string {
		d := filepath.Join(dir, name)
		files(t, d, contents)
		if link != "" {
			if err := os.Symlink(to, filepath.Join(d, link)); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	small := map[string][]byte{"ckpt": []byte("step=1\n")}
	for _, c := range []struct {
		name, from, why string
		maxGB           float64
	}{
		{"missing", filepath.Join(dir, "nope"), "no such file", 0},
		{"a file", filepath.Join(job, "train.sh"), "is not a directory", 0},
		{"a link out", mk("out", small, "etc", "/etc"), "leads out of it", 0},
		{"a link up", mk("up", small, "parent", ".."), "leads out of it", 0},
		{"a dangling link", mk("dangling", small, "gone", "nothing"), "leads nowhere", 0},
		{"past the cap", mk("big", small, "", ""), "more than the results' cap", 1e-9},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := Spec{
				Job:     Job{Dir: job, Command: "sh train.sh", ResumeFrom: c.from},
				Rules:   podenv.Rules{Deadline: time.Now().Add(time.Hour)},
				Results: Results{MaxGB: c.maxGB},
			}
			_, err := Launch(context.Background(), api, spec)
			var fe *podenv.FieldError
			if !errors.As(err, &fe) || fe.Field != "Spec.Job.ResumeFrom" || !strings.Contains(fe.Reason, c.why) {
				t.Fatalf("Launch: %v, want Spec.Job.ResumeFrom refused: %s", err, c.why)
			}
		})
	}
	// A link that stays inside is fine.
	spec := Spec{
		RunID: "inside", Job: Job{Dir: job, Command: "sh train.sh", ResumeFrom: mk("inside", small, "latest", "ckpt")},
		Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)},
	}
	if err := spec.withDefaults().check(time.Now()); err != nil {
		t.Fatalf("a link inside refused: %v", err)
	}
}
