package launcher

import (
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Each event the driver does not word itself is one line a person can
// read (guard returns values only; the words are the launcher's).
func TestEventText(t *testing.T) {
	for _, c := range []struct {
		e    guard.Event
		want string
	}{
		{guard.Event{Kind: guard.EventVerdict, Verdict: watchdog.ParseVerdict("ready")}, "watchdog verdict: ready"},
		{guard.Event{Kind: guard.EventJobStarted, PID: 42, Command: "sh train.sh"}, "job started (process group 42): sh train.sh"},
		{guard.Event{Kind: guard.EventDeleteReason, PodID: "abc123", DeleteReason: watchdog.DeleteRetrieved}, "pod abc123's watchdog is deleting it (retrieved): "},
		{guard.Event{Kind: guard.EventDeleted, PodID: "abc123", Result: runpod.Deleted}, "pod abc123 deleted"},
		{guard.Event{Kind: guard.EventTransfer, Stage: guard.StageUpload, Bytes: 1_500_000, Total: 3_000_000}, "uploading: 1.5 MB of 3.0 MB"},
		{guard.Event{Kind: guard.EventTransfer, Stage: guard.StageDownload, Bytes: 2_048, Total: -1}, "downloading the results: 2.0 kB so far"},
		{guard.Event{Kind: guard.EventUploaded, Dir: "./job", Remote: "/workspace/overbrainer/RUN/job"}, "uploaded ./job to /workspace/overbrainer/RUN/job"},
		{guard.Event{Kind: guard.EventWaiting, Stage: guard.StageVerdict, PodID: "p1", Elapsed: 3 * time.Second, CostUSD: 0.01},
			"pod p1: waiting for the watchdog's verdict | 3s elapsed, ~$"},
		{guard.Event{Kind: guard.EventDeleteFailed, PodID: "p1", DeleteReason: watchdog.DeleteCostCap, DeleteCodes: "DELETE:403,terminate:403"},
			"could not delete it (cost_cap; DELETE:403,terminate:403)"},
		{guard.Event{Kind: guard.EventAttempt, Attempt: guard.Attempt{GPU: "A40", Outcome: guard.OutcomeNoCapacity}}, "GPU type A40: no capacity; trying the next type"},
		{guard.Event{Kind: guard.EventVolumeFilling, VolumeID: "vol-1", Percent: 90, FromGB: 100}, "may not grow"},
	} {
		if got := eventText(c.e); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.e.Kind, got, c.want)
		}
	}
	if got := endText(guard.End{How: guard.HowExited, ExitCode: 0}); got != "job ended: exit code 0" {
		t.Errorf("endText: %q", got)
	}
	if got := proofText(guard.SnapshotProof{Checkpoint: "ckpt/step-40.pt", Step: 40, Reason: "stop"}); got != "step 40 (ckpt/step-40.pt, stop)" {
		t.Errorf("proofText: %q", got)
	}
}

// What a pod wrote reaches a terminal escaped, whichever event carries it.
func TestEventTextEscapes(t *testing.T) {
	evil := "x\x1b]0;owned\x07\x1b[2K\u009b"
	for _, s := range []string{
		eventText(guard.Event{Kind: guard.EventVerdict, Verdict: watchdog.Verdict{Other: evil}}),
		eventText(guard.Event{Kind: guard.EventDeleteReason, DeleteReason: watchdog.DeleteReason(evil)}),
	} {
		if strings.ContainsAny(s, "\x1b\x07\u009b") || !strings.Contains(s, `\x1b]0;owned`) {
			t.Errorf("%q is not escaped", s)
		}
	}
}

// The events that count things say one of a thing in the singular.
func TestEventsCountInWords(t *testing.T) {
	for _, c := range []struct {
		e    guard.Event
		want string
	}{
		{guard.Event{Kind: guard.EventCollected, Dir: "r", Files: 1, Bytes: 1}, "results downloaded to r (1 file, 1 byte)"},
		{guard.Event{Kind: guard.EventCollected, Dir: "r", Files: 2, Bytes: 10}, "results downloaded to r (2 files, 10 bytes)"},
	} {
		if got := eventText(c.e); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// A failed verdict is explained in words: the failed bootstrap step when
// there is one, the unreachable API otherwise.
func TestVerdictTextExplains(t *testing.T) {
	for _, r := range bootstrap.Reasons() {
		if got := verdictText(watchdog.ParseVerdict("failed bootstrap: " + r)); !strings.Contains(got, bootstrap.Explain(r)) || !strings.Contains(got, "watchdog deletes the pod") {
			t.Errorf("verdict %q explained as %q", r, got)
		}
	}
	if got := verdictText(watchdog.ParseVerdict("failed bootstrap: brand_new")); !strings.Contains(got, "setup failed") {
		t.Errorf("an unknown bootstrap reason explained as %q", got)
	}
	if got := verdictText(watchdog.ParseVerdict("failed http_401")); !strings.Contains(got, "cannot reach the API") {
		t.Errorf("a failed probe explained as %q", got)
	}
}

// A recovery with nothing to resume from does not blame --pull-every when
// pulls were made: their outputs held nothing, so it names where a job
// keeps what it resumes from.
func TestRecoverFromNothingSaysWhere(t *testing.T) {
	got := recoverText(guard.Event{Kind: guard.EventRecovering, N: 1, Of: 1})
	if strings.Contains(got, "no outputs were pulled") || !strings.Contains(got, "$OVERBRAINER_OUTPUTS") {
		t.Errorf("%q: want no claim that nothing was pulled, and where the job keeps its checkpoints", got)
	}
}
