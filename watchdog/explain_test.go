package watchdog_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Every rule by which the watchdog deletes a pod is explained, and an
// unknown one says so rather than say nothing.
func TestEveryDeleteReasonIsExplained(t *testing.T) {
	t.Parallel()
	for _, r := range watchdog.DeleteReasons() {
		if r.Summary() == "unknown reason" || strings.Contains(r.Explain(), "unknown to this program") {
			t.Errorf("%q has no explanation", r)
		}
		if len(r.Summary()) >= len(r.Explain()) {
			t.Errorf("%q: the summary %q is not shorter than the explanation", r, r.Summary())
		}
	}
	unsafe := watchdog.DeletePodDirUnsafe
	for _, want := range []string{"SAFETY STOP", ".pod", "symbolic link", "deleted the pod at once", "fails closed", "the job", "volume"} {
		if !strings.Contains(unsafe.Explain(), want) {
			t.Errorf("%s.Explain() lacks %q: %s", unsafe, want, unsafe.Explain())
		}
	}
	if got := watchdog.DeleteReason("brand_new").Explain(); !strings.Contains(got, `"brand_new" is unknown`) {
		t.Errorf("unknown reason explained as %q", got)
	}
	if got := watchdog.DeleteReason("brand_new").Summary(); got != "unknown reason" {
		t.Errorf("unknown reason summarised as %q", got)
	}
}

func ExampleDeleteReason_Summary() {
	fmt.Println(watchdog.DeleteNeverStarted.Summary())
	// Output: no job started within the boot grace
}
