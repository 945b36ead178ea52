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

// The kinds of Event, roughly in the order a run meets them.
const (
	// EventCreated: the pod was created (PodID, PodName, GPU, GPUCount,
	// CostPerHr, Deadline).
	EventCreated EventKind = iota + 1
	// EventWaiting: a look at a pod still coming up (Status, Elapsed,
	// CostUSD), sent at every look, for progress.
	EventWaiting
	// EventRunning: the pod runs and publishes its SSH port (Addr).
	EventRunning
	// EventVerdict: the watchdog's verdict (Verdict): its rules are armed
	// when it is ready.
	EventVerdict
	// EventCostPlan: the cost cap was written for the watchdog
	// (SnapshotAt, CostCapAt on this machine's clock, ClockOffset).
	EventCostPlan
	// EventUploaded: the job's directory is on the pod (Dir, Remote).
	EventUploaded
	// EventJobStarted: the job runs (PID, Command); Already when an
	// earlier start had started it.
	EventJobStarted
	// EventOutput: bytes of the job's output were written to Follow's
	// writer (Bytes, Offset after them).
	EventOutput
	// EventLeaseRenewed: the client's lease was renewed.
	EventLeaseRenewed
	// EventCost: the cost so far of a running job (Elapsed, CostUSD),
	// every ten minutes.
	EventCost
	// EventSnapshotRequested: a snapshot request appeared on the pod
	// (Snapshot).
	EventSnapshotRequested
	// EventVolumeGrown: the network volume was grown (VolumeID,
	// FromGB, ToGB, UsedBytes).
	EventVolumeGrown
	// EventVolumeFilling: the network volume is Percent full of its
	// usable part (VolumeID, FromGB its size, ToGB the largest it may
	// grow to, 0 when it may not, UsedBytes).
	EventVolumeFilling
	// EventDeleteReason: the pod's watchdog is deleting it
	// (DeleteReason).
	EventDeleteReason
	// EventReconnecting: the SSH connection broke (Err).
	EventReconnecting
	// EventReconnected: a new SSH connection replaced it.
	EventReconnected
	// EventJobEnded: the job is over (End).
	EventJobEnded
	// EventCollected: the results were downloaded (Dir, Files, Bytes,
	// Skipped).
	EventCollected
	// EventFailed: the run cannot go on (Err); Then says what happens to
	// the pod.
	EventFailed
	// EventLeft: the pod is left to its armed watchdog.
	EventLeft
	// EventDeleted: a delete of the pod ended (Result, Err).
	EventDeleted
	// EventSecretDeleted: the host key secret was deleted (SecretName), or
	// could not be (Err).
	EventSecretDeleted
	// EventWarning: something failed that the run survives (Err).
	EventWarning
	// EventAttempt: a try at a pod of one GPU type ended (GPU, Attempt):
	// created, or why the next type is tried, or why the launch stops.
	EventAttempt
	// EventResumed: the outputs Job.ResumeFrom names were uploaded into
	// the job's outputs (Dir, Remote, Files, Bytes).
	EventResumed
	// EventWaitingSSH: a dial of the running pod's sshd found it not
	// answering yet (Addr, Elapsed and CostUSD since the create call).
	EventWaitingSSH
	// EventWaitingVerdict: a look found no watchdog verdict yet (Elapsed,
	// CostUSD).
	EventWaitingVerdict
	// EventUploading: an upload's progress (Bytes so far of Total,
	// Elapsed since it began), every half second while it moves and once
	// at its end, with the bytes that moved.
	EventUploading
	// EventDownloading: a download's progress, as EventUploading's; Total
	// is the pod's count, -1 when it had none.
	EventDownloading
	// EventWaitingCapacity: no GPU type of the run could be had for want
	// of capacity, and Launch waits for one (Spec.CapacityWait): Elapsed
	// since the launch began, Next the wait until the next look, GPU the
	// types tried. No pod exists meanwhile.
	EventWaitingCapacity
	// EventPulled: WithPullEvery downloaded the results so far (Dir,
	// Files, Bytes).
	EventPulled
	// EventRecovering: the pod was lost under the job (Err says how) and
	// the run goes on on a new pod (Spec.Recover), the N-th of at most
	// Of, once the lost one is confirmed gone; the job resumes from Dir
	// (none: from its beginning), whose snapshot proof is Proof when it
	// holds one, or, on a network volume, from its outputs there
	// (VolumeID, Remote).
	EventRecovering
	// EventStalled: the job has not moved for the run's StallAfter
	// (Elapsed since it last did; ProgressLine its last progress line, empty
	// when it reported none): the lease is no longer renewed, and the job
	// is asked for a snapshot unless a request is there (Snapshot) or the
	// run counts a busy GPU (which only the watchdog sees).
	EventStalled
	// EventPaceDeadline: at the pace the job's progress shows (PerStep,
	// at Step of Steps), the steps left need Need, more than the Left
	// until the Deadline. Told once a follow.
	EventPaceDeadline
	// EventPaceCost: at that pace, the steps left need CostUSD at
	// CostPerHr, more than the MaxCostUSD the cost cap leaves. Told once
	// a follow.
	EventPaceCost
)

