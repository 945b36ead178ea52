package runpodtest

import (
	"os"

	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// M is the part of *testing.M that Main uses.
type M interface{ Run() int }

// Main is a TestMain for a package whose tests run pods (WithPodRunner):
// localpod.PodInit, then the tests. Use it as
//
//	func TestMain(m *testing.M) { runpodtest.Main(m) }
func Main(m M) {
	localpod.PodInit()
	os.Exit(m.Run())
}
