package guard

import (
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A failed verdict is explained in words: the failed bootstrap step when
// there is one, the unreachable API otherwise.
func TestVerdictErrorExplains(t *testing.T) {
	for _, r := range bootstrap.Reasons() {
		e := &VerdictError{Verdict: watchdog.ParseVerdict("failed bootstrap: " + r)}
		if got := e.Explain(); !strings.Contains(got, bootstrap.Explain(r)) || !strings.Contains(got, "watchdog deletes the pod") {
			t.Errorf("verdict %q explained as %q", r, got)
		}
	}
	e := &VerdictError{Verdict: watchdog.ParseVerdict("failed bootstrap: brand_new")}
	if got := e.Explain(); !strings.Contains(got, "setup failed") {
		t.Errorf("an unknown bootstrap reason explained as %q", got)
	}
	e = &VerdictError{Verdict: watchdog.ParseVerdict("failed http_401")}
	if got := e.Explain(); !strings.Contains(got, "cannot reach the API") {
		t.Errorf("a failed probe explained as %q", got)
	}
}