var kindNames = map[EventKind]string{
	EventCreated: "created", EventWaiting: "waiting", EventRunning: "running",
	EventVerdict: "verdict", EventCostPlan: "cost_plan", EventUploaded: "uploaded",
	EventJobStarted: "job_started", EventOutput: "output", EventLeaseRenewed: "lease_renewed",
	EventCost: "cost", EventSnapshotRequested: "snapshot_requested", EventVolumeGrown: "volume_grown", EventVolumeFilling: "volume_filling",
	EventDeleteReason: "delete_reason", EventReconnecting: "reconnecting", EventReconnected: "reconnected",
	EventJobEnded: "job_ended", EventCollected: "collected", EventFailed: "failed", EventLeft: "left",
	EventDeleted: "deleted", EventSecretDeleted: "secret_deleted", EventWarning: "warning",
	EventAttempt: "attempt", EventResumed: "resumed",
	EventWaitingSSH: "waiting_ssh", EventWaitingVerdict: "waiting_verdict",
	EventUploading: "uploading", EventDownloading: "downloading",
	EventWaitingCapacity: "waiting_capacity", EventPulled: "pulled", EventRecovering: "recovering",
	EventStalled: "stalled", EventPaceDeadline: "pace_deadline", EventPaceCost: "pace_cost",
}

func (k EventKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
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
// fields its Kind names are set. Its String is a line a person can read.
type Event struct {
	Kind    EventKind
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
	// Next is the wait until the next look (EventWaitingCapacity).
	Next time.Duration

	SnapshotAt, CostCapAt time.Time
	ClockOffset           time.Duration
	MaxCostUSD            float64

	Dir, Remote string
	PID         int
	Command     string
	Already     bool
	Bytes       int64
	Total       int64 // of a transfer, -1 unknown
	Offset      int64
	Files       int
	Skipped     []string

	// DeleteReason is the rule by which the watchdog deletes the pod;
	// Snapshot the reason of a snapshot request.
	DeleteReason watchdog.DeleteReason
	Snapshot     watchdog.SnapshotReason
	VolumeID     string
	FromGB       int
	ToGB         int
	UsedBytes    int64
	Percent      int
	SecretName   string

	// N and Of count EventRecovering's new pods.
	N, Of int
	// Proof is the snapshot proof of the outputs a job resumes from
	// (EventRecovering, EventResumed), nil when they hold none.
	Proof *SnapshotProof

	// ProgressLine is the job's last progress line; Step and Steps its step
	// and total, PerStep the pace, Need the time the steps left take at
	// it, Left the time until the deadline.
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
		return fmt.Sprintf("pod %s: %s | %s elapsed, ~%s so far", e.PodID, e.Status, roundSecond(e.Elapsed), costplan.Money(e.CostUSD))
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
	case EventWaitingSSH:
		return fmt.Sprintf("pod %s: waiting for its SSH at %s | %s elapsed, ~%s so far", e.PodID, e.Addr, roundSecond(e.Elapsed), costplan.Money(e.CostUSD))
	case EventWaitingVerdict:
		return fmt.Sprintf("pod %s: waiting for the watchdog's verdict | %s elapsed, ~%s so far", e.PodID, roundSecond(e.Elapsed), costplan.Money(e.CostUSD))
	case EventUploading:
		return transferText("uploading", e)
	case EventDownloading:
		return transferText("downloading the results", e)
	case EventPulled:
		return fmt.Sprintf("pulled the outputs so far to %s (%d files, %s)", e.Dir, e.Files, termtext.ByteSize(e.Bytes))
	case EventWaitingCapacity:
		return fmt.Sprintf("no GPU available (%s): waiting for one, no pod meanwhile | %s elapsed, next look in %s",
			e.GPU, roundSecond(e.Elapsed), roundSecond(e.Next))
	case EventStalled:
		s := fmt.Sprintf("the job has not moved for %s", roundSecond(e.Elapsed))
		if e.ProgressLine != "" {
			s += fmt.Sprintf(" (last progress: %s)", termtext.Escape(e.ProgressLine, false))
		}
		return s + ": the lease is no longer renewed and the job is asked for a snapshot"
	case EventPaceDeadline:
		return fmt.Sprintf("at %s a step (step %d of %d), the steps left need %s, more than the %s until the deadline",
			e.PerStep.Round(time.Millisecond), e.Step, e.Steps, roundSecond(e.Need), roundSecond(e.Left))
	case EventPaceCost:
		return fmt.Sprintf("at %s a step (step %d of %d), the steps left need ~%s, more than the %s the cost cap leaves",
			e.PerStep.Round(time.Millisecond), e.Step, e.Steps, costplan.Money(e.CostUSD), costplan.Money(e.MaxCostUSD))
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

func roundSecond(d time.Duration) string { return d.Round(time.Second).String() }
