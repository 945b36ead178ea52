package runpod

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCatalogQuery: the stock options become the query Runpod's OpenAPI
// document names (the setup checks each request against it).
func TestCatalogQuery(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /catalog/gpus", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"gpus": []any{
			map[string]any{"id": "A", "name": "A", "pool": nil, "manufacturer": "NVIDIA", "memory": 24, "secure": true, "community": false,
				"price": map[string]any{"secure": 0.5, "community": 0}, "maxCount": map[string]any{"secure": 8, "community": 0},
				"availability": "LOW", "dataCenters": []any{map[string]any{"id": "DC-1", "name": "DC 1", "availability": "LOW"}}},
			map[string]any{"id": "B", "name": "B", "pool": nil, "manufacturer": "NVIDIA", "memory": 48, "secure": true, "community": true,
				"price": map[string]any{"secure": 0.9, "community": 0.7}, "maxCount": map[string]any{"secure": 8, "community": 4},
				"availability": "NONE"},
		}})
	})
	gpus, err := c.ListGPUTypes(context.Background(), StockCloud(CommunityCloud), StockCount(2), StockMinCUDA("12.4"), StockDataCenter("DC-1"))
	if err != nil || len(gpus) != 1 || gpus[0].ID != "A" || gpus[0].MaxCount(SecureCloud) != 8 {
		t.Fatalf("%+v %v", gpus, err)
	}
	q, _ := url.ParseQuery(fs.last().query)
	want := url.Values{"include": {"AVAILABILITY"}, "product": {"POD"}, "cloud": {"COMMUNITY"}, "count": {"2"}, "minCudaVersion": {"12.4"}}
	if diff := cmp.Diff(want, q); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
	if _, err := c.ListGPUTypes(context.Background()); err != nil || fs.last().query != "" {
		t.Errorf("no options: query %q, %v", fs.last().query, err)
	}
}

// TestCreatePodLooksOnSchedule: after a create lost in a 504, the pod is
// looked for after each of the configured waits, and found on the third.
func TestCreatePodLooksOnSchedule(t *testing.T) {
	c, fs := setup(t, WithCreateLooks(time.Second, 2*time.Second, 3*time.Second, 4*time.Second))
	store := &podStore{}
	var lists atomic.Int32
	store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
		make()
		writeProblem(w, http.StatusGatewayTimeout, "timeout")
	}
	store.onList = func(w http.ResponseWriter, r *http.Request) bool {
		if lists.Add(1) > 2 {
			return false
		}
		writeJSON(w, http.StatusOK, map[string]any{"pods": []any{}, "pagination": lastPage})
		return true
	}
	store.serve(fs)
	if _, err := c.CreatePod(context.Background(), simpleCreate("overbrainer-sched")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, fs.recordedWaits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if store.posts.Load() != 1 {
		t.Errorf("%d creates", store.posts.Load())
	}
	for _, bad := range [][]time.Duration{nil, {0}, {-time.Second}, {11 * time.Minute}} {
		if _, err := New(testKey, WithCreateLooks(bad...)); !errors.Is(err, ErrInvalid) {
			t.Errorf("WithCreateLooks(%v): %v", bad, err)
		}
	}
	if cmp.Diff([]time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second}, DefaultCreateLooks) != "" {
		t.Errorf("default looks %v: not at 5, 15, 30 and 60 s", DefaultCreateLooks)
	}
}

