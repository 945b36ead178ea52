package guard_test

import (
	"fmt"

	"github.com/overbrainer/overbrainer-go/guard"
)

// A program that prints lines skips the events that repeat, or draws them
// on one line of its own.
func ExampleEvent_Repeats() {
	for _, e := range []guard.Event{
		{Kind: guard.EventTransfer, Stage: guard.StageUpload, Bytes: 1_500_000, Total: 3_000_000},
		{Kind: guard.EventTransfer, Stage: guard.StageUpload, Bytes: 3_000_000, Total: 3_000_000},
		{Kind: guard.EventUploaded, Dir: "./job", Remote: "/workspace/overbrainer/RUN/job"},
		{Kind: guard.EventTransfer, Stage: guard.StageDownload, Bytes: 2_048, Total: -1},
	} {
		fmt.Println(e.Repeats(), e.Kind)
	}
	// Output:
	// true transfer
	// true transfer
	// false uploaded
	// true transfer
}
