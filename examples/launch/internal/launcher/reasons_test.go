package launcher

import (
	"slices"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Every rule by which the watchdog deletes a pod has its explanation, and
// nothing else has one.
func TestEveryDeleteReasonIsExplained(t *testing.T) {
	reasons := watchdog.DeleteReasons()
	if !slices.Contains(reasons, watchdog.DeletePodDirUnsafe) {
		t.Fatalf("watchdog.DeleteReasons() = %v lacks %s", reasons, watchdog.DeletePodDirUnsafe)
	}
	for _, v := range reasons {
		w, ok := deleteReasons[v]
		switch {
		case !ok:
			t.Errorf("%q has no explanation in deleteReasons", v)
		case strings.TrimSpace(w.short) == "" || len(w.long) < len(w.short):
			t.Errorf("%q: explanation %+v is empty or its long form shorter than its short one", v, w)
		}
	}
	for v := range deleteReasons {
		if !slices.Contains(reasons, v) {
			t.Errorf("deleteReasons explains %q, which the watchdog does not delete by", v)
		}
	}
}

// pod_dir_unsafe says what happened, that it is a safety stop, and what to
// look at.
func TestPodDirUnsafeExplanation(t *testing.T) {
	long := explainDelete(watchdog.DeletePodDirUnsafe)
	for _, want := range []string{"SAFETY STOP", ".pod", "symbolic link", "deleted the pod at once", "fails closed", "the job", "volume"} {
		if !strings.Contains(long, want) {
			t.Errorf("the explanation lacks %q: %s", want, long)
		}
	}
	short := shortDelete(watchdog.DeletePodDirUnsafe)
	for _, want := range []string{"SAFETY STOP", ".pod", "symlink", "job", "volume"} {
		if !strings.Contains(short, want) {
			t.Errorf("the ls legend lacks %q: %s", want, short)
		}
	}
	if got := explainDelete("brand_new"); !strings.Contains(got, `"brand_new" is unknown`) {
		t.Errorf("unknown reason: %s", got)
	}
}

func TestEveryBootstrapReasonIsExplained(t *testing.T) {
	for _, r := range bootstrap.Reasons() {
		if strings.TrimSpace(bootstrapReasons[r]) == "" {
			t.Errorf("bootstrap reason %q has no explanation", r)
		}
		got := explainVerdict(watchdog.ParseVerdict("failed bootstrap: " + r))
		if !strings.Contains(got, bootstrapReasons[r]) || !strings.Contains(got, "watchdog deletes the pod") {
			t.Errorf("verdict %q explained as %q", r, got)
		}
	}
	for r := range bootstrapReasons {
		if !slices.Contains(bootstrap.Reasons(), r) {
			t.Errorf("bootstrapReasons explains %q, which is not a bootstrap reason", r)
		}
	}
	if got := explainVerdict(watchdog.ParseVerdict("failed http_401")); !strings.Contains(got, "cannot reach the API") {
		t.Errorf("a failed probe explained as %q", got)
	}
}
