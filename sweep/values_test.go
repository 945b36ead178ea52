package sweep

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// A deleted pod's dollars past its bound are its price times the time
// past the rule's limit; a pod kept, a secret, or a pod priced 0 has none.
func TestPastBoundUSD(t *testing.T) {
	h := time.Hour
	// Created 30h ago at $2/h, its deadline 26h ago with the default
	// extension of 24h and the margin: past its bound for 1h55m.
	late := guarded("late", runpod.StatusRunning, 30*h, time.Minute, podenv.DeadlineEnv, unix(sweepNow.Add(-26*h)))
	d := Judge(late, sweepNow, Policy{})
	if d.Rule != RuleDeadline || !d.Delete {
		t.Fatalf("decision %+v", d)
	}
	want := 2 * (d.Age - d.Limit).Hours()
	if got := d.PastBoundUSD(); want <= 0 || math.Abs(got-want) > 1e-9 {
		t.Errorf("PastBoundUSD = %v, want %v", got, want)
	}
	young := Judge(guarded("young", runpod.StatusRunning, h, time.Minute), sweepNow, Policy{})
	exited := Judge(guarded("exited", runpod.StatusExited, h, time.Minute), sweepNow, Policy{})
	exited.PricePerHr = 0 // Runpod shows an EXITED pod's price as 0
	secret := Decision{Secret: "s", Rule: RuleSecretOrphan, Delete: true, Age: 2 * h, Limit: h, PricePerHr: 1}
	for _, d := range []Decision{young, exited, secret} {
		if got := d.PastBoundUSD(); got != 0 {
			t.Errorf("%s: PastBoundUSD = %v, want 0", d, got)
		}
	}
}

// A report says when its pass started and how long it took, on the
// policy's clock.
func TestReportPass(t *testing.T) {
	now := sweepNow
	clock := func() time.Time { now = now.Add(time.Second); return now }
	f := &sweepFake{pods: []runpod.Pod{guarded("d", runpod.StatusExited, time.Hour, time.Minute)}}
	rep, err := Once(context.Background(), f, Policy{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass.Start.Equal(sweepNow.Add(time.Second)) || rep.Pass.Took <= 0 || rep.Deleted() != 1 {
		t.Errorf("pass %+v, %d deleted", rep.Pass, rep.Deleted())
	}
}
