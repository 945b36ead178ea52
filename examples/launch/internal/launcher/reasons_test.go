package launcher

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
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
		w, ok := deleteReasons[string(v)]
		switch {
		case !ok:
			t.Errorf("%q has no explanation in deleteReasons", v)
		case strings.TrimSpace(w.short) == "" || len(w.long) < len(w.short):
			t.Errorf("%q: explanation %+v is empty or its long form shorter than its short one", v, w)
		}
	}
	for v := range deleteReasons {
		if !slices.Contains(reasons, watchdog.DeleteReason(v)) {
			t.Errorf("deleteReasons explains %q, which the watchdog does not delete by", v)
		}
	}
}

// pod_dir_unsafe says what happened, that it is a safety stop, and what to
// look at.
func TestPodDirUnsafeExplanation(t *testing.T) {
	long := explainDelete(string(watchdog.DeletePodDirUnsafe))
	for _, want := range []string{"SAFETY STOP", ".pod", "symbolic link", "deleted the pod at once", "fails closed", "the job", "volume"} {
		if !strings.Contains(long, want) {
			t.Errorf("the explanation lacks %q: %s", want, long)
		}
	}
	short := shortDelete(string(watchdog.DeletePodDirUnsafe))
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
		got := explainVerdict("bootstrap: " + r)
		if !strings.Contains(got, bootstrapReasons[r]) || !strings.Contains(got, "watchdog deletes the pod") {
			t.Errorf("verdict %q explained as %q", r, got)
		}
	}
	for r := range bootstrapReasons {
		if !slices.Contains(bootstrap.Reasons(), r) {
			t.Errorf("bootstrapReasons explains %q, which is not a bootstrap reason", r)
		}
	}
	if got := explainVerdict("http_401"); !strings.Contains(got, "cannot reach the API") {
		t.Errorf("a failed probe explained as %q", got)
	}
}

// A reason seen in a look is said once, kept in the run's state, and given
// when the pod turns out to be gone.
func TestDeleteReasonIsSaidOnceAndKept(t *testing.T) {
	var stderr bytes.Buffer
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := &app{stderr: &stderr, stdout: &bytes.Buffer{}, store: st}
	r := &state.Run{ID: "20260101-000000-abcd", PodID: "pod1", Phase: state.PhaseRunning}
	if err := st.Create(r); err != nil {
		t.Fatal(err)
	}
	d := &driver{a: a, r: r}
	if got := d.goneError("pod pod1 no longer exists").what; got != "pod pod1 no longer exists" {
		t.Errorf("without a reason: %q", got)
	}
	d.noteDeleteReason("")
	for range 3 {
		d.noteDeleteReason(string(watchdog.DeletePodDirUnsafe))
	}
	said := stderr.String()
	if n := strings.Count(said, "watchdog is deleting it (pod_dir_unsafe)"); n != 1 {
		t.Errorf("said %d times:\n%s", n, said)
	}
	if !strings.Contains(said, explainDelete(string(watchdog.DeletePodDirUnsafe))) {
		t.Errorf("said without the explanation:\n%s", said)
	}
	saved, err := st.Load(r.ID)
	if err != nil || saved.DeleteReason != string(watchdog.DeletePodDirUnsafe) {
		t.Fatalf("saved reason %q, %v", saved.DeleteReason, err)
	}
	got := d.goneError("pod pod1 no longer exists").what
	if !strings.HasPrefix(got, "pod pod1 no longer exists; its watchdog was deleting it (pod_dir_unsafe): SAFETY STOP") {
		t.Errorf("gone: %q", got)
	}
}
