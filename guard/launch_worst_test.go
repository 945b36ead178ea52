package guard_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// The worst case is planned before anything is created, at the dearest
// of the GPU types the launch would try, and Launch keeps it.
func TestWorstCaseBeforeTheCreate(t *testing.T) {
	f := newFallback(t, runpodtest.WithGPUTypes(
		runpodtest.GPUType{ID: "GPU A", Name: "A", MemoryGB: 24, SecurePrice: 0.5, MaxCount: 8},
		runpodtest.GPUType{ID: "GPU B", Name: "B", MemoryGB: 48, SecurePrice: 2, MaxCount: 8},
	))
	spec := f.spec(t, "GPU A", "GPU B")
	spec.Deadline = time.Now().Add(2 * time.Hour)
	sw := &podenv.Sweeper{Every: 10 * time.Minute, Margin: 5 * time.Minute}
	w, err := guard.WorstCase(context.Background(), f.api, spec, sw)
	if err != nil {
		t.Fatal(err)
	}
	if w.CostPerHr != 2 {
		t.Errorf("priced at %v, want the dearest type's 2", w.CostPerHr)
	}
	// Two hours and the default extension of one, a tick for the delete.
	want := 3*time.Hour + podenv.DefaultInterval
	if d := w.Watchdog.For - want; w.Watchdog.Unbounded || d > time.Second || d < -time.Second {
		t.Errorf("watchdog bound %+v, want ~%s", w.Watchdog, want)
	}
	if math.Abs(w.Watchdog.USD-2*w.Watchdog.For.Hours()) > 1e-9 {
		t.Errorf("watchdog bound %+v is not at $2/h", w.Watchdog)
	}
	if w.Sweeper.Unbounded || w.NoSweeper || w.Sweeper.For < w.Watchdog.For {
		t.Errorf("sweeper bound %+v", w.Sweeper)
	}
	for _, r := range f.srv.Requests() {
		if r.Method != "GET" {
			t.Errorf("%s %s: a worst case creates nothing", r.Method, r.Path)
		}
	}
	_ = f.launch(t, spec)
	if f.rec.WorstCase == nil || f.rec.WorstCase.CostPerHr != 2 || !f.rec.WorstCase.NoSweeper {
		t.Errorf("the record keeps %+v", f.rec.WorstCase)
	}
}

// A CPU pod's worst case is priced from the CPU catalog, per vCPU, and
// asks the GPU catalog nothing.
func TestWorstCaseOfACPUPod(t *testing.T) {
	f := newFallback(t)
	spec := f.spec(t)
	spec.CPUFlavor, spec.VCPUs = "cpu3c", 4
	w, err := guard.WorstCase(context.Background(), f.api, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(w.CostPerHr-4*0.03) > 1e-9 || w.Watchdog.Unbounded || w.Watchdog.USD <= 0 {
		t.Errorf("worst case %+v, want priced at 4 vCPUs of $0.03/h", w)
	}
	for _, r := range f.srv.Requests() {
		if strings.HasPrefix(r.Path, "/v2/catalog/gpus") {
			t.Errorf("%s %s: a CPU pod's worst case read the GPU catalog", r.Method, r.Path)
		}
	}
}
