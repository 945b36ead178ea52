package launcher

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

func upload(done, total int64, elapsed time.Duration) guard.Event {
	return guard.Event{Kind: guard.EventTransfer, Stage: guard.StageUpload, Bytes: done, Total: total, Elapsed: elapsed}
}

// On a terminal a transfer is one line redrawn with its bytes, rate and
// time left, erased before the job's output; off one it is plain lines, a
// new one only for a new stage or after plainEvery, never a carriage return.
func TestProgressLines(t *testing.T) {
	var errOut, out bytes.Buffer
	a := &app{stderr: &errOut, stdout: &out, tty: true}
	d := &driver{a: a}
	d.progress(upload(1e6, 4e6, time.Second))
	d.progress(upload(2e6, 4e6, 2*time.Second))
	if _, err := (jobOutput{a}).Write([]byte("step 1\n")); err != nil {
		t.Fatal(err)
	}
	first := "launch: uploading: 1.0 MB of 4.0 MB, 1.0 MB/s, 3s left"
	second := "launch: uploading: 2.0 MB of 4.0 MB, 1.0 MB/s, 2s left"
	erase := func(s string) string { return "\r" + strings.Repeat(" ", len(s)) + "\r" }
	if want := first + erase(first) + second + erase(second); errOut.String() != want {
		t.Errorf("on a terminal:\n%q\nwant\n%q", errOut.String(), want)
	}
	if out.String() != "step 1\n" {
		t.Errorf("the job's output %q", out.String())
	}

	errOut.Reset()
	a.tty, d = false, &driver{a: a}
	for _, e := range []guard.Event{
		{Kind: guard.EventWaiting, Stage: guard.StagePod, Status: "PROVISIONING", Elapsed: time.Second},
		{Kind: guard.EventWaiting, Stage: guard.StagePod, Status: "PROVISIONING", Elapsed: 2 * time.Second},
		{Kind: guard.EventWaiting, Stage: guard.StagePod, Status: "PROVISIONING", Elapsed: 40 * time.Second},
		{Kind: guard.EventWaiting, Stage: guard.StageVerdict, Elapsed: 41 * time.Second},
		upload(1e6, 4e6, time.Second), upload(2e6, 4e6, 2*time.Second), upload(4e6, 4e6, 4*time.Second),
		// A new transfer starts its own clock.
		{Kind: guard.EventTransfer, Stage: guard.StageUpload, Bytes: 10, Total: 10, Elapsed: time.Millisecond},
	} {
		d.progress(e)
	}
	lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
	if strings.Contains(errOut.String(), "\r") || len(lines) != 5 {
		t.Fatalf("off a terminal:\n%s", errOut.String())
	}
	for i, want := range []string{"PROVISIONING | 1s elapsed", "PROVISIONING | 40s elapsed", "verdict | 41s elapsed",
		"uploading: 1.0 MB of 4.0 MB, 1.0 MB/s, 3s left", "uploading: 10 B of 10 B, 10.0 kB/s"} {
		if !strings.HasPrefix(lines[i], "launch: ") || !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q, want %q", i, lines[i], want)
		}
	}
}

// One pace event, two bounds: the warning names the flag of the bound the
// event carries.
func TestPaceWarnings(t *testing.T) {
	var errOut bytes.Buffer
	a := &app{stderr: &errOut}
	for reason, want := range map[watchdog.SnapshotReason]string{
		watchdog.ReasonDeadline: "(--max-hours)",
		watchdog.ReasonCost:     "(--max-cost-usd)",
	} {
		errOut.Reset()
		a.say("%s", eventText(guard.Event{Kind: guard.EventPace, Snapshot: reason, PerStep: time.Second, Step: 1, Steps: 10,
			Need: time.Hour, Left: time.Minute, CostUSD: 2, CostPerHr: 1, MaxCostUSD: 3, LeftUSD: 1}))
		if !strings.Contains(errOut.String(), "at its pace") || !strings.Contains(errOut.String(), want) {
			t.Errorf("%s: %q, want %q", reason, errOut.String(), want)
		}
	}
}

// A stall event with the rule off is a warning that deletes nothing and
// says how to turn the delete on; with it on, it names the limit and
// the delete to come.
func TestStallWarnings(t *testing.T) {
	var errOut bytes.Buffer
	a := &app{stderr: &errOut}
	e := guard.Event{Kind: guard.EventStalled, Elapsed: 40 * time.Minute, ProgressLine: "step=5 total=5"}
	for after, want := range map[time.Duration][]string{
		0:                {"no progress for 40m0s", "step=5 total=5", "the stall rule is off, so nothing is deleted", "--stall-after D"},
		20 * time.Minute: {"has not moved for 40m0s", "--stall-after 20m0s", "the pod is deleted if it still does not move"},
	} {
		errOut.Reset()
		d := &driver{a: a, r: &state.Run{}}
		d.r.StallAfter = after
		d.event(e)
		for _, w := range want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("--stall-after %s: %q, want %q", after, errOut.String(), w)
			}
		}
	}
}

// The unproven delete right is one note line; a delete its watchdog could
// not confirm is a warning with what each way answered.
func TestDeleteRightAndRefusedDelete(t *testing.T) {
	var errOut bytes.Buffer
	d := &driver{a: &app{stderr: &errOut, stdout: &bytes.Buffer{}}}
	d.event(guard.Event{Kind: guard.EventDeleteRight, PodID: "p1"})
	d.event(guard.Event{Kind: guard.EventDeleteFailed, PodID: "p1", DeleteReason: watchdog.DeleteCostCap, DeleteCodes: "DELETE:403,terminate:403"})
	lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "launch: note: the watchdog's right to delete pod p1 is unproven") ||
		!strings.HasPrefix(lines[1], "launch: warning: pod p1's watchdog could not delete it (cost_cap; DELETE:403,terminate:403)") {
		t.Errorf("said:\n%s", errOut.String())
	}
}
