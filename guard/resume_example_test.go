package guard_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// A run that continues from an earlier run's collected outputs: they are
// in $OVERBRAINER_OUTPUTS before the job starts, and come back with what
// the job adds.
func ExampleJob_resumeFrom() {
	api, dir, done := emulator()
	defer done()
	job := writeJob(dir, `read -r step < "$OVERBRAINER_OUTPUTS/step"; echo "resuming at step $step"; echo $((step + 1)) > "$OVERBRAINER_OUTPUTS/step"`)
	earlier := filepath.Join(dir, "earlier", "outputs") // e.g. a Collect's dir/outputs
	if err := os.MkdirAll(earlier, 0o700); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(earlier, "step"), []byte("41\n"), 0o600); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh", ResumeFrom: earlier}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	run, err := guard.Launch(ctx, api, spec, guard.WithPoll(500*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer run.Delete(ctx)
	if err := run.Start(ctx, guard.Job{}); err != nil {
		log.Fatal(err)
	}
	var output strings.Builder
	if _, err := run.Follow(ctx, &output); err != nil {
		log.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	if _, err := run.Collect(ctx, results); err != nil {
		log.Fatal(err)
	}
	step, _ := os.ReadFile(filepath.Join(results, "outputs", "step"))
	fmt.Printf("%soutputs/step %q\n", output.String(), step)
	// Output:
	// resuming at step 41
	// outputs/step "42\n"
}
