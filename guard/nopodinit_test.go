package guard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// A program that runs the emulator's pods without calling PodInit first
// in main fails its Launch with an error that says what to call.
func TestLaunchWithoutPodInitSaysWhatToCall(t *testing.T) {
	shtest.NeedPods(t, localpod.Check())
	bin := filepath.Join(t.TempDir(), "nopodinit")
	build := exec.Command("go", "build", "-o", bin, "./testdata/nopodinit")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "PodInit") {
		t.Fatalf("Launch without PodInit: %v\n%s\nwant an error naming PodInit", err, out)
	}
}
