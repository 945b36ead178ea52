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
	EventStalled                                // the job has not moved (Elapsed, ProgressLine, Snapshot, Deadline; see Event)
	EventSnapshotRequested                      // a snapshot request appeared on the pod (Snapshot)
	EventVolumeGrown                            // the network volume grew (VolumeID, FromGB, ToGB, UsedBytes)
	EventVolumeFilling                          // the volume's usable part is Percent full (VolumeID, FromGB, ToGB: its cap or 0, UsedBytes)
	EventReconnecting                           // the SSH connection broke (Err)
	EventReconnected                            // a new SSH connection replaced it
	EventPulled                                 // WithPullEvery downloaded the results so far (Dir, Files, Bytes)
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
	case EventDeleteRight:
		return fmt.Sprintf("pod %s's watchdog could not prove that the pod's key may delete the pod", e.PodID)
	case EventDeleteFailed:
		return fmt.Sprintf("pod %s's watchdog could not delete it (%s; %s): it tries again every tick", e.PodID,
			termtext.Escape(string(e.DeleteReason), false), termtext.Escape(e.DeleteCodes, false))
	case EventReconnecting:
		return fmt.Sprintf("lost the SSH connection (%v): reconnecting", e.Err)
	case EventReconnected:
		return "reconnected"
	case EventJobEnded:
		return e.End.String()
	case EventCollected:
		s := fmt.Sprintf("results downloaded to %s (%s, %s)", e.Dir, termtext.Count(int64(e.Files), "file", "files"), termtext.Count(e.Bytes, "byte", "bytes"))
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
		return fmt.Sprintf("pulled the outputs so far to %s (%s, %s)", e.Dir, termtext.Count(int64(e.Files), "file", "files"), termtext.ByteSize(e.Bytes))
	case EventStalled:
		s := fmt.Sprintf("the job has not moved for %s", roundSecond(e.Elapsed))
		if e.ProgressLine != "" {
			s += fmt.Sprintf(" (last progress: %s)", termtext.Escape(e.ProgressLine, false))
		}
		if e.Deadline.IsZero() && e.Snapshot == "" {
			return s
		}
		return s + ": the lease is no longer renewed and the job is asked for a snapshot"
	case EventPace:
		if e.Snapshot == watchdog.ReasonCost {
			return fmt.Sprintf("at %s a step (step %d of %d), the steps left need ~%s, more than the %s the cost cap leaves",
				e.PerStep.Round(time.Millisecond), e.Step, e.Steps, costplan.Money(e.CostUSD), costplan.Money(e.LeftUSD))
		}
		return fmt.Sprintf("at %s a step (step %d of %d), the steps left need %s, more than the %s until the deadline",
			e.PerStep.Round(time.Millisecond), e.Step, e.Steps, roundSecond(e.Need), roundSecond(e.Left))
	case EventResumed:
		s := fmt.Sprintf("resuming from %s: %s (%s) uploaded to %s", e.Dir, termtext.Count(int64(e.Files), "file", "files"), termtext.ByteSize(e.Bytes), e.Remote)
		if e.Proof != nil {
			s += "; the checkpoint of " + e.Proof.String()
		}
		return s
	case EventRecovering:
		if e.InPlace {
			return fmt.Sprintf("recovering (%d of %d): %v; the job starts again on pod %s, from its outputs there (%s)", e.N, e.Of, e.Err, e.PodID, e.Remote)
		}
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
