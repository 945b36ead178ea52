package guard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A job that wrote its model and went silent is deleted by the stalled
// rule (on, with short durations) SnapshotWait after its stall snapshot
// was asked: a follow with WithEarlyResults foresees that delete and
// downloads the results before it, the checkpoint the job made on the
// request among them.
func TestAStalledJobsResultsAreDownloadedBeforeItsDelete(t *testing.T) {
	_, api := podRunner(t)
	dir := t.TempDir()
	job := writeJob(dir, `echo "the model" > "$OVERBRAINER_OUTPUTS/model"
echo "model written"
while [ ! -f "$OVERBRAINER_SNAPSHOT_REQUEST" ]; do sleep 0.2; done
echo "the checkpoint" > "$OVERBRAINER_OUTPUTS/ckpt"
sleep 600`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour),
		StallAfter: 3 * time.Second, SnapshotWait: 12 * time.Second, Interval: time.Second}}
	results := filepath.Join(dir, "results")
	var collected []string
	run, err := guard.Launch(ctx, api, spec, guard.WithPoll(200*time.Millisecond), guard.WithEarlyResults(results),
		guard.WithEvents(func(e guard.Event) {
			if e.Kind == guard.EventCollected {
				collected = append(collected, e.Dir)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Delete(context.Background())
	if err := run.Start(ctx, guard.Job{}); err != nil {
		t.Fatal(err)
	}
	_, err = run.Follow(ctx, nil)
	var gone *guard.PodGoneError
	if !errors.As(err, &gone) || gone.Rule() != watchdog.DeleteStalled {
		t.Fatalf("Follow: %v, want the pod gone by the stalled rule", err)
	}
	if len(collected) != 1 || collected[0] != results {
		t.Fatalf("collected %q before the delete, want once into %s", collected, results)
	}
	for name, want := range map[string]string{"model": "the model\n", "ckpt": "the checkpoint\n"} {
		b, err := os.ReadFile(filepath.Join(results, guard.OutputsDir, name))
		if err != nil || string(b) != want {
			t.Errorf("results' %s = %q, %v; want %q", name, b, err, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(results, "job.log")); err != nil || !strings.Contains(string(b), "model written") {
		t.Errorf("results' job.log = %q, %v", b, err)
	}
}