func TestVolumeCalls(t *testing.T) {
	c, fs := setup(t)
	vol := map[string]any{"id": "v1", "name": "data", "size": 20, "dataCenter": "DC-1", "type": "STANDARD"}
	fs.handle("POST /network-volumes", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusCreated, vol) })
	fs.handle("GET /network-volumes", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"networkVolumes": []any{vol}})
	})
	fs.handle("DELETE /network-volumes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "v1" {
			writeProblem(w, http.StatusNotFound, "network volume not found")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	fs.handle("GET /catalog/datacenters", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"dataCenters": []any{map[string]any{"id": "DC-1", "name": "DC 1", "region": "EUROPE",
			"globalNetwork": false, "networkVolumeTypes": []string{"STANDARD"}, "compliance": []string{},
			"gpuAvailability": []any{map[string]any{"id": "A", "name": "A", "availability": "HIGH"}, map[string]any{"id": "B", "name": "B", "availability": "NONE"}}}}})
	})
	ctx := context.Background()
	v, err := c.CreateNetworkVolume(ctx, "data", 20, "DC-1")
	if err != nil || v.ID != "v1" || v.DataCenterID != "DC-1" {
		t.Fatalf("create: %+v %v", v, err)
	}
	if vs, err := c.ListNetworkVolumes(ctx); err != nil || len(vs) != 1 || vs[0].SizeGB != 20 {
		t.Errorf("list: %+v %v", vs, err)
	}
	if err := c.DeleteNetworkVolume(ctx, "v1"); err != nil {
		t.Errorf("delete: %v", err)
	}
	if err := c.DeleteNetworkVolume(ctx, "gone"); err != nil {
		t.Errorf("delete of a gone volume: %v", err)
	}
	dcs, err := c.ListDataCenters(ctx, true)
	if err != nil || len(dcs) != 1 || cmp.Diff([]string{"A (HIGH)"}, dcs[0].InStock()) != "" {
		t.Errorf("data centers: %+v %v", dcs, err)
	}
	if q := fs.last().query; q != "include=GPU_AVAILABILITY" {
		t.Errorf("query %q", q)
	}
	for _, bad := range []error{
		func() error { _, err := c.CreateNetworkVolume(ctx, "", 20, "DC-1"); return err }(),
		func() error { _, err := c.CreateNetworkVolume(ctx, "x", 5000, "DC-1"); return err }(),
		func() error { _, err := c.CreateNetworkVolume(ctx, "x", 20, "../a"); return err }(),
		c.DeleteNetworkVolume(ctx, "a/b"),
	} {
		if !errors.Is(bad, ErrInvalid) {
			t.Errorf("%v, want ErrInvalid", bad)
		}
	}
	if n := fs.count("POST /network-volumes"); n != 1 {
		t.Errorf("%d creates sent", n)
	}
}

func TestInsufficientFundsAndCapacity(t *testing.T) {
	for _, tc := range []struct {
		status  int
		detail  string
		is      error
		outcome CreateOutcome
	}{
		{402, "Insufficient balance.", ErrInsufficientFunds, CreateStop},
		{400, "There are no longer any instances available with the requested specifications. Please refresh and try again.", ErrNoCapacity, CreateNextType},
		{403, "no access to this pool", ErrForbidden, CreateNextType},
		// Another 400: Runpod's text says to try the next candidate, and
		// it is no capacity.
		{400, "gpu.allowedCudaVersions and gpu.minCudaVersion are mutually exclusive", ErrInvalid, CreateNextType},
		{422, "Request validation failed.", ErrInvalid, CreateStop},
		// The status first: the wording of capacity on another 4xx, or
		// on a 400 listing validation errors, is not capacity.
		{418, "There are no longer any instances available with the requested specifications.", ErrInvalid, CreateStop},
		{400, "There are no longer any instances available with the requested specifications.\x00errors", ErrInvalid, CreateStop},
	} {
		c, fs := setup(t)
		fs.handle("POST /pods", func(w http.ResponseWriter, r *http.Request) {
			if detail, ok := strings.CutSuffix(tc.detail, "\x00errors"); ok {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(tc.status)
				_ = json.NewEncoder(w).Encode(map[string]any{"title": "Bad Request", "status": tc.status, "detail": detail, "errors": []string{"$.gpu.count: must be at least 1"}})
				return
			}
			writeProblem(w, tc.status, tc.detail)
		})
		_, err := c.CreatePod(context.Background(), simpleCreate("n"))
		if tc.is != ErrInvalid && !errors.Is(err, tc.is) {
			t.Errorf("%d %s: %v, want %v", tc.status, tc.detail, err, tc.is)
		}
		if tc.is == ErrInvalid && (errors.Is(err, ErrNoCapacity) || errors.Is(err, ErrInsufficientFunds)) {
			t.Errorf("%d %s: %v matches a sentinel it should not", tc.status, tc.detail, err)
		}
		if got := ClassifyCreate(err); got != tc.outcome {
			t.Errorf("%d %s: outcome %v, want %v", tc.status, tc.detail, got, tc.outcome)
		}
	}
	if ClassifyCreate(ErrPodMayExist) != CreateUnknown {
		t.Error("ErrPodMayExist is not an unknown outcome")
	}
}
