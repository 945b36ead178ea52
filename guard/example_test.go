package guard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The whole cycle on the local emulator, whose pods really run here (as
// root, with sshd and curl): launch, start, follow, collect, delete. The
// emulator runs each pod's init as this very program, so a program of
// its own calls localpod.PodInit first thing in main, as here (a test
// binary: runpodtest.Main in TestMain). On Runpod, api is
// runpod.New(os.Getenv("RUNPOD_API_KEY")) and the rest is the same.
func ExampleLaunch() {
	localpod.PodInit() // first in main: it returns at once but in a pod
	srv := runpodtest.NewServer(runpodtest.WithPodRunner())
	defer srv.Close()
	api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		log.Fatal(err)
	}

	// The job: a directory uploaded to the pod, and the command run there.
	dir, err := os.MkdirTemp("", "example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	job, results := filepath.Join(dir, "job"), filepath.Join(dir, "results")
	script := "echo step 1; echo model > \"$OVERBRAINER_OUTPUTS/model\"; echo training done\n"
	if err := os.Mkdir(job, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(job, "train.sh"), []byte(script), 0o644); err != nil {
		log.Fatal(err)
	}

	// The first event of each main kind, in the order the run meets them.
	seen := map[guard.EventKind]bool{}
	events := guard.WithEvents(func(e guard.Event) {
		switch e.Kind {
		case guard.EventCreated, guard.EventRunning, guard.EventVerdict, guard.EventUploaded, guard.EventJobStarted,
			guard.EventJobEnded, guard.EventCollected, guard.EventDeleted, guard.EventSecretDeleted:
			if !seen[e.Kind] {
				seen[e.Kind] = true
				fmt.Println(e.Kind)
			}
		}
	})

	ctx := context.Background()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	run, err := guard.Launch(ctx, api, spec, events, guard.WithPoll(500*time.Millisecond))
	if err != nil {
		log.Fatal(err) // the pod, if one was made, is deleted already
	}
	// From here the pod's watchdog deletes it by its rules, even if this
	// program dies; Delete at the end is the normal way out.
	if err := run.Start(ctx, guard.Job{}); err != nil {
		log.Fatal(err)
	}
	var output strings.Builder
	end, err := run.Follow(ctx, &output)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := run.Collect(ctx, results); err != nil {
		log.Fatal(err)
	}
	res, err := run.Delete(ctx)
	if err != nil {
		log.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(output.String()), "\n")
	model, _ := os.ReadFile(filepath.Join(results, "outputs", "model"))
	fmt.Printf("job ended: exit code %d; last line %q; outputs/model %q; pod %s\n", end.ExitCode, lines[len(lines)-1], model, res)
	// Output:
	// created
	// running
	// verdict
	// uploaded
	// job_started
	// job_ended
	// collected
	// deleted
	// secret_deleted
	// job ended: exit code 0; last line "training done"; outputs/model "model\n"; pod deleted
}

// A run taken up in another process from its saved Record: a notebook's
// next cell, a launcher started again. WithSave keeps the file up to date
// at every change, so a process killed at any moment leaves one.
func ExampleAttach() {
	api, dir, done := emulator()
	defer done()
	job := writeJob(dir, "echo training done")
	file := filepath.Join(dir, "run.json")
	save := guard.WithSave(func(r guard.Record) error { return r.Save(file) })

	ctx := context.Background()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	run, err := guard.Launch(ctx, api, spec, save, guard.WithPoll(500*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	run.Detach() // this process is done with it: the watchdog guards the pod

	// Another process: the Record file is all it needs of the first one.
	rec, err := guard.LoadRecord(file)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("saved:", rec.Phase, rec.PodName == podenv.PodNamePrefix+rec.ID)
	again, err := guard.Attach(ctx, api, rec, save)
	if err != nil {
		log.Fatal(err)
	}
	if err := again.Start(ctx, guard.Job{}); err != nil {
		log.Fatal(err)
	}
	end, err := again.Follow(ctx, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := again.Collect(ctx, filepath.Join(dir, "results")); err != nil {
		log.Fatal(err)
	}
	if _, err := again.Delete(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("job ended: exit code", end.ExitCode)
	fmt.Println("pod", again.Record().PodID == rec.PodID, again.Record().Phase)
	// Output:
	// saved: detached true
	// job ended: exit code 0
	// pod true done
}

// A Spec that cannot be armed fails before any pod exists, with a
// *podenv.FieldError for each bad field.
func ExampleLaunch_badSpec() {
	srv := runpodtest.NewServer() // no pod runner: no pod is made
	defer srv.Close()
	api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		log.Fatal(err)
	}
	spec := guard.Spec{RunID: "my run", Job: guard.Job{Dir: "/nonexistent", Command: "python train.py"}}
	_, err = guard.Launch(context.Background(), api, spec)
	var fe *podenv.FieldError
	fmt.Println(errors.As(err, &fe), fe.Field)
	fmt.Println(err)
	fmt.Println(len(srv.Pods()), "pods")
	// Output:
	// true Spec.RunID
	// Spec.RunID: "my run" is not a run id (1 to 64 of [A-Za-z0-9_-])
	// Spec.Job.Dir: /nonexistent is not a directory
	// Spec.Deadline: is not set, and Keep is not: without a deadline nothing would end a hung job
	// 0 pods
}

// Check refuses what Launch would refuse, before anything is asked of the
// API: a program checks its input with it before it spends anything.
func ExampleCheck() {
	spec := guard.Spec{
		RunID: "20261206-093000-ab12",
		Job:   guard.Job{Dir: os.TempDir(), Command: "python train.py"},
		Rules: guard.Rules{Deadline: time.Now().Add(2 * time.Hour), MaxCostUSD: -1},
	}
	err := guard.Check(spec)
	var fe *podenv.FieldError
	fmt.Println(errors.As(err, &fe), fe.Field)
	spec.MaxCostUSD = 5
	fmt.Println(guard.Check(spec))
	// Output:
	// true Spec.MaxCostUSD
	// <nil>
}

// A pod found gone says how, for errors.Is and errors.As.
func ExamplePodGoneError() {
	var err error = &guard.PodGoneError{PodID: "abc123", Status: runpod.StatusExited, DeleteReason: watchdog.DeleteDeadline}
	var gone *guard.PodGoneError
	fmt.Println(errors.Is(err, guard.ErrPodGone), errors.As(err, &gone) && gone.DeleteReason == watchdog.DeleteDeadline)
	fmt.Println(err)
	// Output:
	// true true
	// pod abc123 is EXITED; its watchdog was deleting it (deadline)
}

// emulator starts the local Runpod emulator with its pod runner (root
// only) and returns a client of it, a fresh directory, and a function that
// closes the one and removes the other.
func emulator() (*runpod.Client, string, func()) {
	dir, err := os.MkdirTemp("", "guard-example-")
	if err != nil {
		log.Fatal(err)
	}
	srv := runpodtest.NewServer(runpodtest.WithPodRunner())
	api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		log.Fatal(err)
	}
	return api, dir, func() {
		srv.Close()
		os.RemoveAll(dir)
	}
}

// writeJob makes the job directory dir/job, whose train.sh is script.
func writeJob(dir, script string) string {
	job := filepath.Join(dir, "job")
	err := os.Mkdir(job, 0o755)
	if err == nil {
		err = os.WriteFile(filepath.Join(job, "train.sh"), []byte(script+"\n"), 0o644)
	}
	if err != nil {
		log.Fatal(err)
	}
	return job
}
