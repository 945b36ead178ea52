package jobctl_test

import (
	"fmt"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/jobctl"
)

// A poll's output: the job's state, the verdict, then new output.
func ExampleParsePoll() {
	out := "ob1 4242 - 1 0 120 1790000000 cost -\nready\nstep 7/10 loss 0.300\n"
	st, log, err := jobctl.ParsePoll([]byte(out))
	if err != nil {
		panic(err)
	}
	fmt.Println("started:", st.Started(), "ended:", st.Ended(), "verdict:", st.Verdict, "snapshot asked:", st.Request)
	fmt.Printf("%s", log)
	// Output:
	// started: true ended: false verdict: ready snapshot asked: cost
	// step 7/10 loss 0.300
}
