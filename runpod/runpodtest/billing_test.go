package runpodtest_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/openapicheck"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// TestFakeBillsWhatItMeasures: GET /v2/billing/pods serves, in Runpod's
// documented shape, each pod's measured bill cut into the asked buckets,
// once the billing delay has passed.
func TestFakeBillsWhatItMeasures(t *testing.T) {
	clock := runpodtest.NewManualClock(time.Date(2026, 6, 1, 10, 30, 0, 0, time.UTC))
	srv := runpodtest.NewTestServer(t, runpodtest.WithClock(clock.Now),
		runpodtest.WithBillingDelay(time.Hour),
		runpodtest.WithMiddleware(openapicheck.Middleware(t)))
	c := newClient(t, srv)
	ctx := context.Background()
	pod, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: "billed", Image: "img", GPUTypeID: "NVIDIA GeForce RTX 4090", GPUCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: "other", Image: "img", GPUTypeID: "NVIDIA GeForce RTX 4090"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{pod.ID, other.ID} {
		if _, err := c.GetPod(ctx, id); err != nil { // RUNNING from now
			t.Fatal(err)
		}
	}
	clock.Advance(90 * time.Minute)
	for _, id := range []string{pod.ID, other.ID} {
		if _, err := c.DeletePod(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	measured, _ := srv.Pod(pod.ID)
	if measured.Bill.USD <= 0 {
		t.Fatalf("the fake measured no bill: %+v", measured.Bill)
	}
	opts := runpod.PodBillingOptions{PodID: pod.ID, Start: clock.Now().Add(-3 * time.Hour), Bucket: runpod.BucketHour}

	// Within the delay, only what is an hour old is billed.
	b, err := c.PodBilling(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if usd, _ := b.Billed(pod.ID); usd >= measured.Bill.USD || usd <= 0 {
		t.Errorf("billed %v within the delay; want part of %v", usd, measured.Bill.USD)
	}

	srv.SetBillingDelay(0)
	b, err = c.PodBilling(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	usd, ok := b.Billed(pod.ID)
	if !ok || math.Abs(usd-measured.Bill.USD) > 1e-9 || math.Abs(b.Totals.GPUUSD-usd) > 1e-9 || b.Pods != 1 {
		t.Errorf("billed %v (%v), totals %+v, %d pods; the fake measured %v", usd, ok, b.Totals, b.Pods, measured.Bill.USD)
	}
	// 10:30 to 12:00 in hour buckets: 10:00 and 11:00.
	if len(b.Records) != 2 || b.Records[0].Start.Hour() != 10 || b.Records[1].Start.Hour() != 11 ||
		math.Abs(b.Records[1].TotalUSD-2*b.Records[0].TotalUSD) > 1e-9 {
		t.Errorf("records %+v", b.Records)
	}

	// Without a pod filter, both pods, each in its records.
	b, err = c.PodBilling(ctx, runpod.PodBillingOptions{LastN: 2, Bucket: runpod.BucketDay})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Billed(other.ID); !ok || b.Pods != 2 {
		t.Errorf("all pods: %+v", b)
	}

	// A pod billed nothing (never ran) has no record.
	b, err = c.PodBilling(ctx, runpod.PodBillingOptions{PodID: "nosuchpod"})
	if err != nil || len(b.Records) != 0 || b.Pods != 0 {
		t.Errorf("unknown pod: %+v, %v", b, err)
	}
}

// TestFakeRegistries: the account's registry credentials are listed, a
// create naming one gets it, and one naming another is refused with 404.
func TestFakeRegistries(t *testing.T) {
	srv := runpodtest.NewTestServer(t, runpodtest.WithMiddleware(openapicheck.Middleware(t)))
	c := newClient(t, srv)
	ctx := context.Background()
	regs, err := c.ListRegistries(ctx)
	if err != nil || len(regs) != 0 {
		t.Fatalf("no registries yet: %v, %v", regs, err)
	}
	reg := srv.AddRegistry("ghcr-private")
	regs, err = c.ListRegistries(ctx)
	if err != nil || len(regs) != 1 || regs[0].ID != reg.ID || regs[0].Name != "ghcr-private" {
		t.Fatalf("registries: %v, %v", regs, err)
	}
	req := runpod.CreatePodRequest{Name: "private", Image: "ghcr.io/me/private:1", GPUTypeID: "NVIDIA GeForce RTX 4090", RegistryAuthID: reg.ID}
	pod, err := c.CreatePod(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer c.DeletePod(ctx, pod.ID)
	if fake, _ := srv.Pod(pod.ID); fake.Registry != reg.ID || pod.RegistryAuthID != reg.ID {
		t.Errorf("the pod's registry: fake %q, client %q; want %q", fake.Registry, pod.RegistryAuthID, reg.ID)
	}
	req.Name, req.RegistryAuthID = "unknown", "nosuchregistry"
	if _, err := c.CreatePod(ctx, req); !errors.Is(err, runpod.ErrNotFound) {
		t.Errorf("unknown registry: %v, want ErrNotFound", err)
	}
	if n := len(srv.Pods()); n != 1 {
		t.Errorf("%d pods, want 1", n)
	}
}
