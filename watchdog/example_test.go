package watchdog_test

import (
	"fmt"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A client reads .pod/watchdog (watchdog.VerdictFile) until it holds a
// verdict, then either follows the run or reports why the pod is going.
func ExampleParseVerdict() {
	for _, content := range []string{"", "ready\n", "failed http_401\n", "failed bootstrap: host_key_mismatch\n", "paused\n"} {
		v := watchdog.ParseVerdict(content)
		switch {
		case v.Ready:
			fmt.Println("guarded:", v)
		case v.Failed && v.Bootstrap:
			fmt.Println("the bootstrap failed:", v.Reason)
		case v.Failed:
			fmt.Println("the watchdog cannot use the pod's key:", v.Reason)
		case v.Other != "":
			fmt.Printf("an unknown verdict %q\n", v.Other)
		default:
			fmt.Println("no verdict yet")
		}
	}
	// Output:
	// no verdict yet
	// guarded: ready
	// the watchdog cannot use the pod's key: http_401
	// the bootstrap failed: host_key_mismatch
	// an unknown verdict "paused"
}
