package localpod

import (
	"errors"
	"sync/atomic"
)

// PodInit makes this binary able to run pods: Start runs each pod's init
// as this very binary, re-executed, and PodInit is where that process
// becomes the init. A binary that runs local pods (runpodtest's pod
// runner, the launcher's --local) calls it first thing in main (a test
// binary, in TestMain: runpodtest.Main does), as docker's reexec.Init; it
// returns at once in any other process.
func PodInit() {
	podInitCalled.Store(true)
	podInitHere()
}

// podInitCalled says PodInit ran: Start starts no pod before, since the
// re-executed binary would run its own main (a test binary, its tests) as
// the pod's PID 1.
var podInitCalled atomic.Bool

var errNoPodInit = errors.New("localpod: the pod runner re-executes this binary as each pod's init: call localpod.PodInit first in main (or runpodtest.Main in TestMain)")
