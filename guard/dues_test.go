package guard_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Dues lists every rule that may end a detached run's pod with its time,
// the stall rule and a kept pod's idle bound among them, earliest first.
func TestDues(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	job := start.Add(2 * time.Minute)
	rules := podenv.Rules{
		Deadline: start.Add(3 * time.Hour), MaxExtension: time.Hour, MaxCostUSD: 10,
		BootGrace: 5 * time.Minute, RetrieveGrace: 90 * time.Minute,
		StallAfter: 20 * time.Minute, SnapshotWait: 5 * time.Minute, SnapshotLead: time.Minute,
	}
	cases := []struct {
		name string
		rec  guard.Record
		want []guard.Due
	}{
		{"not started", guard.Record{Plan: podenv.Plan{Rules: rules}, BillingStart: start, CostPerHr: 2}, []guard.Due{
			{Rule: watchdog.DeleteNeverStarted, At: start.Add(5 * time.Minute), After: 5 * time.Minute},
			{Rule: watchdog.DeleteDeadline, At: start.Add(3 * time.Hour)},
			{Rule: watchdog.DeleteMaxExtension, At: start.Add(4 * time.Hour)},
			{Rule: watchdog.DeleteCostCap, At: start.Add(5 * time.Hour)},
		}},
		{"running", guard.Record{Plan: podenv.Plan{Rules: rules}, BillingStart: start, JobStarted: job}, []guard.Due{
			{Rule: watchdog.DeleteStalled, At: job.Add(25 * time.Minute), After: 25 * time.Minute},
			{Rule: watchdog.DeleteAbandoned, At: job.Add(90 * time.Minute), After: 90 * time.Minute},
			{Rule: watchdog.DeleteDeadline, At: start.Add(3 * time.Hour)},
			{Rule: watchdog.DeleteMaxExtension, At: start.Add(4 * time.Hour)},
			// No price: no time for the cap.
		}},
		{"kept", guard.Record{Plan: podenv.Plan{Rules: podenv.Rules{Keep: true, KeepIdle: 20 * time.Second, MaxCostUSD: 10}}, BillingStart: start, JobStarted: job, CostPerHr: 2}, []guard.Due{
			{Rule: watchdog.DeleteKeptIdle, At: job.Add(20 * time.Second), After: 20 * time.Second},
		}},
		{"kept unbounded", guard.Record{Plan: podenv.Plan{Rules: podenv.Rules{Keep: true, KeepUnbounded: true}}, BillingStart: start, JobStarted: job}, nil},
		{"hard deadline", guard.Record{Plan: podenv.Plan{Rules: podenv.Rules{Deadline: start.Add(time.Hour), HardDeadline: true}}, JobStarted: job}, []guard.Due{
			// The stall rule is off unless asked.
			{Rule: watchdog.DeleteDeadline, At: start.Add(time.Hour)},
			{Rule: watchdog.DeleteAbandoned, At: job.Add(podenv.DefaultRetrieveGrace), After: podenv.DefaultRetrieveGrace},
		}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, c.rec.Dues()); diff != "" {
			t.Errorf("%s: Dues (-want +got):\n%s", c.name, diff)
		}
	}
	rec := cases[1].rec
	if got := rec.DueBy(job.Add(time.Hour)); !cmp.Equal(got, []watchdog.DeleteReason{watchdog.DeleteStalled}) {
		t.Errorf("due an hour into the job: %v", got)
	}
	if got := rec.DueBy(job); len(got) != 0 {
		t.Errorf("due as the job started: %v", got)
	}
}

// ReadEndedBy reads the watchdog's reason from a copy of the run directory.
func TestReadEndedBy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := guard.ReadEndedBy(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no file: %v", err)
	}
	file := filepath.Join(dir, watchdog.EndedByFile)
	if err := os.WriteFile(file, []byte("reason=kept_idle at=1800000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := guard.ReadEndedBy(dir)
	if err != nil || got != (watchdog.EndedBy{Reason: watchdog.DeleteKeptIdle, At: time.Unix(1800000000, 0).UTC()}) {
		t.Fatalf("ReadEndedBy = %+v, %v", got, err)
	}
	if err := os.WriteFile(file, []byte("reason=kept_idle at=soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := guard.ReadEndedBy(dir); !errors.Is(err, watchdog.ErrMalformed) {
		t.Fatalf("a torn file: %v", err)
	}
}
