package launcher

import (
	"fmt"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// eventText is the event as one line, for the kinds the driver does not
// word itself from what it knows of the run (a stall, a failure, a delete
// or secret delete that failed, the job's end and output).
func eventText(e guard.Event) string {
	switch e.Kind {
	case guard.EventCreated:
		deadline := "none"
		if !e.Deadline.IsZero() {
			deadline = e.Deadline.Local().Format(time.DateTime)
		}
		return fmt.Sprintf("pod %s (%s) created: %s x%d, %s/h; deadline %s", e.PodID, e.PodName, e.GPU, e.GPUCount, money(e.CostPerHr), deadline)
	case guard.EventWaiting:
		return waitingText(e)
	case guard.EventTransfer:
		if e.Stage == guard.StageUpload {
			return transferText("uploading", e)
		}
		return transferText("downloading the results", e)
	case guard.EventRunning:
		return fmt.Sprintf("pod %s is running; SSH at %s", e.PodID, e.Addr)
	case guard.EventVerdict:
		return "watchdog verdict: " + termtext.Escape(e.Verdict.String(), false)
	case guard.EventCostPlan:
		return fmt.Sprintf("cost cap %s at %s/h: snapshot asked at %s, pod deleted at %s (pod clock %+.1fs from ours)",
			money(e.MaxCostUSD), money(e.CostPerHr), e.SnapshotAt.Local().Format(time.TimeOnly),
			e.CostCapAt.Local().Format(time.TimeOnly), e.ClockOffset.Seconds())
	case guard.EventUploaded:
		return fmt.Sprintf("uploaded %s to %s", e.Dir, e.Remote)
	case guard.EventJobStarted:
		if e.Already {
			return "the job had already been started"
		}
		return fmt.Sprintf("job started (process group %d): %s", e.PID, e.Command)
	case guard.EventCost:
		return fmt.Sprintf("job running: %s elapsed, ~%s so far", since(e.Elapsed), money(e.CostUSD))
	case guard.EventSnapshotRequested:
		return fmt.Sprintf("snapshot requested (%s): the job is asked to checkpoint and stop", e.Snapshot)
	case guard.EventVolumeGrown:
		return fmt.Sprintf("network volume %s grown from %d to %d GB (%.1f GB used)", e.VolumeID, e.FromGB, e.ToGB, float64(e.UsedBytes)/1e9)
	case guard.EventVolumeFilling:
		grow := "it may not grow: the job is asked for a disk snapshot when it cannot"
		if e.ToGB > e.FromGB {
			grow = fmt.Sprintf("it may grow up to %d GB", e.ToGB)
		}
		return fmt.Sprintf("network volume %s is %d%% full (%.1f GB used of the %.1f GB usable of its %d GB): %s",
			e.VolumeID, e.Percent, float64(e.UsedBytes)/1e9, costplan.VolumeUsable*float64(e.FromGB), e.FromGB, grow)
	case guard.EventDeleteReason:
		return fmt.Sprintf("pod %s's watchdog is deleting it (%s): %s", e.PodID, termtext.Escape(string(e.DeleteReason), false), e.DeleteReason.Explain())
	case guard.EventDeleteRight:
		return fmt.Sprintf("note: the watchdog's right to delete pod %s is unproven (the API has no harmless test of it): a refused delete is shown here as a warning", e.PodID)
	case guard.EventDeleteFailed:
		return fmt.Sprintf("pod %s's watchdog could not delete it (%s; %s): it tries again every tick", e.PodID,
			termtext.Escape(string(e.DeleteReason), false), termtext.Escape(e.DeleteCodes, false))
	case guard.EventReconnecting:
		return fmt.Sprintf("lost the SSH connection (%v): reconnecting", e.Err)
	case guard.EventReconnected:
		return "reconnected"
	case guard.EventCollected:
		// The driver lists the outputs and the files skipped after it.
		return fmt.Sprintf("results downloaded to %s (%s, %s)", e.Dir, termtext.Count(int64(e.Files), "file", "files"), termtext.Count(e.Bytes, "byte", "bytes"))
	case guard.EventDeleted:
		// Deleted or terminated; the driver says a delete that failed.
		if e.Result == runpod.Terminated {
			return fmt.Sprintf("pod %s terminated (the delete call failed, the terminate action worked)", e.PodID)
		}
		return fmt.Sprintf("pod %s deleted", e.PodID)
	case guard.EventSecretDeleted:
		// Deleted; the driver says a delete that failed.
		return fmt.Sprintf("secret %s deleted", e.SecretName)
	case guard.EventWarning:
		return fmt.Sprintf("%v", e.Err)
	case guard.EventAttempt:
		if e.Attempt.Outcome.Next() {
			return "GPU type " + e.Attempt.String() + "; trying the next type"
		}
		return "GPU type " + e.Attempt.String()
	case guard.EventPulled:
		return fmt.Sprintf("pulled the outputs so far to %s (%s, %s)", e.Dir, termtext.Count(int64(e.Files), "file", "files"), termtext.ByteSize(e.Bytes))
	case guard.EventPace:
		// The warning names the flag of the bound the event carries.
		if e.Snapshot == watchdog.ReasonCost {
			return fmt.Sprintf("warning: at its pace (%s a step, step %d of %d) the job needs ~%s more at %s/h, but the cost cap leaves %s: it will be asked for a snapshot before it finishes (--max-cost-usd)",
				e.PerStep.Round(time.Millisecond), e.Step, e.Steps, money(e.CostUSD), money(e.CostPerHr), money(e.LeftUSD))
		}
		return fmt.Sprintf("warning: at its pace (%s a step, step %d of %d) the job needs %s more, but the deadline %s is %s away: it will be asked for a snapshot before it finishes (--max-hours)",
			e.PerStep.Round(time.Millisecond), e.Step, e.Steps, since(e.Need), e.Deadline.Local().Format(time.DateTime), since(e.Left))
	case guard.EventResumed:
		s := fmt.Sprintf("resuming from %s: %s (%s) uploaded to %s", e.Dir, termtext.Count(int64(e.Files), "file", "files"), termtext.ByteSize(e.Bytes), e.Remote)
		if e.Proof != nil {
			s += "; the checkpoint of " + proofText(*e.Proof)
		}
		return s
	case guard.EventRecovering:
		return fmt.Sprintf("recovering (%d of %d): %v; %s", e.N, e.Of, e.Err, recoverText(e))
	}
	return e.Kind.String()
}

// waitingText is an guard.EventWaiting's line: what is waited for, and since when.
func waitingText(e guard.Event) string {
	switch e.Stage {
	case guard.StageCapacity:
		return fmt.Sprintf("no GPU available (%s): waiting for one, no pod meanwhile | %s elapsed, next look in %s",
			e.GPU, since(e.Elapsed), since(e.Next))
	case guard.StageSSH:
		return fmt.Sprintf("pod %s: waiting for its SSH at %s | %s elapsed, ~%s so far", e.PodID, e.Addr, since(e.Elapsed), money(e.CostUSD))
	case guard.StageVerdict:
		return fmt.Sprintf("pod %s: waiting for the watchdog's verdict | %s elapsed, ~%s so far", e.PodID, since(e.Elapsed), money(e.CostUSD))
	}
	return fmt.Sprintf("pod %s: %s | %s elapsed, ~%s so far", e.PodID, e.Status, since(e.Elapsed), money(e.CostUSD))
}

// transferText is a transfer's progress as a line's words.
func transferText(verb string, e guard.Event) string {
	if e.Total < 0 {
		return fmt.Sprintf("%s: %s so far", verb, termtext.ByteSize(e.Bytes))
	}
	return fmt.Sprintf("%s: %s of %s", verb, termtext.ByteSize(e.Bytes), termtext.ByteSize(e.Total))
}

// endText says how the job ended, as one line.
func endText(e guard.End) string {
	switch e.How {
	case guard.HowExited:
		return fmt.Sprintf("job ended: exit code %d", e.ExitCode)
	case guard.HowKilled:
		return "job ended without an exit code (killed)"
	case guard.HowCancelled:
		return "job ended: cancelled"
	case guard.HowLost:
		return lostJobText + "; collecting its results so far"
	case guard.HowRunDirLost:
		return fmt.Sprintf("%s, and its run directory %s went with it (no volume kept it): the output shown so far is all there is", lostJobText, e.RunDir)
	case guard.HowNeverStarted:
		return "the job never started"
	}
	return "job state unknown"
}

// proofText is a snapshot proof in words: its step and checkpoint.
func proofText(p guard.SnapshotProof) string {
	s := fmt.Sprintf("step %d (%s", p.Step, p.Checkpoint)
	if p.Reason != "" {
		s += ", " + p.Reason
	}
	return s + ")"
}

// lostJobText says how a job was lost.
const lostJobText = "job lost: the pod's container restarted (Runpod restarted it, or its host failed), which ended the job before it could write its exit code"

// verdictText says in words what a failed verdict means for the pod.
func verdictText(v watchdog.Verdict) string {
	if !v.Bootstrap {
		return "the pod's watchdog cannot reach the API, so the client deletes the pod"
	}
	if text := bootstrap.Explain(v.Reason); text != "" {
		return "the pod's setup failed: " + text + ". Its watchdog deletes the pod, and so does the client"
	}
	return "the pod's setup failed. Its watchdog deletes the pod, and so does the client"
}
