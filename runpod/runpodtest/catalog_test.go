package runpodtest_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// stocked is a catalog of two types: A with one GPU free in DC-A, B with
// two in DC-B.
func stocked() runpodtest.Option {
	return runpodtest.WithGPUTypes(
		runpodtest.GPUType{ID: "GPU A", Name: "A", MemoryGB: 24, SecurePrice: 0.5, MaxCount: 8, Stock: map[string]int{"DC-A": 1}},
		runpodtest.GPUType{ID: "GPU B", Name: "B", MemoryGB: 48, SecurePrice: 0.9, MaxCount: 8, Stock: map[string]int{"DC-B": 2}, CUDA: "12.1"},
	)
}

func gpuReq(name, gpu string) runpod.CreatePodRequest {
	return runpod.CreatePodRequest{Name: name, Image: "runpod/base", GPUTypeID: gpu}
}

// The stock in the catalog follows the pods: a create takes it, a delete
// gives it back, and a create with none left is Runpod's capacity 400.
func TestStockRunsOutAndComesBack(t *testing.T) {
	srv := checkedfake.NewTestServer(t, stocked())
	c := newClient(t, srv)
	ctx := context.Background()
	stockOf := func(id string) (runpod.Availability, []string) {
		t.Helper()
		gpus, err := c.ListGPUTypes(ctx, runpod.WithStock())
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gpus {
			if g.ID == id {
				return g.Availability, g.StockedDataCenters()
			}
		}
		t.Fatalf("no %s in %+v", id, gpus)
		return "", nil
	}
	if a, dcs := stockOf("GPU A"); a != runpod.StockLow || !slices.Equal(dcs, []string{"DC-A"}) {
		t.Fatalf("A before: %s %v", a, dcs)
	}
	p, err := c.CreatePod(ctx, gpuReq("a1", "GPU A"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.DeletePod(ctx, p.ID) })
	if dc := dataCenterOf(t, srv, c, p.ID); dc != "DC-A" {
		t.Errorf("pod in %q, want DC-A", dc)
	}
	if a, dcs := stockOf("GPU A"); a != runpod.StockNone || len(dcs) != 0 {
		t.Errorf("A taken: %s %v", a, dcs)
	}
	_, err = c.CreatePod(ctx, gpuReq("a2", "GPU A"))
	if !errors.Is(err, runpod.ErrNoCapacity) || runpod.ClassifyCreate(err) != runpod.CreateNextType {
		t.Errorf("second create: %v, want ErrNoCapacity", err)
	}
	if _, err := c.DeletePod(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if a, _ := stockOf("GPU A"); a != runpod.StockLow {
		t.Errorf("A given back: %s", a)
	}
	// The client's data-center filter and the fake's minCudaVersion.
	in, err := c.ListGPUTypes(ctx, runpod.StockDataCenter("DC-B"))
	if err != nil || len(in) != 1 || in[0].ID != "GPU B" {
		t.Errorf("in DC-B: %+v %v", in, err)
	}
	cuda, err := c.ListGPUTypes(ctx, runpod.StockMinCUDA("12.4"))
	if err != nil || cuda[1].Availability != runpod.StockNone || cuda[0].Availability != runpod.StockLow {
		t.Errorf("CUDA 12.4: %+v %v", cuda, err)
	}
	if _, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: "b", Image: "x", GPUTypeID: "GPU B", MinCUDA: "12.4"}); !errors.Is(err, runpod.ErrNoCapacity) {
		t.Errorf("B on CUDA 12.4: %v", err)
	}
	var sent []string
	for _, r := range srv.Requests() {
		if r.Method == http.MethodPost && r.Path == "/v2/pods" {
			sent = append(sent, r.Path)
		}
	}
	if len(sent) != 3 {
		t.Errorf("%d creates sent, want 3 (no resend of a refusal)", len(sent))
	}
}

