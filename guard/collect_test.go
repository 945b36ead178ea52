package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// collectAfter runs the harness's job to its end and collects.
func collectAfter(t *testing.T, h *harness, spec Spec) (*Run, Collected, error) {
	t.Helper()
	r := h.mustStart(spec)
	if _, err := r.Follow(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	got, err := r.Collect(context.Background(), t.TempDir())
	return r, got, err
}

func retrievedPut(h *harness) bool {
	return slices.ContainsFunc(h.pod.allPuts(), func(p putCall) bool { return strings.HasSuffix(p.Name, watchdog.Retrieved) })
}

// A mismatch with the pod's manifest downloads again; a second one, like
// the size cap, leaves the pod (the only copy) to its retrieve grace.
func TestCollectChecksAndCaps(t *testing.T) {
	mismatch := &podssh.ChecksumError{Names: []string{"outputs/model"}}
	for _, c := range []struct {
		name      string
		errs      []error
		downloads int
		wantErr   error
	}{
		{"one mismatch", []error{mismatch}, 2, nil},
		{"two mismatches", []error{mismatch, mismatch}, 2, podssh.ErrChecksum},
		{"past the cap", []error{&podssh.TooLargeError{MaxBytes: 1, Name: "outputs/big"}}, 1, podssh.ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, look{st: ready}, look{st: running}, look{st: exited(0)})
			h.pod.downloadErrs = c.errs
			h.pod.downloaded = podssh.Extracted{Files: 1, PerName: map[string]int{"outputs": 1}}
			_, _, err := collectAfter(t, h, h.spec())
			if len(h.pod.downloads) != c.downloads {
				t.Errorf("%d downloads, want %d", len(h.pod.downloads), c.downloads)
			}
			if c.wantErr == nil {
				if err != nil || !retrievedPut(h) || len(h.eventsOf(EventWarning)) != 1 {
					t.Fatalf("Collect: %v; retrieved %v; warnings %v", err, retrievedPut(h), h.eventsOf(EventWarning))
				}
				return
			}
			if !errors.Is(err, c.wantErr) || !errors.Is(err, ErrCollect) {
				t.Fatalf("Collect: %v, want a CollectError wrapping %v", err, c.wantErr)
			}
			if got := h.lastSaved().Phase; got != PhaseLeftToPod || retrievedPut(h) {
				t.Errorf("phase %s, retrieved %v: want the pod left, unretrieved", got, retrievedPut(h))
			}
		})
	}
}

// The Spec's results policy reaches the download, and RequireOutputs fails
// a run without outputs (its pod deleted: nothing is left to keep).
func TestCollectPolicy(t *testing.T) {
	h := newHarness(t, look{st: ready}, look{st: running}, look{st: exited(0)})
	spec := h.spec()
	spec.Results = Results{MaxGB: 0.5, Exclude: []string{"ckpt-*"}, RequireOutputs: true}
	h.pod.downloaded = podssh.Extracted{Files: 2, PerName: map[string]int{"job.log": 1, "watchdog.log": 1}}
	r, _, err := collectAfter(t, h, spec)
	if !errors.Is(err, ErrNoOutputs) {
		t.Fatalf("Collect without outputs: %v, want ErrNoOutputs", err)
	}
	q := h.pod.downloads[0]
	if q.MaxBytes != 512<<20 || !slices.Equal(q.Exclude, []string{"ckpt-*"}) || q.RemoteDir != r.Record().RunDir {
		t.Errorf("download request %+v", q)
	}
	if got := h.lastSaved(); got.Phase != PhaseFailed || got.Results.MaxGB != 0.5 {
		t.Errorf("phase %s, results %+v: want failed, the spec's kept", got.Phase, got.Results)
	}
	if !slices.Contains(h.api.methods(), "DeletePod") {
		t.Error("the pod of a run without outputs was not deleted")
	}

	h = newHarness(t, look{st: ready}, look{st: running}, look{st: exited(0)})
	h.pod.downloaded = podssh.Extracted{Files: 1, PerName: map[string]int{"outputs": 1}}
	spec = h.spec()
	if _, got, err := collectAfter(t, h, spec); err != nil || got.Outputs != 1 || h.pod.downloads[0].MaxBytes != DefaultMaxResultsGB<<30 {
		t.Fatalf("Collect = %+v, %v; request %+v", got, err, h.pod.downloads[0])
	}
}

func TestLaunchRefusesABadResultsPolicy(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.Results = Results{MaxGB: -1, Exclude: []string{"a/b", ""}}
	_, err := h.launch(context.Background(), spec)
	if got := fields(err); !slices.Equal(got, []string{"Spec.Results.MaxGB", "Spec.Results.Exclude", "Spec.Results.Exclude"}) {
		t.Fatalf("fields %v (%v)", got, err)
	}
}

// flipper corrupts the downloads' streams (all but the last n allowed
// through clean) the way a faulty link or disk would: one byte of a
// file's content, after the pod made its manifest.
type flipper struct {
	corrupt int // how many downloads to corrupt
	seen    int
}

