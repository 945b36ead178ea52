package watchdog

import (
	"slices"
	"testing"
)

// No explanation is left for a rule the watchdog no longer has.
func TestNoExplanationOfAnUnknownReason(t *testing.T) {
	t.Parallel()
	for r := range reasonTexts {
		if !slices.Contains(DeleteReasons(), r) {
			t.Errorf("reasonTexts explains %q, which the watchdog does not delete by", r)
		}
	}
}
