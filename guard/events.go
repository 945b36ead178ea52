package guard

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
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
	EventStalled                                // the job has not moved for StallAfter (Elapsed, ProgressLine, Snapshot)
	EventSnapshotRequested                      // a snapshot request appeared on the pod (Snapshot)
	EventVolumeGrown                            // the network volume grew (VolumeID, FromGB, ToGB, UsedBytes)
	EventVolumeFilling                          // the network volume is Percent full (VolumeID, FromGB, ToGB, UsedBytes)
	EventReconnecting                           // the SSH connection broke (Err)
	EventReconnected                            // a new SSH connection replaced it
	EventPulled                                 // WithPullEvery downloaded the results so far (Dir, Files, Bytes)
	EventRecovering                             // the pod was lost and a new one takes the job up (Err, N, Of, Dir, Proof; VolumeID, Remote)
	EventDeleteReason                           // the pod's watchdog is deleting it (DeleteReason)
	EventJobEnded                               // the job is over (End)
	EventCollected                              // the results were downloaded (Dir, Files, Bytes, Skipped)
	EventWarning                                // something failed that the run survives (Err)
	EventFailed                                 // the run cannot go on (Err, Then)
	EventLeft                                   // the pod is left to its armed watchdog
	EventDeleted                                // a delete of the pod ended (Result, Err)
	EventSecretDeleted                          // the host key secret was deleted, or not (SecretName, Err)
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
}

