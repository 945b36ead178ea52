package guard

import (
	"errors"
	"strings"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// JobState is what one look at the pod saw of the job and its watchdog.
type JobState struct {
	// PID is the job's process group, 0 before the job started.
	PID int
	// ExitCode is the job's exit status once it wrote one, else -1.
	ExitCode int
	// Alive says whether the job's process group exists; false for a lost
	// job (see Lost).
	Alive bool
	// Cancelled says the job was marked cancelled; CancelReason is the
	// word the marker holds, empty when none.
	Cancelled    bool
	CancelReason string
	// LogSize is the job log's size when the look was made.
	LogSize int64
	// PodNow is the pod's clock, Unix seconds.
	PodNow int64
	// Request is the pending snapshot request, empty when none. The job
	// can write the file: any word may be there.
	Request watchdog.SnapshotReason
	// DuKiB is the watchdog's last measure of the network volume, -1 when
	// there is none.
	DuKiB int64
	// Verdict is the watchdog's verdict, zero until it wrote one.
	Verdict watchdog.Verdict
	// DeleteReason is the rule by which the watchdog is deleting the pod,
	// empty while none is.
	DeleteReason watchdog.DeleteReason
	// Progress is the last line of the job's progress file
	// ($OVERBRAINER_PROGRESS), empty while it wrote none; the job writes
	// it, so it comes without control characters, at most 256 bytes.
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
