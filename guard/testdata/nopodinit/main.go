// A program that uses the emulator's pod runner without calling
// localpod.PodInit first in main: Launch must fail with an error that
// says what to call (TestLaunchWithoutPodInitSaysWhatToCall).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

func main() {
	srv := runpodtest.NewServer(runpodtest.WithPodRunner())
	defer srv.Close()
	api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	job, err := os.MkdirTemp("", "nopodinit-")
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	defer os.RemoveAll(job)
	if err := os.WriteFile(filepath.Join(job, "train.sh"), []byte("echo hi\n"), 0o644); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	run, err := guard.Launch(ctx, api, spec)
	if err == nil {
		_, _ = run.Delete(ctx)
		fmt.Println("launched")
		return
	}
	fmt.Println(err)
	os.Exit(1)
}
