package guardmetrics_test

import (
	"context"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/guard/guardmetrics"
	"github.com/overbrainer/overbrainer-go/internal/testkit/scrape"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A run removed on the fake Runpod, through the adapter's options: the
// scrape shows it by phase, its spend and bill, and its pod's delete; the
// watchdog's deletes are counted by rule, a reason it does not know as
// other.
func TestMetricsOfRuns(t *testing.T) {
	clock := runpodtest.NewManualClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	srv := runpodtest.NewTestServer(t, runpodtest.WithClock(clock.Now))
	c := checkedfake.Client(t, srv)
	ctx := context.Background()
	id := "20260601-120000-abcd"
	p, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: podenv.PodName(id), Image: "x", GPUTypeID: "NVIDIA GeForce RTX 4090"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPod(ctx, p.ID); err != nil { // RUNNING from now
		t.Fatal(err)
	}
	clock.Advance(time.Hour)

	reg := prometheus.NewRegistry()
	m := guardmetrics.New(reg)
	var saved int
	rec := guard.Record{ID: id, PodName: podenv.PodName(id), SecretName: podenv.HostKeySecretName(id), PodID: p.ID,
		CostPerHr: p.CostPerHr, BillingStart: clock.Now().Add(-time.Hour), Phase: guard.PhaseDetached}
	m.Record(guard.Record{ID: "other", Phase: guard.PhaseRunning})
	got, _, err := guard.Remove(ctx, c, rec, false, guard.WithEvents(m.Observe),
		guard.WithSave(m.Save(func(guard.Record) error { saved++; return nil })))
	if err != nil || got.Phase != guard.PhaseRemoved || saved == 0 {
		t.Fatalf("remove: %v, phase %s, %d saves", err, got.Phase, saved)
	}
	if got.Bill == nil {
		t.Fatal("no bill read")
	}
	m.Observe(guard.Event{Kind: guard.EventDeleteReason, RunID: "other", DeleteReason: watchdog.DeleteDeadline})
	m.Observe(guard.Event{Kind: guard.EventDeleteReason, RunID: "other", DeleteReason: "made_up\nby_a_pod"})
	m.Observe(guard.Event{Kind: guard.EventStalled, RunID: "other", Elapsed: 30 * time.Minute})

	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer hs.Close()
	samples, err := scrape.Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		`overbrainer_guard_runs{phase="removed"}`:                     1,
		`overbrainer_guard_runs{phase="running"}`:                     1,
		`overbrainer_guard_runs{phase="booting"}`:                     0,
		`overbrainer_guard_pod_deletes_total{result="deleted"}`:       1,
		`overbrainer_guard_pod_deletes_total{result="failed"}`:        0,
		`overbrainer_guard_watchdog_deletes_total{reason="deadline"}`: 1,
		`overbrainer_guard_watchdog_deletes_total{reason="other"}`:    1,
		`overbrainer_guard_watchdog_deletes_total{reason="stalled"}`:  0,
		`overbrainer_guard_stall_warnings_total`:                      1,
	} {
		if got, ok := samples[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if v := samples["overbrainer_guard_spend_usd"]; math.Abs(v-got.CostUSD) > 1e-9 || v <= 0 {
		t.Errorf("spend %v, want the estimate %v", v, got.CostUSD)
	}
	if v := samples["overbrainer_guard_billed_usd"]; math.Abs(v-got.Bill.USD) > 1e-9 || v <= 0 {
		t.Errorf("billed %v, want the bill %v", v, got.Bill.USD)
	}
}

// A wait for capacity has no pod and carries no cost: a recovering run's
// spend so far stays, while a wait for its pod updates it.
func TestCapacityWaitKeepsSpend(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := guardmetrics.New(reg)
	m.Observe(guard.Event{Kind: guard.EventWaiting, Stage: guard.StagePod, RunID: "r", CostUSD: 2})
	m.Observe(guard.Event{Kind: guard.EventWaiting, Stage: guard.StageCapacity, RunID: "r"})
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer hs.Close()
	samples, err := scrape.Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	if v := samples["overbrainer_guard_spend_usd"]; v != 2 {
		t.Errorf("spend %v after a capacity wait, want 2", v)
	}
}
