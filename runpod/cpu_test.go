package runpod

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

// A CPU pod's create sends cpu {id, vcpuCount} and no gpu, as the
// document's CreatePodRequest says (the fake holds the exchange to it;
// its answer, a refusal, is not what is tested).
func TestCreateCPUPod(t *testing.T) {
	c, fs := setup(t)
	fs.handle("POST /pods", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusUnprocessableEntity, "not this time")
	})
	req := simpleCreate("cpu-pod")
	req.GPUTypeID, req.CPUFlavorID, req.VCPUCount = "", "cpu3c", 4
	if _, err := c.CreatePod(context.Background(), req); err == nil {
		t.Fatal("created against a fake that refuses")
	}
	fs.mu.Lock()
	body := fs.exchanges[0].body
	fs.mu.Unlock()
	var sent map[string]any
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	cpu, _ := sent["cpu"].(map[string]any)
	if _, gpu := sent["gpu"]; gpu || cpu["id"] != "cpu3c" || cpu["vcpuCount"] != 4.0 {
		t.Errorf("sent %s", body)
	}
}

// A CPU pod's request is refused when it mixes in a GPU pod's fields or
// asks for a vCPU count Runpod does not take.
func TestCreateCPUPodRefused(t *testing.T) {
	for name, edit := range map[string]func(*CreatePodRequest){
		"with a GPU type":     func(r *CreatePodRequest) { r.GPUTypeID = "NVIDIA GeForce RTX 4090" },
		"with a CUDA floor":   func(r *CreatePodRequest) { r.MinCUDA = "12.4" },
		"3 vCPUs":             func(r *CreatePodRequest) { r.VCPUCount = 3 },
		"a persistent volume": func(r *CreatePodRequest) { r.PersistentVolume = &PersistentMount{SizeGB: 20, Path: "/workspace"} },
		"vCPUs without flavor": func(r *CreatePodRequest) {
			r.CPUFlavorID, r.GPUTypeID, r.VCPUCount = "", "NVIDIA GeForce RTX 4090", 4
		},
	} {
		req := simpleCreate("cpu-pod")
		req.GPUTypeID, req.CPUFlavorID = "", "cpu3c"
		edit(&req)
		if _, err := req.body(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestListCPUTypes(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /catalog/cpus", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"cpus": []map[string]any{{
			"id": "cpu3c", "name": "Compute-Optimized", "group": "Gen 3", "vcpu": map[string]int{"min": 2, "max": 32},
			"ramGbPerVcpu": 2, "price": map[string]float64{"securePerVcpu": 0.04, "serverlessPerVcpu": 0.03},
		}}})
	})
	cpus, err := c.ListCPUTypes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) != 1 || cpus[0].ID != "cpu3c" || cpus[0].VCPU.Min != 2 || cpus[0].Price.SecurePerVCPU != 0.04 {
		t.Errorf("cpus %+v", cpus)
	}
}
