package guard

import (
	"errors"
	"strings"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// JobState is what one look at the pod saw of the job and its watchdog.
type JobState struct {
	PID          int    // the job's process group, 0 before it started
	ExitCode     int    // -1 until the job wrote one
	Alive        bool   // its process group exists (false for a lost job)
	Cancelled    bool   // marked cancelled, with the marker's word:
	CancelReason string // empty when none
	LogSize      int64  // job.log's size at the look
	PodNow       int64  // the pod's clock, Unix seconds
	// Request is the pending snapshot request, empty when none: the job
	// can write the file, so any word may be there.
	Request      watchdog.SnapshotReason
	DuKiB        int64                 // the watchdog's last measure of the network volume, -1: none
	Verdict      watchdog.Verdict      // zero until the watchdog wrote one
	DeleteReason watchdog.DeleteReason // the rule the watchdog is deleting the pod by, if any
	// Progress is the last line of the job's $OVERBRAINER_PROGRESS, empty
	// while it wrote none; without control characters, at most 256 bytes.
	Progress string
}

// Started says the job started.
func (s JobState) Started() bool { return jobctl.State(s).Started() }

// Ended says the job is over: it wrote its exit code, was cancelled (or
// lost), or its process group is gone.
func (s JobState) Ended() bool { return jobctl.State(s).Ended() }

// Lost says the job died with an earlier container of the pod (Runpod
// restarted it) before it wrote its exit code; its results so far are on
// the volume.
func (s JobState) Lost() bool { return jobctl.State(s).Lost() }

// CancelResult is what Run.Cancel found and did.
type CancelResult string

// Run.Cancel's answers.
const (
	// CancelStopped: the job ran and its process group was stopped.
	CancelStopped CancelResult = "cancelled"
	// CancelEnded: the job had ended already; nothing was signalled.
	CancelEnded CancelResult = "ended"
	// CancelNoJob: no job was started.
	CancelNoJob CancelResult = "none"
)

// OutputsDir is the job's outputs directory ($OVERBRAINER_OUTPUTS) as
// Collect writes it under its local directory.
const OutputsDir = "outputs"

// CheckSecretName says whether name may be one of Job.Secrets: a variable
// name that is not the shell's own and does not start with OVERBRAINER_ or
// RUNPOD_. Spec's check applies it; a caller may check a name early.
func CheckSecretName(name string) error {
	if err := jobctl.CheckEnvName(name); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "jobctl: "))
	}
	return nil
}
