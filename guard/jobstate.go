package guard

import (
	"errors"
	"strings"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// JobState is what one look at the pod saw of the job and its watchdog.
type JobState struct {
	PID          int                     // the job's process group, 0 before it started
	ExitCode     int                     // -1 until the job wrote one
	Alive        bool                    // its process group exists (false for a lost job)
	Cancelled    bool                    // marked cancelled, with the marker's word:
	CancelReason string                  // empty when none
	LogSize      int64                   // job.log's size at the look
	PodNow       int64                   // the pod's clock, Unix seconds
	Request      watchdog.SnapshotReason // pending, if any: any word, since the job can write it
	DuKiB        int64                   // the watchdog's last measure of the network volume, -1: none
	Verdict      watchdog.Verdict        // zero until the watchdog wrote one
	DeleteReason watchdog.DeleteReason   // the rule the watchdog is deleting the pod by, if any
	Delete       watchdog.DeleteState    // the watchdog's delete right, and its last delete no GET confirmed
	Progress     string                  // the last line of $OVERBRAINER_PROGRESS, cleaned, at most 256 bytes
	Moved        int64                   // the pod's time of the watchdog's last look that saw the job move, 0: none
}

// Started says the job started.
func (s JobState) Started() bool { return jobctl.State(s).Started() }

// Ended says the job exited, was cancelled or lost, or its process is gone.
func (s JobState) Ended() bool { return jobctl.State(s).Ended() }

// Lost says the job died without an exit code, with a restarted container.
func (s JobState) Lost() bool { return jobctl.State(s).Lost() }

// CancelResult is what Run.Cancel found and did.
type CancelResult string

// Run.Cancel's answers.
const (
	CancelStopped CancelResult = "cancelled" // the job ran, and its process group was stopped
	CancelEnded   CancelResult = "ended"     // the job had ended already; nothing was signalled
	CancelNoJob   CancelResult = "none"      // no job was started
)

// CheckSecretName refuses a name Job.Secrets may not use: one that is not a
// variable name, is the shell's own, or starts with OVERBRAINER_ or RUNPOD_.
func CheckSecretName(name string) error {
	if err := jobctl.CheckEnvName(name); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "jobctl: "))
	}
	return nil
}
