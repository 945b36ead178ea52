package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// A secret whose description says its run needs it later than any run of
// the SDK may (its start, the longest deadline and the longest extension)
// cannot be judged, and is left; one named like a run's host key whose
// tail is not of NewRunID's form (a user's) is not judged at all.
func TestSweepSecretBounds(t *testing.T) {
	const run = "20200101-000000-abcd"
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	latest := start.Add(podenv.MaxDeadlineAhead + podenv.LongestExtension)
	now := time.Date(2020, 6, 1, 0, 0, 0, 0, time.UTC)
	desc := func(until time.Time) string { return podenv.HostKeySecretDescription(run, until) }
	f := &sweepFake{secrets: []runpod.Secret{
		{ID: "forever", Name: podenv.HostKeySecretName(run), Description: desc(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))},
		{ID: "past-latest", Name: podenv.HostKeySecretName(run), Description: desc(latest.Add(time.Second))},
		{ID: "at-latest", Name: podenv.HostKeySecretName(run), Description: desc(latest)},
		{ID: "look-alike", Name: "overbrainer_host_key_20200101-000000-mine"},
	}}
	rep, err := Once(context.Background(), f, Policy{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Rule{}
	for _, d := range rep.Decisions {
		got[d.SecretID] = d.Rule
		if d.Delete {
			t.Errorf("%s: deleted (%s)", d.SecretID, d.Why)
		}
	}
	want := map[string]Rule{"forever": RuleCannotJudge, "past-latest": RuleCannotJudge, "at-latest": RuleKeep}
	if len(got) != len(want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
	for id, r := range want {
		if got[id] != r {
			t.Errorf("%s: %s, want %s", id, got[id], r)
		}
	}
	for _, c := range f.calls {
		if c != "ListPods" && c != "ListSecrets" {
			t.Errorf("call %s", c)
		}
	}
}
