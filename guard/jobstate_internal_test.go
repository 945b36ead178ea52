package guard

import (
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
)

// guard's names for the pod protocol's words are the job scripts' own.
func TestJobStateWordsAreTheScripts(t *testing.T) {
	for got, want := range map[string]string{
		string(CancelStopped): string(jobctl.CancelStopped),
		string(CancelEnded):   string(jobctl.CancelEnded),
		string(CancelNoJob):   string(jobctl.CancelNoJob),
		OutputsDir:            jobctl.OutputsDir,
	} {
		if got != want {
			t.Errorf("guard says %q, the scripts %q", got, want)
		}
	}
}
