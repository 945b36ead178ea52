package guard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// A run whose pod's host fails goes on on a new pod, made once the lost
// one is gone, from the outputs pulled while the job ran.
func ExampleRelaunch() {
	srv, api, dir, job := countingWorld()
	defer srv.Close()
	defer os.RemoveAll(dir)
	ctx := context.Background()
	pulls := filepath.Join(dir, "pulls")
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)},
		Recover: guard.Recovery{PullEvery: 500 * time.Millisecond, PullDir: pulls}}
	opts := []guard.Option{guard.WithPoll(200 * time.Millisecond)}
	run, err := guard.Launch(ctx, api, spec, opts...)
	if err != nil {
		log.Fatal(err)
	}
	startThenFail(ctx, srv, run, pulls)
	_, err = run.Follow(ctx, io.Discard)
	fmt.Println("lost:", errors.Is(err, guard.ErrPodGone), "recoverable:", guard.Recoverable(err))

	spec.Job.ResumeFrom = guard.PulledOutputs(pulls)
	run, err = guard.Relaunch(ctx, api, run.Record(), spec, "host failed", opts...)
	if err != nil {
		log.Fatal(err)
	}
	if err := run.Start(ctx, guard.Job{}); err != nil {
		log.Fatal(err)
	}
	end, err := run.Follow(ctx, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job ended: exit code", end.ExitCode)
	results := filepath.Join(dir, "results")
	if _, err := run.Collect(ctx, results); err != nil {
		log.Fatal(err)
	}
	if _, err := run.Delete(ctx); err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(results, "outputs", "started_at"))
	from, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	fmt.Println("second pod started from step 2 or later:", from >= 2)
	for _, a := range run.Record().Attempts {
		fmt.Printf("pod %s, ended %q\n", a.Outcome, a.Ended)
	}
	// Output:
	// lost: true recoverable: true
	// job ended: exit code 0
	// second pod started from step 2 or later: true
	// pod created, ended "host failed"
	// pod created, ended ""
}

// pulledStep is the step in the newest pull, 0 without one.
func pulledStep(pulls string) int {
	b, err := os.ReadFile(filepath.Join(guard.PulledOutputs(pulls), "step"))
	if err != nil || guard.PulledOutputs(pulls) == "" {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// With Spec.Recover, Follow itself takes the job up on a new pod when
// its pod's host fails, from the outputs pulled while it ran.
func ExampleSpec_recover() {
	srv, api, dir, job := countingWorld()
	defer srv.Close()
	defer os.RemoveAll(dir)
	ctx := context.Background()
	pulls := filepath.Join(dir, "pulls")
	spec := guard.Spec{
		Job:     guard.Job{Dir: job, Command: "sh train.sh"},
		Rules:   podenv.Rules{Deadline: time.Now().Add(time.Hour), MaxCostUSD: 1},
		Recover: guard.Recovery{Times: 2, PullEvery: 500 * time.Millisecond, PullDir: pulls},
	}
	said := func(e guard.Event) {
		if e.Kind == guard.EventRecovering {
			fmt.Printf("recovering (%d of %d)\n", e.N, e.Of)
		}
	}
	run, err := guard.Launch(ctx, api, spec, guard.WithPoll(200*time.Millisecond), guard.WithEvents(said))
	if err != nil {
		log.Fatal(err)
	}
	startThenFail(ctx, srv, run, pulls)
	end, err := run.Follow(ctx, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job ended: exit code", end.ExitCode)
	if _, err := run.Collect(ctx, filepath.Join(dir, "results")); err != nil {
		log.Fatal(err)
	}
	if _, err := run.Delete(ctx); err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "results", "outputs", "started_at"))
	from, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	fmt.Println("second pod started from step 2 or later:", from >= 2)
	fmt.Println("pods:", len(run.Record().Attempts), "billed within the cap:", srv.TotalUSD() <= spec.MaxCostUSD)
	// Output:
	// recovering (1 of 2)
	// job ended: exit code 0
	// second pod started from step 2 or later: true
	// pods: 2 billed within the cap: true
}

// countingWorld is an emulator with a pod runner, its client, a
// temporary directory and in it a job that counts, keeping its count in
// its outputs; started from a count it finds there, it counts two more
// and ends.
func countingWorld() (*runpodtest.Server, *runpod.Client, string, string) {
	srv := runpodtest.NewServer(runpodtest.WithPodRunner())
	api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "guard-example-")
	if err != nil {
		log.Fatal(err)
	}
	job := writeJob(dir, `n=$(cat "$OVERBRAINER_OUTPUTS/step" 2>/dev/null || echo 0)
echo "$n" > "$OVERBRAINER_OUTPUTS/started_at"
end=1000000; [ "$n" -gt 0 ] && end=$((n + 2))
while [ "$n" -lt "$end" ]; do sleep 0.5; n=$((n+1)); echo "$n" > "$OVERBRAINER_OUTPUTS/step"; done`)
	return srv, api, dir, job
}

// startThenFail starts the run's job and fails its pod's host once a
// pull in pulls holds step 2 or later.
func startThenFail(ctx context.Context, srv *runpodtest.Server, run *guard.Run, pulls string) {
	if err := run.Start(ctx, guard.Job{}); err != nil {
		log.Fatal(err)
	}
	go func(pod string) {
		for pulledStep(pulls) < 2 {
			time.Sleep(100 * time.Millisecond)
		}
		if err := srv.FailHost(pod); err != nil {
			log.Print(err)
		}
	}(run.Record().PodID)
}