func TestCatalogOptionsRefusedBeforeAnyRequest(t *testing.T) {
	srv := checkedfake.NewTestServer(t)
	c := newClient(t, srv)
	for _, o := range []runpod.CatalogOption{runpod.StockCloud("MOON"), runpod.StockCount(0), runpod.StockMinCUDA("12"), runpod.StockDataCenter("a/b"), nil} {
		if _, err := c.ListGPUTypes(context.Background(), o); !errors.Is(err, runpod.ErrInvalid) {
			t.Errorf("err %v, want ErrInvalid", err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// A refused type answers what RefuseGPU says, and ClassifyCreate reads it
// as the launcher must: 402 stops, 403 and capacity go on, 422 stops.
func TestCreateRefusals(t *testing.T) {
	srv := checkedfake.NewTestServer(t)
	c := newClient(t, srv)
	ctx := context.Background()
	const gpu = "NVIDIA RTX A5000"
	for _, tc := range []struct {
		status int
		is     error
		want   runpod.CreateOutcome
	}{
		{402, runpod.ErrInsufficientFunds, runpod.CreateStop},
		{403, runpod.ErrForbidden, runpod.CreateNextType},
		{400, runpod.ErrNoCapacity, runpod.CreateNextType},
	} {
		srv.RefuseGPU(gpu, tc.status)
		_, err := c.CreatePod(ctx, gpuReq("r", gpu))
		if !errors.Is(err, tc.is) || runpod.ClassifyCreate(err) != tc.want {
			t.Errorf("%d: %v (outcome %v), want %v", tc.status, err, runpod.ClassifyCreate(err), tc.want)
		}
	}
	srv.RefuseGPU(gpu, 0)
	// The emulator's H100 is out of stock.
	if _, err := c.CreatePod(ctx, gpuReq("h", "NVIDIA H100 80GB HBM3")); !errors.Is(err, runpod.ErrNoCapacity) {
		t.Errorf("H100: %v", err)
	}
	// A 400 that is not about capacity (a type this cloud does not
	// offer) is reported as itself, never as no capacity; as the
	// document says of a 400 without errors, the next candidate is tried.
	_, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: "c", Image: "x", GPUTypeID: "NVIDIA H100 80GB HBM3", Cloud: runpod.CommunityCloud})
	if errors.Is(err, runpod.ErrNoCapacity) || runpod.ClassifyCreate(err) != runpod.CreateNextType {
		t.Errorf("not in community: %v", err)
	}
	if len(srv.Pods()) != 0 {
		t.Errorf("pods made: %+v", srv.Pods())
	}
}

func TestDataCentersAndVolumes(t *testing.T) {
	srv := checkedfake.NewTestServer(t, stocked())
	c := newClient(t, srv)
	ctx := context.Background()
	dcs, err := c.ListDataCenters(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, d := range dcs {
		for _, g := range d.GPUs {
			got[d.ID] = append(got[d.ID], g.ID+"="+string(g.Availability))
		}
	}
	want := map[string][]string{"DC-A": {"GPU A=LOW"}, "DC-B": {"GPU B=LOW"}}
	if diff := cmp.Diff(want, got); diff != "" || len(dcs) != 3 {
		t.Errorf("%d data centers, stock (-want +got):\n%s", len(dcs), diff)
	}
	if vs, err := c.ListNetworkVolumes(ctx); err != nil || len(vs) != 0 {
		t.Fatalf("volumes: %+v %v", vs, err)
	}
	v, err := c.CreateNetworkVolume(ctx, "data", 20, "DC-B")
	if err != nil || v.DataCenterID != "DC-B" || v.SizeGB != 20 || v.Name != "data" {
		t.Fatalf("create: %+v %v", v, err)
	}
	if _, err := c.CreateNetworkVolume(ctx, "data", 20, "DC-NOWHERE"); statusOf(err) != 400 {
		t.Errorf("unknown data center: %v", err)
	}
	if _, err := c.CreateNetworkVolume(ctx, "data", 5, "DC-B"); !errors.Is(err, runpod.ErrInvalid) {
		t.Errorf("5 GB: %v", err)
	}
	got2, err := c.GetNetworkVolume(ctx, v.ID)
	if err != nil || got2.DataCenterID != "DC-B" {
		t.Errorf("get: %+v %v", got2, err)
	}
	// A pod on the volume goes to its data center.
	p, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: "v", Image: "x", GPUTypeID: "GPU B",
		NetworkVolume: &runpod.NetworkMount{VolumeID: v.ID, Path: "/workspace"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.DeletePod(ctx, p.ID) })
	if dc := dataCenterOf(t, srv, c, p.ID); dc != "DC-B" {
		t.Errorf("pod on the volume in %q, want DC-B", dc)
	}
	if err := c.DeleteNetworkVolume(ctx, v.ID); !errors.Is(err, runpod.ErrConflict) {
		t.Errorf("delete while attached: %v", err)
	}
	if _, err := c.DeletePod(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteNetworkVolume(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteNetworkVolume(ctx, v.ID); err != nil {
		t.Errorf("a second delete: %v", err)
	}
	if vs, _ := c.ListNetworkVolumes(ctx); len(vs) != 0 {
		t.Errorf("left: %+v", vs)
	}
}

func statusOf(err error) int {
	var ae *runpod.APIError
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	return 0
}

// dataCenterOf reads a pod's data center, which Runpod shows once it is
// past PROVISIONING.
func dataCenterOf(t *testing.T, srv *runpodtest.Server, c *runpod.Client, id string) string {
	t.Helper()
	if _, err := srv.WaitStatus(context.Background(), id, runpodtest.StatusRunning); err != nil {
		t.Fatal(err)
	}
	p, err := c.GetPod(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p.DataCenterID
}

// TestBalanceRunsOut: with a balance of $0.01, creates work until the
// pods have been billed that much, then answer 402.
func TestBalanceRunsOut(t *testing.T) {
	clock := runpodtest.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	srv := checkedfake.NewTestServer(t, runpodtest.WithClock(clock.Now))
	srv.SetBalance(0.01)
	c := newClient(t, srv)
	ctx := context.Background()
	p, err := c.CreatePod(ctx, gpuReq("first", "NVIDIA RTX A5000"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WaitStatus(ctx, p.ID, runpodtest.StatusRunning); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour) // $0.27 at the A5000's price
	_, err = c.CreatePod(ctx, gpuReq("second", "NVIDIA RTX A5000"))
	if !errors.Is(err, runpod.ErrInsufficientFunds) || runpod.ClassifyCreate(err) != runpod.CreateStop {
		t.Errorf("after the balance: %v, want ErrInsufficientFunds", err)
	}
	if _, err := c.DeletePod(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
}
