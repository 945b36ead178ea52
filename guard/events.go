package guard

import (
	"fmt"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// EventKind says what happened in a run.
type EventKind int

// The kinds of Event, roughly in the order a run meets them, with the
// fields each sets besides Kind, Time, RunID, PodID and PodName.
const (
	EventAttempt           EventKind = iota + 1 // a try at a GPU type ended (GPU, Attempt)
	EventCreated                                // the pod was created (GPU, GPUCount, CostPerHr, Deadline)
	EventWaiting                                // a look found what Stage waits for not there yet (Stage)
	EventRunning                                // the pod runs and publishes its SSH port (Addr)
	EventVerdict                                // the watchdog's verdict (Verdict)
	EventTransfer                               // a transfer's progress (Stage, Bytes of Total, Elapsed)
	EventUploaded                               // the job's directory is on the pod (Dir, Remote)
	EventResumed                                // Job.ResumeFrom is in the job's outputs (Dir, Remote, Files, Bytes, Proof)
	EventCostPlan                               // the cost cap is planned (SnapshotAt, CostCapAt, ClockOffset, MaxCostUSD, CostPerHr)
	EventJobStarted                             // the job runs (PID, Command; Already: an earlier start did it)
	EventOutput                                 // job output went to Follow's writer (Bytes, Offset after them)
	EventLeaseRenewed                           // the client's lease was renewed
	EventCost                                   // a running job's cost so far, every ten minutes (Elapsed, CostUSD)
	EventPace                                   // at its pace the job will be asked for a snapshot (Snapshot; see Event)
	EventStalled                                // the job has not moved (Elapsed, ProgressLine, Snapshot, Deadline; see Event)
	EventSnapshotRequested                      // a snapshot request appeared on the pod (Snapshot)
	EventVolumeGrown                            // the network volume grew (VolumeID, FromGB, ToGB, UsedBytes)
	EventVolumeFilling                          // the volume's usable part is Percent full (VolumeID, FromGB, ToGB: its cap or 0, UsedBytes)
	EventReconnecting                           // the SSH connection broke (Err)
	EventReconnected                            // a new SSH connection replaced it
	EventPulled                                 // Spec.Recover.PullEvery downloaded the results so far (Dir, Files, Bytes)
	EventRecovering                             // the pod was lost and a new one takes the job up (Err, N, Of, Dir, Proof; VolumeID, Remote; InPlace)
	EventDeleteReason                           // the pod's watchdog is deleting it (DeleteReason)
	EventJobEnded                               // the job is over (End)
	EventCollected                              // the results were downloaded (Dir, Files, Bytes, Skipped)
	EventWarning                                // something failed that the run survives (Err)
	EventFailed                                 // the run cannot go on (Err, Then)
	EventLeft                                   // the pod is left to its armed watchdog
	EventDeleted                                // a delete of the pod ended (Result, Err)
	EventSecretDeleted                          // the host key secret was deleted, or not (SecretName, Err)
	EventDeleteRight                            // the watchdog could not prove that the pod's key may delete the pod, once a run
	EventDeleteFailed                           // the pod's watchdog tried to delete it and no GET confirmed it (DeleteReason, DeleteCodes)
)

var kindNames = map[EventKind]string{
	EventAttempt: "attempt", EventCreated: "created", EventWaiting: "waiting", EventRunning: "running",
	EventVerdict: "verdict", EventTransfer: "transfer", EventUploaded: "uploaded", EventResumed: "resumed",
	EventCostPlan: "cost_plan", EventJobStarted: "job_started", EventOutput: "output",
	EventLeaseRenewed: "lease_renewed", EventCost: "cost", EventPace: "pace", EventStalled: "stalled",
	EventSnapshotRequested: "snapshot_requested", EventVolumeGrown: "volume_grown",
	EventVolumeFilling: "volume_filling", EventReconnecting: "reconnecting", EventReconnected: "reconnected",
	EventPulled: "pulled", EventRecovering: "recovering", EventDeleteReason: "delete_reason",
	EventJobEnded: "job_ended", EventCollected: "collected", EventWarning: "warning", EventFailed: "failed",
	EventLeft: "left", EventDeleted: "deleted", EventSecretDeleted: "secret_deleted",
	EventDeleteRight: "delete_right", EventDeleteFailed: "delete_failed",
}

func (k EventKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Stage says what an EventWaiting waits for (told at each look), or which
// way an EventTransfer moves (told every half second and at its end).
type Stage int

// The stages of EventWaiting and EventTransfer.
const (
	StagePod      Stage = iota + 1 // the pod to run (Status)
	StageSSH                       // the running pod's sshd to answer (Addr)
	StageVerdict                   // the watchdog's verdict
	StageCapacity                  // a GPU type with capacity (Spec.CapacityWait; GPU, Next; Elapsed since Launch)
	StageUpload                    // the job's upload (Start)
	StageDownload                  // the results' download (Collect, CollectSoFar, Pull); Total -1: unknown
)

var stageNames = map[Stage]string{
	StagePod: "pod", StageSSH: "ssh", StageVerdict: "verdict", StageCapacity: "capacity",
	StageUpload: "upload", StageDownload: "download",
}

func (s Stage) String() string {
	if n, ok := stageNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}

// Then is what a failed run does with its pod.
type Then int

const (
	ThenDelete  Then = iota + 1 // the pod is deleted now
	ThenLeave                   // the pod is left to its armed watchdog
	ThenNothing                 // the pod is gone, or holds the only copy of the results until its retrieve grace ends
)

// Event is one thing that happened in a run, for WithEvents; only the fields
// its Kind names are set (see EventKind). EventPace: at PerStep a step (Step
// of Steps) the job needs more than the deadline leaves (Need, Left) or the
// cost cap (CostUSD at CostPerHr, LeftUSD), so Snapshot's bound will stop
// it. MaxCostUSD is always the run's whole cap, LeftUSD what is left of it
// (podenv's Rules.MoneyLeft): for the pod in EventCostPlan, once the
// earlier pods' spend is counted, and now in EventPace. EventStalled: with StallAfter, the lease lapses, a snapshot is asked
// (unless Snapshot was, or MinGPUUtil) and the pod goes at Deadline (zero:
// unknown); without, a warning each podenv.StallWarnAfter, nothing more.
type Event struct {
	Kind                  EventKind
	Stage                 Stage // EventWaiting, EventTransfer
	Time                  time.Time
	RunID, PodID, PodName string
	Status                runpod.PodStatus
	Addr                  string
	Verdict               watchdog.Verdict
	GPU                   string
	GPUCount              int
	Deadline              time.Time
	CostPerHr, CostUSD    float64
	Elapsed               time.Duration
	Next                  time.Duration // the wait until the next look
	SnapshotAt, CostCapAt time.Time     // on this machine's clock
	ClockOffset           time.Duration
	MaxCostUSD, LeftUSD   float64
	Dir, Remote           string
	PID                   int
	Command               string
	Already               bool
	Bytes, Total, Offset  int64
	Files                 int
	Skipped               []string
	DeleteReason          watchdog.DeleteReason
	DeleteCodes           string // EventDeleteFailed: what each way answered, e.g. DELETE:403,terminate:403
	Snapshot              watchdog.SnapshotReason
	VolumeID              string
	FromGB, ToGB          int
	UsedBytes             int64
	Percent               int
	SecretName            string
	N, Of                 int            // EventRecovering: the N-th new pod of at most Of
	InPlace               bool           // EventRecovering: the job starts again on its pod, from its outputs there (Remote)
	Proof                 *SnapshotProof // nil: the outputs hold none
	ProgressLine          string
	Step, Steps           int64
	PerStep, Need, Left   time.Duration
	Attempt               Attempt
	End                   End
	Result                runpod.DeleteResult
	Then                  Then
	Err                   error
}

// Repeats says e is one of a series that a program printing lines rather
// than redrawing one may skip: a look, output, a lease renewal, a
// transfer's count.
func (e Event) Repeats() bool {
	switch e.Kind {
	case EventWaiting, EventTransfer, EventOutput, EventLeaseRenewed:
		return true
	}
	return false
}
