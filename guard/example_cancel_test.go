package guard_test

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// A job stopped at once, without a checkpoint: what it wrote so far is
// collected, then the pod is deleted.
func ExampleRun_Cancel() {
	api, dir, done := emulator()
	defer done()
	job := writeJob(dir, "echo started > \"$OVERBRAINER_OUTPUTS/log\"; sleep 600")
	ctx := context.Background()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	run, err := guard.Launch(ctx, api, spec, guard.WithPoll(500*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	if err := run.Start(ctx, guard.Job{}); err != nil {
		log.Fatal(err)
	}
	res, err := run.Cancel(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res)
	fmt.Println("job cancelled:", run.End().How == guard.HowCancelled)
	if _, err := run.Collect(ctx, filepath.Join(dir, "results")); err != nil {
		log.Fatal(err)
	}
	deleted, err := run.Delete(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pod", deleted)
	// Output:
	// cancelled
	// job cancelled: true
	// pod deleted
}
