package runpod

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var rtx4090 = GPUType{
	ID: "NVIDIA GeForce RTX 4090", Name: "RTX 4090", Manufacturer: "NVIDIA", MemoryGB: 24,
	Secure: true, Community: true, SecurePrice: 0.44, CommunityPrice: 0.31,
	MaxSecureCount: 8, MaxCommunityCount: 4,
}

var h100 = GPUType{
	ID: "NVIDIA H100 80GB HBM3", Name: "H100 SXM", Manufacturer: "NVIDIA", MemoryGB: 80,
	Secure: true, SecurePrice: 2.69, MaxSecureCount: 8,
}

func TestListGPUTypes(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /catalog/gpus", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		writeJSON(w, http.StatusOK, map[string]any{"gpus": []GPUType{rtx4090, h100}})
	})
	gpus, err := c.ListGPUTypes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]GPUType{rtx4090, h100}, gpus); diff != "" {
		t.Errorf("catalog (-want +got):\n%s", diff)
	}
}

func TestGetGPUType(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /catalog/gpus/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != rtx4090.ID {
			writeProblem(w, http.StatusNotFound, "gpu type not found")
			return
		}
		writeJSON(w, http.StatusOK, rtx4090)
	})
	g, err := c.GetGPUType(context.Background(), rtx4090.ID)
	if err != nil || !cmp.Equal(*g, rtx4090) {
		t.Fatalf("%+v %v", g, err)
	}
	if got := fs.last().path; got != apiBase+"/catalog/gpus/NVIDIA%20GeForce%20RTX%204090" {
		t.Errorf("path %q", got)
	}
	if _, err := c.GetGPUType(context.Background(), "NVIDIA GeForce GTX 480"); !errors.Is(err, ErrNotFound) {
		t.Errorf("err %v", err)
	}
}

func TestPricePerHour(t *testing.T) {
	for _, tc := range []struct {
		g     GPUType
		cloud CloudType
		count int
		price float64
		ok    bool
	}{
		{rtx4090, SecureCloud, 2, 0.88, true},
		{rtx4090, "", 1, 0.44, true},
		{rtx4090, CommunityCloud, 4, 1.24, true},
		{rtx4090, CommunityCloud, 0, 0.31, true},
		{h100, CommunityCloud, 1, 0, false},
		{h100, "PRIVATE", 1, 0, false},
	} {
		p, ok := tc.g.PricePerHour(tc.cloud, tc.count)
		if ok != tc.ok || (ok && (p-tc.price > 1e-9 || tc.price-p > 1e-9)) {
			t.Errorf("%s %s ×%d: %v %v, want %v %v", tc.g.Name, tc.cloud, tc.count, p, ok, tc.price, tc.ok)
		}
	}
}
