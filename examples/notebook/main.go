package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/demo"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// What every cell starts from: the directory where one cell leaves the
// next the run's Record (and the job, and the results), and the API.
var dir, record, apiKey, apiURL = "overbrainer-notebook", "overbrainer-notebook/record.json", os.Getenv("RUNPOD_API_KEY"), cmp.Or(os.Getenv(podenv.APIURLEnv), runpod.DefaultBaseURL)

// ctx ends on Ctrl-C (a notebook's interrupt): Launch then deletes its
// pod, and the other calls leave the pod to its watchdog.
var ctx, _ = signal.NotifyContext(context.Background(), os.Interrupt)

// opts are every cell's: say what the run does, and save its Record at
// each change, so that a cell killed at any moment leaves one.
var opts = []guard.Option{guard.WithEvents(say), guard.WithSave(func(r guard.Record) error { return r.Save(record) })}

// stop ends what main started (an emulator) before the program exits.
var stop = func() {}

// main runs the cells named on its command line (launch, start, follow,
// remove), by default all of them in order, as a notebook's "run all"
// would. Without RUNPOD_API_KEY it starts the local emulator, whose pods
// live as long as this process: then the cells run here, each from the
// Record file alone, as if it were a program of its own.
func main() {
	// The emulator's pods are this binary, re-executed as their init.
	localpod.PodInit()
	if apiKey == "" {
		check(localpod.Check())
		srv := runpodtest.NewServer(runpodtest.WithPodRunner())
		stop, apiKey, apiURL = srv.Close, srv.APIKey(), srv.BaseURL()
	}
	cells := map[string]func(){"launch": launch, "start": start, "follow": follow, "remove": remove}
	for _, name := range strings.Fields(cmp.Or(strings.Join(os.Args[1:], " "), "launch start follow remove")) {
		if cells[name] == nil {
			check(fmt.Errorf("no cell %q: the cells are launch, start, follow and remove", name))
		}
		cells[name]()
	}
	stop()
}

// client is the API of apiKey, made anew by each cell. It first makes sure
// the API answers, so that a cell whose API is gone (a local-server
// stopped) fails within seconds, not after Attach waited 20 minutes for
// the pod.
func client() *runpod.Client {
	c := must(runpod.New(apiKey, runpod.WithBaseURL(apiURL)))
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := c.ListPods(pctx, runpod.ListPodsOptions{Name: podenv.PodName("preflight")}); err != nil {
		check(fmt.Errorf("the Runpod API at %s does not answer (an emulator must outlive the cells: is its local-server still running?): %w", apiURL, err))
	}
	return c
}

// say prints what the run does (guard says it in values: the words are
// the caller's), but for the events that repeat (the looks, the job's
// output, the transfers' counts): a cell's output is not redrawn.
func say(e guard.Event) {
	if !e.Repeats() {
		fmt.Println(strings.TrimSuffix(fmt.Sprint("# pod ", e.PodID, " ", e.Kind, ": ", e.Err), ": <nil>"))
	}
}

// must ends the cell, and the program, on an error, with status 1.
func must[T any](v T, err error) T {
	if err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "notebook:", err)
		os.Exit(1)
	}
	return v
}

func check(err error) { must(0, err) }

// Cell 1: launch a pod for the demo job (its Record is saved on the way),
// and leave it to its watchdog until the next cell attaches.
func launch() {
	check(demo.WriteTo(dir + "/job"))
	must(guard.Launch(ctx, client(), guard.Spec{Job: guard.Job{Dir: dir + "/job", Command: demo.Command}, Rules: guard.Rules{Deadline: time.Now().Add(time.Hour)}}, opts...)).Detach()
}

// Cell 2: start the job the Record names, and leave it running. Each cell
// after the first rebuilds the run from the saved Record.
func start() {
	run := must(guard.Attach(ctx, client(), must(guard.LoadRecord(record)), opts...))
	check(run.Start(ctx, guard.Job{}))
	run.Detach()
}

// Cell 3: print the job's output until it ends, then collect the results
// (which tells the watchdog the pod may go).
func follow() {
	run := must(guard.Attach(ctx, client(), must(guard.LoadRecord(record)), opts...))
	end := must(run.Follow(ctx, os.Stdout))
	must(run.Collect(ctx, dir+"/results"))
	run.Close()
	check(end.Err())
}

// Cell 4: delete the pod and its secret. Remove needs no connection: once
// the results were collected the watchdog may have deleted the pod
// already, and a pod already gone is no error.
func remove() {
	_, _, err := guard.Remove(ctx, client(), must(guard.LoadRecord(record)), false, opts...)
	check(err)
}
