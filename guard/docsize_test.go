package guard_test

import (
	"bytes"
	"os/exec"
	"testing"
)

// maxDocLines bounds `go doc -all` of the package: guard is the product's
// API, read whole by its users, and it grew past 1,100 lines once when
// the command line's wording lived here (issue 30).
const maxDocLines = 900

func TestDocStaysReadable(t *testing.T) {
	out, err := exec.Command("go", "doc", "-all", ".").Output()
	if err != nil {
		t.Fatalf("go doc -all: %v", err)
	}
	if n := bytes.Count(out, []byte("\n")); n > maxDocLines {
		t.Errorf("go doc -all is %d lines, at most %d: say less, or move what only a command line needs out of guard", n, maxDocLines)
	}
}