func (k EventKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Stage says what an EventWaiting waits for, or which way an
// EventTransfer moves.
type Stage int

// The stages of EventWaiting and EventTransfer. A wait is told at each
// look, with Elapsed and CostUSD since the create call; a transfer every
// half second while it moves and once at its end.
const (
	StagePod      Stage = iota + 1 // the pod to run (Status)
	StageSSH                       // the running pod's sshd to answer (Addr)
	StageVerdict                   // the watchdog's verdict
	StageCapacity                  // a GPU type with capacity (Spec.CapacityWait; GPU, Next; Elapsed since Launch)
	StageUpload                    // the job's upload (Start)
	StageDownload                  // the results' download (Collect, Download, Pull); Total -1: unknown
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
	// ThenDelete: the pod is deleted now.
	ThenDelete Then = iota + 1
	// ThenLeave: the pod is left to its armed watchdog.
	ThenLeave
	// ThenNothing: the pod is gone already, or it holds the only copy of
	// the results and is left to its retrieve grace.
	ThenNothing
)

// Event is one thing that happened in a run, for WithEvents. Only the
// fields its Kind names are set (see the EventKind constants); its String
// is a line a person can read. A few kinds say more:
//
//   - EventPace, once a follow for each bound: at the pace the job's
//     progress shows (PerStep, at Step of Steps), the steps left outrun
//     the bound Snapshot names. watchdog.ReasonDeadline: they need Need,
//     more than the Left until Deadline. watchdog.ReasonCost: they need
//     CostUSD at CostPerHr, more than the MaxCostUSD the cost cap leaves.
//   - EventStalled: the job has not moved for the run's StallAfter
//     (Elapsed since it last did, ProgressLine its last progress line):
//     the lease is no longer renewed, and the job is asked for a snapshot
//     unless a request is there (Snapshot) or the run counts a busy GPU.
//   - EventVolumeFilling: Percent is of the volume's usable part, FromGB
//     its size, ToGB the largest it may grow to (0: it may not).
//   - EventRecovering: the N-th new pod of at most Of (Spec.Recover),
//     made once the lost one is confirmed gone; Err says how that one was
//     lost, and the job resumes from Dir (empty: from its beginning) with
//     its snapshot proof, Proof, when it holds one, or, on a network
//     volume, from its outputs there (VolumeID, Remote).
type Event struct {
	Kind    EventKind
	Stage   Stage // EventWaiting, EventTransfer
	Time    time.Time
	RunID   string
	PodID   string
	PodName string

	Status    runpod.PodStatus
	Addr      string
	Verdict   watchdog.Verdict
	GPU       string
	GPUCount  int
	Deadline  time.Time
	CostPerHr float64
	CostUSD   float64
	Elapsed   time.Duration
	Next      time.Duration // the wait until the next look

	SnapshotAt, CostCapAt time.Time // on this machine's clock
	ClockOffset           time.Duration
	MaxCostUSD            float64

	Dir, Remote string
	PID         int
	Command     string
	Already     bool
	Bytes       int64
	Total       int64
	Offset      int64
	Files       int
	Skipped     []string

	DeleteReason watchdog.DeleteReason
	Snapshot     watchdog.SnapshotReason
	VolumeID     string
	FromGB, ToGB int
	UsedBytes    int64
	Percent      int
	SecretName   string

	N, Of int
	Proof *SnapshotProof // nil: the outputs hold none

	ProgressLine string
	Step, Steps  int64
	PerStep      time.Duration
	Need, Left   time.Duration

	Attempt Attempt
	End     End
	Result  runpod.DeleteResult
	Then    Then
	Err     error
}

// String is the event as one line.
func (e Event) String() string {
	switch e.Kind {
	case EventCreated:
		deadline := "none"
		if !e.Deadline.IsZero() {
			deadline = e.Deadline.Local().Format(time.DateTime)
		}
		return fmt.Sprintf("pod %s (%s) created: %s x%d, %s/h; deadline %s", e.PodID, e.PodName, e.GPU, e.GPUCount, costplan.Money(e.CostPerHr), deadline)
	case EventWaiting:
		return e.waitingText()
	case EventTransfer:
		if e.Stage == StageUpload {
			return transferText("uploading", e)
		}
		return transferText("downloading the results", e)
	case EventRunning:
		return fmt.Sprintf("pod %s is running; SSH at %s", e.PodID, e.Addr)
	case EventVerdict:
		return "watchdog verdict: " + termtext.Escape(e.Verdict.String(), false)
	case EventCostPlan:
		return fmt.Sprintf("cost cap %s at %s/h: snapshot asked at %s, pod deleted at %s (pod clock %+.1fs from ours)",
			costplan.Money(e.MaxCostUSD), costplan.Money(e.CostPerHr), e.SnapshotAt.Local().Format(time.TimeOnly),
			e.CostCapAt.Local().Format(time.TimeOnly), e.ClockOffset.Seconds())
	case EventUploaded:
		return fmt.Sprintf("uploaded %s to %s", e.Dir, e.Remote)
	case EventJobStarted:
		if e.Already {
			return "the job had already been started"
		}
		return fmt.Sprintf("job started (process group %d): %s", e.PID, e.Command)
	case EventOutput:
		return fmt.Sprintf("%d bytes of output (offset %d)", e.Bytes, e.Offset)
	case EventLeaseRenewed:
		return "lease renewed"
	case EventCost:
		return fmt.Sprintf("job running: %s elapsed, ~%s so far", roundSecond(e.Elapsed), costplan.Money(e.CostUSD))
	case EventSnapshotRequested:
		return fmt.Sprintf("snapshot requested (%s): the job is asked to checkpoint and stop", e.Snapshot)
	case EventVolumeGrown:
		return fmt.Sprintf("network volume %s grown from %d to %d GB (%.1f GB used)", e.VolumeID, e.FromGB, e.ToGB, float64(e.UsedBytes)/1e9)
	case EventVolumeFilling:
		grow := "it may not grow: the job is asked for a disk snapshot when it cannot"
		if e.ToGB > e.FromGB {
			grow = fmt.Sprintf("it may grow up to %d GB", e.ToGB)
		}
		return fmt.Sprintf("network volume %s is %d%% full (%.1f GB used of the %.1f GB usable of its %d GB): %s",
			e.VolumeID, e.Percent, float64(e.UsedBytes)/1e9, costplan.VolumeUsable*float64(e.FromGB), e.FromGB, grow)
	case EventDeleteReason:
		return fmt.Sprintf("pod %s's watchdog is deleting it (%s)", e.PodID, termtext.Escape(string(e.DeleteReason), false))
	case EventReconnecting:
		return fmt.Sprintf("lost the SSH connection (%v): reconnecting", e.Err)
	case EventReconnected:
		return "reconnected"
	case EventJobEnded:
		return e.End.String()
	case EventCollected:
		s := fmt.Sprintf("results downloaded to %s (%d files, %d bytes)", e.Dir, e.Files, e.Bytes)
		if len(e.Skipped) > 0 {
			s += "; skipped (links and special files): " + strings.Join(e.Skipped, ", ")
		}
		return s
	case EventFailed:
		return fmt.Sprintf("error: %v", e.Err)
	case EventLeft:
		return fmt.Sprintf("pod %s is left to its watchdog", e.PodID)
	case EventDeleted:
		if errors.Is(e.Err, ErrDeleteUnconfirmed) {
			return e.Err.Error()
		}
		switch e.Result {
		case runpod.Deleted:
			return fmt.Sprintf("pod %s deleted", e.PodID)
		case runpod.Terminated:
			return fmt.Sprintf("pod %s terminated (the delete call failed, the terminate action worked)", e.PodID)
		case runpod.Stopped:
			return fmt.Sprintf("pod %s could only be STOPPED, not deleted: it no longer runs, but its volume STILL BILLS: %v", e.PodID, e.Err)
		}
		return fmt.Sprintf("pod %s could NOT be deleted: %v; it still bills until its watchdog deletes it", e.PodID, e.Err)
	case EventSecretDeleted:
		if e.Err != nil {
			return fmt.Sprintf("could not delete secret %s: %v", e.SecretName, e.Err)
		}
		return fmt.Sprintf("secret %s deleted", e.SecretName)
	case EventWarning:
		return fmt.Sprintf("%v", e.Err)
	case EventAttempt:
		if e.Attempt.Outcome.next() {
			return "GPU type " + e.Attempt.String() + "; trying the next type"
		}
		return "GPU type " + e.Attempt.String()
	case EventPulled:
		return fmt.Sprintf("pulled the outputs so far to %s (%d files, %s)", e.Dir, e.Files, termtext.ByteSize(e.Bytes))
	case EventStalled:
		s := fmt.Sprintf("the job has not moved for %s", roundSecond(e.Elapsed))
		if e.ProgressLine != "" {
			s += fmt.Sprintf(" (last progress: %s)", termtext.Escape(e.ProgressLine, false))
		}
		return s + ": the lease is no longer renewed and the job is asked for a snapshot"
	case EventPace:
		if e.Snapshot == watchdog.ReasonCost {
			return fmt.Sprintf("at %s a step (step %d of %d), the steps left need ~%s, more than the %s the cost cap leaves",
				e.PerStep.Round(time.Millisecond), e.Step, e.Steps, costplan.Money(e.CostUSD), costplan.Money(e.MaxCostUSD))
		}
		return fmt.Sprintf("at %s a step (step %d of %d), the steps left need %s, more than the %s until the deadline",
			e.PerStep.Round(time.Millisecond), e.Step, e.Steps, roundSecond(e.Need), roundSecond(e.Left))
	case EventResumed:
		s := fmt.Sprintf("resuming from %s: %d files (%s) uploaded to %s", e.Dir, e.Files, termtext.ByteSize(e.Bytes), e.Remote)
		if e.Proof != nil {
			s += "; the checkpoint of " + e.Proof.String()
		}
		return s
	case EventRecovering:
		from := "from its beginning"
		switch {
		case e.Remote != "":
			from = "from its outputs on network volume " + e.VolumeID + " (" + e.Remote + ")"
		case e.Proof != nil:
			from = "from " + e.Proof.String() + " in " + e.Dir
		case e.Dir != "":
			from = "from the outputs in " + e.Dir
		}
		return fmt.Sprintf("recovering (%d of %d): %v; a new pod takes the job up %s", e.N, e.Of, e.Err, from)
	}
	return e.Kind.String()
}

// Money formats USD with enough digits for the cents of a short run.
//
// Deprecated: guard's values are float64 dollars; format them as your
// program speaks (the launcher has its own wording).
func Money(usd float64) string { return costplan.Money(usd) }

// ByteSize is n bytes in powers of 1000.
//
// Deprecated: guard's values are byte counts; format them as your program
// speaks (the launcher has its own wording).
func ByteSize(n int64) string { return termtext.ByteSize(n) }

// waitingText is an EventWaiting's line: what is waited for, and since when.
func (e Event) waitingText() string {
	switch e.Stage {
	case StageCapacity:
		return fmt.Sprintf("no GPU available (%s): waiting for one, no pod meanwhile | %s elapsed, next look in %s",
			e.GPU, roundSecond(e.Elapsed), roundSecond(e.Next))
	case StageSSH:
		return fmt.Sprintf("pod %s: waiting for its SSH at %s | %s elapsed, ~%s so far", e.PodID, e.Addr, roundSecond(e.Elapsed), costplan.Money(e.CostUSD))
	case StageVerdict:
		return fmt.Sprintf("pod %s: waiting for the watchdog's verdict | %s elapsed, ~%s so far", e.PodID, roundSecond(e.Elapsed), costplan.Money(e.CostUSD))
	}
	return fmt.Sprintf("pod %s: %s | %s elapsed, ~%s so far", e.PodID, e.Status, roundSecond(e.Elapsed), costplan.Money(e.CostUSD))
}

func roundSecond(d time.Duration) string { return d.Round(time.Second).String() }
