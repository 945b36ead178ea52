package guard_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
)

// A command on the run's pod without a terminal, as a notebook runs one:
// its output, and its exit status out of the error. On a terminal,
// podssh.AttachTerminal(os.Stdin, &opts) makes it an interactive shell.
func ExampleRun_Shell() {
	api, dir, done := emulator()
	defer done()
	job := writeJob(dir, "echo training done")
	ctx := context.Background()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	run, err := guard.Launch(ctx, api, spec)
	if err != nil {
		log.Fatal(err)
	}
	defer run.Delete(ctx)
	err = run.Shell(ctx, podssh.ShellOptions{Command: "echo on the pod; exit 3", Stdout: os.Stdout})
	status, _ := podssh.ExitStatus(err)
	fmt.Println("exit status", status)
	// Output:
	// on the pod
	// exit status 3
}
