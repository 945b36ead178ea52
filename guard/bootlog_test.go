package guard_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The bootstrap's and the watchdog's lines reach the pod's log stream (the
// container's output, as Runpod's console shows it), and Collect brings
// the bootstrap's log back next to the watchdog's, outside the outputs.
func TestBootAndWatchdogLinesReachTheLogStreamAndCollect(t *testing.T) {
	srv, api := podRunner(t)
	dir := t.TempDir()
	job := writeJob(dir, `echo "the model" > "$OVERBRAINER_OUTPUTS/model"`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := guard.Launch(ctx, api, guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}},
		guard.WithPoll(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Delete(context.Background())

	// The stream, from its start, until it shows the watchdog's probe.
	want := []string{"overbrainer bootstrap: claimed ", "overbrainer bootstrap: ready; handing the pod to the watchdog",
		" " + watchdog.KindStart + " deadline=", " probe result=ready"}
	var lines []string
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	err = api.StreamPodLogs(sctx, r.Record().PodID, runpod.LogOptions{Tail: 5000}, func(l runpod.LogLine) error {
		lines = append(lines, l.Line)
		if strings.Contains(l.Line, " probe result=") {
			return io.EOF
		}
		return nil
	})
	scancel()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("the log stream ended with %v before the watchdog's probe:\n%s", err, strings.Join(lines, "\n"))
	}
	stream := strings.Join(lines, "\n")
	for _, w := range want {
		if !strings.Contains(stream, w) {
			t.Errorf("the log stream lacks %q:\n%s", w, stream)
		}
	}
	if key := srv.PodKey(r.Record().PodID); key != "" && strings.Contains(stream, key) {
		t.Error("the pod's key is in its log stream")
	}

	if err := r.Start(ctx, guard.Job{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Follow(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	got, err := r.Collect(ctx, results)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(results, filepath.FromSlash(bootstrap.Log)))
	if err != nil || !strings.Contains(string(b), "overbrainer bootstrap: ready; handing the pod to the watchdog\n") {
		t.Errorf("collected %s = %q, %v", bootstrap.Log, b, err)
	}
	if got.Outputs != 1 {
		t.Errorf("%d outputs, want 1 (the model, not the logs)", got.Outputs)
	}
}

// podRunner is an emulator that runs its pods' commands, and a client of it.
func podRunner(t *testing.T) (*runpodtest.Server, *runpod.Client) {
	t.Helper()
	shtest.NeedPods(t, localpod.Check())
	srv := runpodtest.NewTestServer(t, runpodtest.WithPodRunner())
	api := checkedfake.Client(t, srv)
	return srv, api
}
