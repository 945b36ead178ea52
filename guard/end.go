package guard

import (
	"fmt"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

// How is how a job ended.
type How int

// The ways a job ends.
const (
	Exited       How = iota + 1 // it wrote its exit code (End.ExitCode)
	Killed                      // its process group is gone without an exit code
	Cancelled                   // the cancelled marker says so
	Lost                        // it died with a container Runpod restarted; its results so far are on the volume
	RunDirLost                  // the restarted container's disk lost the run directory, job and outputs
	NeverStarted                // no job was started
)

const lostJob = "job lost: the pod's container restarted (Runpod restarted it, or its host failed), which ended the job before it could write its exit code"

// End is how a followed job ended.
type End struct {
	How      How
	ExitCode int    // -1 when the job wrote none
	RunDir   string // on the pod
	// The snapshot request the job was given, and its proof after it (nil: none).
	Requested watchdog.SnapshotReason
	Proof     *SnapshotProof
}

// Checkpointed says the job exited 0 with a proof made for its request.
func (e End) Checkpointed() bool {
	return e.OK() && e.Proof != nil && e.Proof.answers(e.Requested)
}

// OK says the job exited 0.
func (e End) OK() bool { return e.How == Exited && e.ExitCode == 0 }

// String says how the job ended, as one line.
func (e End) String() string {
	switch e.How {
	case Exited:
		return fmt.Sprintf("job ended: exit code %d", e.ExitCode)
	case Killed:
		return "job ended without an exit code (killed)"
	case Cancelled:
		return "job ended: cancelled"
	case Lost:
		return lostJob + "; collecting its results so far"
	case RunDirLost:
		return fmt.Sprintf("%s, and its run directory %s went with it (no volume kept it): the output shown so far is all there is", lostJob, e.RunDir)
	case NeverStarted:
		return "the job never started"
	}
	return "job state unknown"
}

// Err is nil when the job exited 0, else how it ended (ErrJobLost if lost).
func (e End) Err() error {
	switch {
	case e.OK():
		return nil
	case e.How == Exited:
		return &endError{fmt.Sprintf("the job failed with exit code %d", e.ExitCode), false}
	case e.How == Lost || e.How == RunDirLost:
		return &endError{"the job was lost when the pod's container restarted, before it could finish", true}
	case e.How == NeverStarted:
		return &endError{"the job never ran", false}
	}
	return &endError{"the job ended without an exit code", false}
}

// endError is End.Err's error.
type endError struct {
	msg  string
	lost bool
}

func (e *endError) Error() string { return e.msg }

func (e *endError) Is(target error) bool { return e.lost && target == ErrJobLost }
