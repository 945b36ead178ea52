package jobctl

import (
	"os/exec"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// The pod-side scripts and the demo job are POSIX sh that shellcheck
// accepts.
func TestShellcheck(t *testing.T) {
	bin := shtest.NeedTool(t, "shellcheck")
	out, err := exec.Command(bin, "-s", "sh", "start.sh", "watch.sh", "cancel.sh", "session.sh", "../../examples/launch/demo/train.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
}