func (f *flipper) tap(r io.Reader) io.Reader {
	f.seen++
	if f.seen > f.corrupt {
		return r
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return io.MultiReader(bytes.NewReader(b), errReader{err})
	}
	return bytes.NewReader(bytes.Replace(b, []byte("the model"), []byte("the MODEL"), 1))
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// On the emulator, a file corrupted in transit is caught: twice, and the
// pod is left with its results; once, and the second download is clean.
func TestCorruptedDownloadIsCaught(t *testing.T) {
	api, dir, job := emulatorJob(t, `echo "the model" > "$OVERBRAINER_OUTPUTS/model"`+"\n")
	f := &flipper{corrupt: 3}
	dial := withDial(func(ctx context.Context, t podssh.Target) (conn, error) {
		c, err := podssh.Dial(ctx, t)
		if err != nil {
			return nil, err
		}
		return sshConn{Conn: c, tap: f.tap}, nil
	})
	var warnings []error
	events := WithEvents(func(e Event) {
		if e.Kind == EventWarning {
			warnings = append(warnings, e.Err)
		}
	})
	ctx := context.Background()
	spec := Spec{Job: Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	r, err := Launch(ctx, api, spec, dial, events, WithPoll(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Delete(ctx)
	if err := r.Start(ctx, Job{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Follow(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	_, err = r.Collect(ctx, results)
	var ce *podssh.ChecksumError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCollect) || !slices.Equal(ce.Names, []string{"outputs/model"}) {
		t.Fatalf("Collect of a stream corrupted twice: %v", err)
	}
	if rec := r.Record(); rec.Phase != PhaseLeftToPod {
		t.Fatalf("phase %s, want the pod left to its watchdog", rec.Phase)
	}
	// Taken up again: the third download is corrupted, the fourth is not.
	r, err = Attach(ctx, api, r.Record(), dial, events, WithPoll(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Delete(ctx)
	if _, err := r.Collect(ctx, results); err != nil {
		t.Fatalf("Collect after one corrupted download: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(results, "outputs", "model")); string(b) != "the model\n" {
		t.Errorf("outputs/model = %q", b)
	}
	if f.seen != 4 || len(warnings) < 2 || !errors.Is(warnings[len(warnings)-1], podssh.ErrChecksum) {
		t.Errorf("%d downloads, warnings %v", f.seen, warnings)
	}
}

// What a pod wrote reaches a terminal escaped, whichever error carries it
// (an event's words are the launcher's: see its TestEventTextEscapes).
func TestPodTextIsEscaped(t *testing.T) {
	evil := "x\x1b]0;owned\x07\x1b[2K\u009b"
	for _, s := range []string{
		(&VerdictError{Verdict: watchdog.Verdict{Failed: true, Reason: evil}}).Error(),
		(&PodGoneError{PodID: "p", Detail: evil, DeleteReason: watchdog.DeleteReason(evil)}).Error(),
		(&CollectError{&podssh.CommandError{Status: 1, Stderr: evil}}).Error(),
	} {
		if strings.ContainsAny(s, "\x1b\x07\u009b") || !strings.Contains(s, `\x1b]0;owned`) {
			t.Errorf("%q is not escaped", s)
		}
	}
}

// On the emulator, a download while the job runs gets the results so far:
// its log and the watchdog's grow all the while, which is no corruption.
func TestDownloadWhileTheLogsGrow(t *testing.T) {
	// A line every few milliseconds: the log grows between the pod's
	// checksums and its tar.
	api, dir, job := emulatorJob(t, `echo "the model" > "$OVERBRAINER_OUTPUTS/model"
i=0
while :; do i=$((i + 1)); echo "line $i"; sleep 0.002; done
`)
	ctx := context.Background()
	spec := Spec{Job: Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	r, err := Launch(ctx, api, spec, WithPoll(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Delete(ctx)
	if err := r.Start(ctx, Job{}); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	for try := 0; try < 3; try++ {
		got, err := r.CollectSoFar(ctx, results)
		if err != nil {
			t.Fatalf("CollectSoFar %d while the job prints: %v", try, err)
		}
		if got.Outputs != 1 {
			t.Fatalf("CollectSoFar %d: %+v, want the one output", try, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(results, "outputs", "model")); string(b) != "the model\n" {
		t.Errorf("outputs/model = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(results, jobctl.JobLog)); err != nil || fi.Size() == 0 {
		t.Errorf("the job's log: %v, %v", fi, err)
	}
}

// emulatorJob is an emulator client and a job directory holding train.sh,
// in dir.
func emulatorJob(t *testing.T, script string) (api *runpod.Client, dir, job string) {
	t.Helper()
	shtest.NeedPods(t, localpod.Check())
	shtest.NeedTool(t, "sha256sum")
	api = emulatorAPI(t, runpodtest.WithPodRunner())
	dir = t.TempDir()
	job = filepath.Join(dir, "job")
	if err := os.Mkdir(job, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(job, "train.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return api, dir, job
}
