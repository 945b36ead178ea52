// Command launch runs a training job on a Runpod GPU pod that deletes itself
// when its purpose is over: see the README, or "launch -h".
//
// Without RUNPOD_API_KEY it runs everything on a local Runpod emulator (as
// root), so that
//
//	go run ./examples/launch run
//
// runs the built-in demo job end to end on a fresh machine.
package main

import (
	"os"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/launcher"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

func main() {
	// --local runs pods: each is this binary, re-executed as its init.
	localpod.PodInit()
	os.Exit(launcher.Main(os.Args[1:], os.Stdout, os.Stderr))
}
