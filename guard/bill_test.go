package guard

import (
	"context"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// billWorld is the fake Runpod on a hand-moved clock, a client for it,
// and a run whose earlier attempt's pod and current pod both ran.
func billWorld(t *testing.T) (*runpodtest.Server, *runpodtest.ManualClock, *runpod.Client, Record) {
	t.Helper()
	clock := runpodtest.NewManualClock(time.Date(2026, 6, 1, 23, 40, 0, 0, time.UTC))
	srv := runpodtest.NewTestServer(t, runpodtest.WithClock(clock.Now))
	c := checkedfake.Client(t, srv)
	ctx := context.Background()
	id := "20260601-234000-abcd"
	rec := Record{ID: id, PodName: podenv.PodName(id), SecretName: podenv.HostKeySecretName(id), BillingStart: clock.Now()}
	var pods []string
	for _, name := range []string{"overbrainer-earlier", rec.PodName} {
		p, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: name, Image: "x", GPUTypeID: "NVIDIA GeForce RTX 4090"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetPod(ctx, p.ID); err != nil { // RUNNING from now
			t.Fatal(err)
		}
		pods, rec.CostPerHr = append(pods, p.ID), p.CostPerHr
	}
	rec.Attempts = []Attempt{{GPU: "NVIDIA GeForce RTX 4090", Time: clock.Now(), Outcome: OutcomeStartTimeout, PodID: pods[0]},
		{GPU: "NVIDIA GeForce RTX 4090", Time: clock.Now(), Outcome: OutcomeCreated, PodID: pods[1]}}
	rec.PodID = pods[1]
	clock.Advance(30 * time.Minute) // across midnight: two day buckets
	if _, err := c.DeletePod(ctx, pods[0]); err != nil {
		t.Fatal(err)
	}
	return srv, clock, c, rec
}

// ReadBill sums what Runpod billed each of the run's pods, the earlier
// attempts' too, and names those it has not billed yet.
func TestReadBill(t *testing.T) {
	srv, clock, c, rec := billWorld(t)
	if _, err := c.DeletePod(context.Background(), rec.PodID); err != nil {
		t.Fatal(err)
	}
	var want float64
	for _, p := range srv.Pods() {
		want += p.Bill.USD
	}
	if want <= 0 {
		t.Fatal("the fake billed nothing")
	}
	if got := rec.BillPods(); !slices.Equal(got, []string{rec.Attempts[0].PodID, rec.PodID}) {
		t.Errorf("BillPods = %v", got)
	}
	b, err := ReadBill(context.Background(), c, rec, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.USD-want) > 1e-9 || len(b.Pods) != 2 || len(b.Missing) != 0 || !b.Read.Equal(clock.Now()) {
		t.Errorf("bill %+v, want $%v for both pods", b, want)
	}

	// Runpod's billing lags: a pod it has not billed yet is missing.
	srv.SetBillingDelay(24 * time.Hour)
	b, err = ReadBill(context.Background(), c, rec, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if b.USD != 0 || len(b.Pods) != 0 || len(b.Missing) != 2 {
		t.Errorf("bill within the delay %+v, want both pods missing", b)
	}
}

// A bill is due once the run ended, until one was read billSettle past
// the end.
func TestBillDue(t *testing.T) {
	end := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	rec := Record{PodID: "p1"}
	if rec.BillDue() {
		t.Error("due before the run ended")
	}
	rec.Ended = end
	if !rec.BillDue() || rec.BillSettled() {
		t.Error("not due after the end with no bill")
	}
	rec.Bill = &Bill{Read: end.Add(time.Minute)}
	if !rec.BillDue() || rec.BillSettled() {
		t.Error("a bill read a minute after the end is settled")
	}
	rec.Bill = &Bill{Read: end.Add(billSettle)}
	if rec.BillDue() || !rec.BillSettled() {
		t.Error("a bill read billSettle after the end is still due")
	}
	if (Record{Ended: end}).BillDue() {
		t.Error("a run that never had a pod is due a bill")
	}
}

// Remove reads the run's bill once its pod is deleted.
func TestRemoveReadsTheBill(t *testing.T) {
	srv, clock, c, rec := billWorld(t)
	got, res, err := remove(context.Background(), c, rec, false, withClock(&manualClock{clock}))
	if err != nil || res != runpod.Deleted {
		t.Fatalf("remove = %v, %v", res, err)
	}
	var want float64
	for _, p := range srv.Pods() {
		want += p.Bill.USD
	}
	if got.Bill == nil || math.Abs(got.Bill.USD-want) > 1e-9 || len(got.Bill.Missing) != 0 {
		t.Fatalf("bill %+v, want $%v", got.Bill, want)
	}
	if got.CostUSD <= 0 || !got.BillDue() {
		t.Errorf("estimate $%v; due again %v (read at the end, it may still grow)", got.CostUSD, got.BillDue())
	}
}

// manualClock is the fake's clock as the run's: a sleep moves it.
type manualClock struct{ *runpodtest.ManualClock }

func (c *manualClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}
