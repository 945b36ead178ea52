package guard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/sweep"
)

// sweep.Once against the fake Runpod, its clock moved by hand, its list paged:
// pods of every age judged by their env as the launcher arms it, and an
// account key that cannot list is a clear error with nothing deleted.
func TestSweepOnTheFake(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	srv := runpodtest.NewTestServer(t, runpodtest.WithClock(clock), runpodtest.WithPageSize(2), runpodtest.AllowPodsLeft())
	c := checkedfake.Client(t, srv)
	create := func(id string, s podenv.Settings) string {
		s.RunID = id
		env := testPodEnv(t, s)
		p, err := c.CreatePod(context.Background(), runpod.CreatePodRequest{Name: podenv.PodNamePrefix + id, Image: "x",
			GPUTypeID: "NVIDIA GeForce RTX 4090", Env: env})
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	in := func(d time.Duration) time.Time { return clock().Add(d) }
	late := create("late", podenv.Settings{Rules: podenv.Rules{Deadline: in(time.Hour), HardDeadline: true}})
	young := create("young", podenv.Settings{Rules: podenv.Rules{Deadline: in(10 * time.Hour)}})
	capped := create("capped", podenv.Settings{Rules: podenv.Rules{Deadline: in(10 * time.Hour), MaxCostUSD: 0.5}})
	exited := create("exited", podenv.Settings{Rules: podenv.Rules{Deadline: in(10 * time.Hour)}})
	kept := create("kept", podenv.Settings{Rules: podenv.Rules{Keep: true}})
	other, err := c.CreatePod(context.Background(), runpod.CreatePodRequest{Name: podenv.PodNamePrefix + "other", Image: "x", GPUTypeID: "NVIDIA GeForce RTX 4090"})
	if err != nil {
		t.Fatal(err)
	}
	advance(time.Minute) // all RUNNING
	if err := srv.ExitPod(exited, 0); err != nil {
		t.Fatal(err)
	}
	advance(time.Hour + 10*time.Minute)
	policy := sweep.Policy{Now: clock}

	bad, err := runpod.New("rpa_NOT_THE_KEY", runpod.WithBaseURL(srv.BaseURL()), runpod.WithRetry(1, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var ae *runpod.APIError
	if _, err := sweep.Once(context.Background(), bad, policy); !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("sweep.Once with a key that cannot list: %v, want the 401", err)
	}

	rep, err := sweep.Once(context.Background(), c, policy)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sweep.Rule{}
	for _, d := range rep.Decisions {
		got[d.PodID] = d.Rule
	}
	want := map[string]sweep.Rule{late: sweep.RuleDeadline, young: sweep.RuleKeep, capped: sweep.RuleCostCap,
		exited: sweep.RuleExited, kept: sweep.RuleKeep, other.ID: sweep.RuleUnmarked}
	for id, r := range want {
		if got[id] != r {
			t.Errorf("pod %s: rule %s, want %s\n%v", id, got[id], r, rep.Decisions)
		}
	}
	for _, id := range []string{late, capped, exited} {
		if p, _ := srv.Pod(id); p.Status != runpodtest.StatusTerminated {
			t.Errorf("pod %s is %s after the sweep", id, p.Status)
		}
	}
	for _, id := range []string{young, kept, other.ID} {
		if p, _ := srv.Pod(id); p.Status != runpodtest.StatusRunning {
			t.Errorf("pod %s is %s after the sweep, want RUNNING", id, p.Status)
		}
	}
}
