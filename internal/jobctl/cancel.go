package jobctl

import (
	_ "embed"
	"fmt"

	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

//go:embed cancel.sh
var cancelScript string

// CancelClient is the reason the cancel command writes in the cancelled
// marker: the client cancelled the job.
const CancelClient = "client"

// CancelResult is what the cancel command found and did.
type CancelResult string

// The cancel command's answers.
const (
	// CancelStopped: the job ran, and its process group was stopped.
	CancelStopped CancelResult = "cancelled"
	// CancelEnded: the job had ended already; nothing was signalled.
	CancelEnded CancelResult = "ended"
	// CancelNoJob: no job was started.
	CancelNoJob CancelResult = "none"
)

// CancelCommand is the command line that cancels the job of the run
// directory runDir at once, without a checkpoint: it marks the job
// cancelled (CancelClient), sends TERM to its process group, then KILL to
// what is left of it after 2 seconds. ParseCancel reads its output.
func CancelCommand(runDir string) string {
	return podssh.Command(cancelProgram(), runDir)
}

// cancelProgram is cancel.sh after the helpers it calls.
func cancelProgram() string { return watchdog.GroupSignal() + watchdog.WakeFunction() + cancelScript }

// ParseCancel reads the cancel command's output.
func ParseCancel(out []byte) (CancelResult, error) {
	switch r := CancelResult(LastLine(out)); r {
	case CancelStopped, CancelEnded, CancelNoJob:
		return r, nil
	}
	return "", fmt.Errorf("jobctl: the cancel command answered %.80q", LastLine(out))
}
