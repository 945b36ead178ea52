package launcher

import (
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// The detach message names every rule that may end the pod, with its
// time: the stall rule and a kept pod's idle bound among them.
func TestGuaranteesNameEveryRule(t *testing.T) {
	t.Parallel()
	start := time.Now()
	running := guard.Record{Plan: podenv.Plan{Rules: podenv.Rules{
		Deadline: start.Add(3 * time.Hour), MaxExtension: time.Hour, MaxCostUSD: 10,
		RetrieveGrace: 90 * time.Minute, StallAfter: 20 * time.Minute, SnapshotWait: 5 * time.Minute,
	}}, BillingStart: start, JobStarted: start, CostPerHr: 2}
	kept := guard.Record{Plan: podenv.Plan{Rules: podenv.Rules{Keep: true, KeepIdle: 20 * time.Second}}, BillingStart: start, JobStarted: start, CostPerHr: 2}
	booting := guard.Record{Plan: podenv.Plan{Rules: podenv.Rules{BootGrace: 7 * time.Minute}}, BillingStart: start}
	at := func(t time.Time) string { return t.Local().Format(time.DateTime) }
	cases := []struct {
		name string
		rec  guard.Record
		want []string
	}{
		{"running", running, []string{
			"not move for 20m0s (--stall-after", "deleted 5m0s later if it still has not moved (--snapshot-wait)",
			"the pod goes 1h30m0s later unless its results are collected",
			"at the deadline (" + at(start.Add(3*time.Hour)) + ")",
			"extension (" + at(start.Add(4*time.Hour)) + ", --max-extension)",
			"the cost cap of $10.00 still holds: the pod goes at " + at(start.Add(5*time.Hour)),
		}},
		{"kept", kept, []string{"the pod is kept (--keep-pod)", "deletes it after 20s with no SSH session open"}},
		{"booting", booting, []string{"deletes the pod 7m0s after it booted (boot grace)"}},
	}
	for _, c := range cases {
		d := &driver{r: &state.Run{Record: c.rec}}
		got := d.guarantees()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the detach message lacks %q:\n%s", c.name, w, got)
			}
		}
		if c.name != "running" && strings.Contains(got, "--stall-after") {
			t.Errorf("%s: a stall rule where none applies:\n%s", c.name, got)
		}
	}
}

// A pod found gone is said with the rules due by then, unless it died
// (EXITED, ERROR): no rule deleted that one.
func TestGoneTextDueRules(t *testing.T) {
	t.Parallel()
	then := time.Now().Add(-time.Hour)
	for _, c := range []struct {
		status runpod.PodStatus
		due    bool
	}{{"", true}, {runpod.StatusTerminated, true}, {runpod.StatusExited, false}, {runpod.StatusError, false}} {
		r := &state.Run{Record: guard.Record{Phase: state.PhaseDetached, BillingStart: then, JobStarted: then,
			Plan: podenv.Plan{Rules: podenv.Rules{RetrieveGrace: time.Minute}}}}
		d := &driver{r: r}
		got := d.goneText(&guard.PodGoneError{PodID: "p1", Status: c.status})
		if has := strings.Contains(got, "these were due by then: abandoned ("); has != c.due || (len(r.DueWhenGone) > 0) != c.due {
			t.Errorf("status %q: %q, saved %v; want the due rules: %v", c.status, got, r.DueWhenGone, c.due)
		}
	}
}
