package jobctl_test

import (
	"fmt"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
)

// A command's answer after what the pod's login shell printed first.
func ExampleLastLine() {
	out := []byte("conda: base activated\n1790000000\n")
	fmt.Println(jobctl.LastLine(out))
	// Output: 1790000000
}
