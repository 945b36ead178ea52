package bootstrap

import (
	"slices"
	"strings"
	"testing"
)

// Every reason a bootstrap fails with is explained, and nothing else is.
func TestEveryReasonIsExplained(t *testing.T) {
	for _, r := range Reasons() {
		if strings.TrimSpace(Explain(r)) == "" {
			t.Errorf("%q has no explanation", r)
		}
	}
	for r := range reasonTexts {
		if !slices.Contains(Reasons(), r) {
			t.Errorf("reasonTexts explains %q, which is not a bootstrap reason", r)
		}
	}
	if got := Explain("brand_new"); got != "" {
		t.Errorf("an unknown reason explained as %q", got)
	}
}
