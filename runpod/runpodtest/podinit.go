package runpodtest

import (
	"errors"
	"os"
	"sync/atomic"
)

// PodInit makes this binary able to run pods: the pod runner (WithPodRunner)
// starts each pod's init as this very binary, re-executed, and PodInit is
// where that process becomes the init. A binary whose fake runs pods calls
// it first thing in main (a test binary, in TestMain), as docker's
// reexec.Init; it returns at once in any other process.
func PodInit() {
	podInitCalled.Store(true)
	podInitHere()
}

// podInitCalled says PodInit ran: the runner starts no pod before, since
// the re-executed binary would run its own main (a test binary, its tests)
// as the pod's PID 1.
var podInitCalled atomic.Bool

var errNoPodInit = errors.New("runpodtest: the pod runner re-executes this binary as each pod's init: call runpodtest.PodInit first in main (or TestMain)")

// M is the part of *testing.M that Main uses.
type M interface{ Run() int }

// Main is a TestMain for a package whose tests run pods: PodInit, then
// the tests. Use it as func TestMain(m *testing.M) { runpodtest.Main(m) }.
func Main(m M) {
	PodInit()
	os.Exit(m.Run())
}
