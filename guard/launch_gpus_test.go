package guard_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// fallback is a launch against the fake over real HTTP, with a client
// whose looks for a lost create's pod are short.
type fallback struct {
	srv *runpodtest.Server
	api *runpod.Client
	rec guard.Record
}

func newFallback(t *testing.T, opts ...runpodtest.Option) *fallback {
	t.Helper()
	srv := runpodtest.NewTestServer(t, opts...)
	api := checkedfake.Client(t, srv, runpod.WithRetry(3, 20*time.Millisecond), runpod.WithCreateLooks(10*time.Millisecond, 20*time.Millisecond))
	return &fallback{srv: srv, api: api}
}

func (f *fallback) spec(t *testing.T, gpus ...string) guard.Spec {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "train.sh"), []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return guard.Spec{Job: guard.Job{Dir: dir, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}, GPUTypes: gpus}
}

func (f *fallback) launch(t *testing.T, spec guard.Spec, opts ...guard.Option) error {
	t.Helper()
	opts = append([]guard.Option{guard.WithPoll(20 * time.Millisecond), guard.WithStartTimeout(400 * time.Millisecond),
		guard.WithVerdictTimeout(time.Second), guard.WithSave(func(r guard.Record) error { f.rec = r; return nil })}, opts...)
	run, err := guard.Launch(context.Background(), f.api, spec, opts...)
	if run != nil {
		t.Fatalf("a run came back: %+v", run.Record())
	}
	return err
}

func (f *fallback) outcomes() []string {
	var out []string
	for _, a := range f.rec.Attempts {
		out = append(out, a.GPU+"="+string(a.Outcome))
	}
	return out
}

func (f *fallback) creates() int {
	n := 0
	for _, r := range f.srv.Requests() {
		if r.Method == "POST" && r.Path == "/v2/pods" {
			n++
		}
	}
	return n
}

func (f *fallback) noneBilling(t *testing.T) {
	t.Helper()
	for _, p := range f.srv.Pods() {
		if p.Billing || p.Status != runpodtest.StatusTerminated {
			t.Errorf("pod %s left %s", p.ID, p.Status)
		}
	}
	if s := f.srv.Secrets(); len(s) != 0 {
		t.Errorf("secrets left: %v", s)
	}
	// A pod was asked for, so the host key secret was made first (over
	// REST), and deleted again when no pod could be had.
	made, deleted := 0, 0
	for _, r := range f.srv.Requests() {
		switch {
		case r.Method == "POST" && r.Path == "/v2/account/secrets" && r.Status == 201:
			made++
		case r.Method == "DELETE" && strings.HasPrefix(r.Path, "/v2/account/secrets/") && r.Status == 204:
			deleted++
		}
	}
	if f.creates() > 0 && (made != 1 || deleted != 1) {
		t.Errorf("secrets made %d, deleted %d; want one of each", made, deleted)
	}
}

const (
	a5000 = "NVIDIA RTX A5000"
	a40   = "NVIDIA A40"
	h100  = "NVIDIA H100 80GB HBM3"
	r4090 = "NVIDIA GeForce RTX 4090"
)

// TestFallbackOrder: each kind of answer to a create either gives way to
// the next GPU type (capacity 400, 403) or stops the launch at once (402,
// 422, another 400), and every try is in the Record.
func TestFallbackOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(*runpodtest.Server)
		gpus    []string
		cloud   runpod.CloudType
		want    []string
		creates int
		is      error
		// text, when set, is in the error, which is not ErrNoGPU.
		text string
	}{
		{"capacity, 403, then 402 stops", func(s *runpodtest.Server) {
			s.RefuseGPU(a5000, 403)
			s.RefuseGPU(a40, 402)
		}, []string{h100, a5000, a40, r4090}, "",
			[]string{h100 + "=no_capacity", a5000 + "=forbidden", a40 + "=no_funds"}, 3, runpod.ErrInsufficientFunds, ""},
		{"every type exhausted", func(s *runpodtest.Server) { s.RefuseGPU(a5000, 400) },
			[]string{h100, a5000}, "",
			[]string{h100 + "=no_capacity", a5000 + "=no_capacity"}, 2, guard.ErrNoGPU, ""},
		{"422 stops", func(s *runpodtest.Server) {
			s.Fail("POST", "/v2/pods", runpodtest.Fault{Status: 422, Detail: "Request validation failed."})
		}, []string{a5000, a40}, "",
			[]string{a5000 + "=refused"}, 1, nil, ""},
		{"another 400 on every type is itself", func(s *runpodtest.Server) {
			s.Fail("POST", "/v2/pods", runpodtest.Fault{Status: 400, Detail: "gpu.allowedCudaVersions and gpu.minCudaVersion are mutually exclusive", Times: -1})
		}, []string{a5000, a40}, "",
			[]string{a5000 + "=rejected", a40 + "=rejected"}, 2, nil, "mutually exclusive"},
		{"an unknown 4xx stops as itself", func(s *runpodtest.Server) {
			s.Fail("POST", "/v2/pods", runpodtest.Fault{Status: 418, Detail: "There are no longer any instances available", Times: -1})
		}, []string{a5000, a40}, "",
			[]string{a5000 + "=refused"}, 1, nil, "418"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFallback(t)
			if tc.setup != nil {
				tc.setup(f.srv)
			}
			spec := f.spec(t, tc.gpus...)
			spec.Cloud = tc.cloud
			err := f.launch(t, spec)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("err %v, want %v", err, tc.is)
			}
			if tc.text != "" && (errors.Is(err, guard.ErrNoGPU) || !strings.Contains(fmt.Sprint(err), tc.text)) {
				t.Errorf("err %v, want %q in it and not ErrNoGPU", err, tc.text)
			}
			if diff := cmp.Diff(tc.want, f.outcomes()); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
			if n := f.creates(); n != tc.creates {
				t.Errorf("%d creates, want %d", n, tc.creates)
			}
			if len(f.srv.Pods()) != 0 {
				t.Errorf("pods made: %+v", f.srv.Pods())
			}
			f.noneBilling(t)
		})
	}
}

// TestFallbackOnStartTimeout: a pod not up within the start timeout is
// deleted before the next type is tried; the cost cap's price is the
// obtained type's.
func TestFallbackOnStartTimeout(t *testing.T) {
	f := newFallback(t, runpodtest.WithProvisioningDelay(time.Hour))
	var events []guard.Attempt
	err := f.launch(t, f.spec(t, a5000, a40), guard.WithEvents(func(e guard.Event) {
		if e.Kind == guard.EventAttempt {
			events = append(events, e.Attempt)
		}
	}))
	if !errors.Is(err, guard.ErrStartTimeout) {
		t.Fatalf("err %v, want ErrStartTimeout", err)
	}
	if diff := cmp.Diff([]string{a5000 + "=start_timeout", a40 + "=created"}, f.outcomes()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	pods := f.srv.Pods()
	if len(pods) != 2 || pods[0].GPUTypeID != a5000 || pods[1].GPUTypeID != a40 || f.rec.Attempts[0].PodID != pods[0].ID {
		t.Fatalf("pods %+v, attempts %+v", pods, f.rec.Attempts)
	}
	// The second pod was made only once the first was gone.
	if !pods[0].EndedAt.Before(pods[1].CreatedAt) && !pods[0].EndedAt.Equal(pods[1].CreatedAt) {
		t.Errorf("first pod ended %s, second made %s", pods[0].EndedAt, pods[1].CreatedAt)
	}
	if f.rec.GPU != a40 || f.rec.CostPerHr != 0.40 {
		t.Errorf("record: GPU %q at %v/h, want %s at 0.40", f.rec.GPU, f.rec.CostPerHr, a40)
	}
	if len(events) != 2 || !events[0].Outcome.Next() {
		t.Errorf("attempt events %v: the first does not try the next type", events)
	}
	f.noneBilling(t)
}

// TestUnknownOutcomeMakesOnePod: a create whose answer is lost (dropped,
// or a 500) after the fake made the pod ends with exactly that pod,
// adopted; one that made none is sent again once the looks found none,
// and still makes one pod. No second type is tried meanwhile.
func TestUnknownOutcomeMakesOnePod(t *testing.T) {
	for _, fault := range []runpodtest.Fault{{Lost: true}, {Lost: true, Status: 500}, {Drop: true}} {
		f := newFallback(t)
		f.srv.Fail("POST", "/v2/pods", fault)
		_ = f.launch(t, f.spec(t, a5000, a40), guard.WithStartTimeout(200*time.Millisecond))
		pods := f.srv.Pods()
		if len(pods) != 1 || pods[0].GPUTypeID != a5000 {
			t.Errorf("%+v: pods %+v, want one %s", fault, pods, a5000)
		}
		if len(f.rec.Attempts) != 1 || f.rec.Attempts[0].PodID != pods[0].ID || f.rec.Attempts[0].Outcome != guard.OutcomeCreated {
			t.Errorf("%+v: attempts %+v, want the pod adopted", fault, f.rec.Attempts)
		}
		if want := map[bool]int{true: 1, false: 2}[fault.Lost]; f.creates() != want {
			t.Errorf("%+v: %d creates, want %d", fault, f.creates(), want)
		}
		f.noneBilling(t)
	}
}

func TestAutoPicksCheapestInStock(t *testing.T) {
	types := []runpod.GPUType{
		{ID: "b", MemoryGB: 48, Secure: true, SecurePrice: 0.5, Availability: runpod.StockHigh},
		{ID: "a", MemoryGB: 48, Secure: true, SecurePrice: 0.5, Availability: runpod.StockLow},
		{ID: "c", MemoryGB: 80, Secure: true, SecurePrice: 0.5, Availability: runpod.StockLow},
		{ID: "cheap-none", MemoryGB: 80, Secure: true, SecurePrice: 0.1, Availability: runpod.StockNone},
		{ID: "small", MemoryGB: 16, Secure: true, SecurePrice: 0.2, Availability: runpod.StockHigh},
		{ID: "dear", MemoryGB: 80, Secure: true, SecurePrice: 3, Availability: runpod.StockHigh},
		{ID: "community-only", MemoryGB: 80, Community: true, CommunityPrice: 0.1, Availability: runpod.StockHigh},
	}
	var got []string
	for _, g := range guard.PickGPUs(types, guard.GPUFilter{MinVRAMGB: 24, MaxPricePerGPU: 2, InStock: true}) {
		got = append(got, g.ID)
	}
	if diff := cmp.Diff([]string{"c", "a", "b"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	// Against the fake: the cheapest type in stock is the first tried.
	f := newFallback(t)
	f.srv.RefuseGPU(a5000, 400) // cheapest, refused: gone from the stock
	_ = f.launch(t, f.spec(t, guard.AutoGPU), guard.WithStartTimeout(100*time.Millisecond))
	if len(f.rec.Attempts) == 0 || f.rec.Attempts[0].GPU != a40 {
		t.Errorf("auto tried %+v first, want %s (the cheapest in stock)", f.rec.Attempts, a40)
	}
	f.noneBilling(t)

	// Nothing fits: refused before any create, naming the filters.
	f = newFallback(t)
	spec := f.spec(t, guard.AutoGPU)
	spec.MinVRAMGB, spec.MaxPricePerGPU = 80, 0.5
	err := f.launch(t, spec)
	if !errors.Is(err, guard.ErrNoGPU) || !strings.Contains(err.Error(), "at least 80 GB of VRAM") || !strings.Contains(err.Error(), "$0.500/h") {
		t.Errorf("err %v", err)
	}
	if n := f.creates(); n != 0 {
		t.Errorf("%d creates", n)
	}
	f.noneBilling(t)
}

// TestDataCenterConflictRefused: a network volume pins the pod's data
// center; a list without it is refused before anything is created.
func TestDataCenterConflictRefused(t *testing.T) {
	f := newFallback(t)
	v := f.srv.AddNetworkVolume("vol1", 20)
	f.srv.SetVolumeDataCenter(v.ID, "DC-B")
	spec := f.spec(t, a5000)
	spec.NetworkVolumeID, spec.DataCenters = v.ID, []string{"DC-A"}
	err := f.launch(t, spec)
	var fe *podenv.FieldError
	if !errors.As(err, &fe) || fe.Field != "Spec.DataCenters" || !strings.Contains(err.Error(), "DC-B") {
		t.Errorf("err %v", err)
	}
	for _, r := range f.srv.Requests() {
		if r.Method != "GET" {
			t.Errorf("%s %s sent before the refusal", r.Method, r.Path)
		}
	}
	// The same volume with its own data center, and with auto, is taken
	// there (the fake has no A5000 in DC-B: capacity).
	for _, dcs := range [][]string{{"DC-B"}, {guard.AutoDataCenter}, nil} {
		spec.DataCenters = dcs
		f.rec = guard.Record{}
		err := f.launch(t, spec)
		if !errors.Is(err, guard.ErrNoGPU) || len(f.rec.Attempts) != 1 || !slices.Equal(f.rec.Attempts[0].DataCenters, []string{"DC-B"}) {
			t.Errorf("%v: %v, attempts %+v", dcs, err, f.rec.Attempts)
		}
	}
}

// TestMinCUDASent: the default image's CUDA floor goes on the create, and
// a floor above every machine's is a capacity refusal.
func TestMinCUDASent(t *testing.T) {
	f := newFallback(t)
	_ = f.launch(t, f.spec(t, a5000), guard.WithStartTimeout(100*time.Millisecond))
	var body string
	for _, r := range f.srv.Requests() {
		if r.Method == "POST" && r.Path == "/v2/pods" {
			body = string(r.Body)
		}
	}
	if !strings.Contains(body, `"minCudaVersion":"`+guard.DefaultMinCUDA+`"`) {
		t.Errorf("create body %s has no minCudaVersion %s", body, guard.DefaultMinCUDA)
	}
	f = newFallback(t)
	spec := f.spec(t, a5000)
	spec.MinCUDA = "13.0"
	if err := f.launch(t, spec); !errors.Is(err, guard.ErrNoGPU) {
		t.Errorf("CUDA 13.0: %v", err)
	}
	f.noneBilling(t)
}

// TestAutoDataCenters: with auto, each type's create asks for the data
// centers that stock it; a type stocked nowhere is not sent at all.
func TestAutoDataCenters(t *testing.T) {
	f := newFallback(t, runpodtest.WithGPUTypes(
		runpodtest.GPUType{ID: "GPU N", MemoryGB: 24, SecurePrice: 0.3, MaxCount: 8, Stock: map[string]int{"DC-A": 0}},
		runpodtest.GPUType{ID: "GPU B", MemoryGB: 48, SecurePrice: 0.9, MaxCount: 8, Stock: map[string]int{"DC-B": 2, "DC-C": 1}},
	))
	spec := f.spec(t, "GPU N", "GPU B")
	spec.DataCenters = []string{guard.AutoDataCenter}
	_ = f.launch(t, spec, guard.WithStartTimeout(100*time.Millisecond))
	if diff := cmp.Diff([]string{"GPU N=no_stock", "GPU B=created"}, f.outcomes()); diff != "" {
		t.Fatalf("attempts (-want +got):\n%s", diff)
	}
	if got := f.rec.Attempts[1].DataCenters; !slices.Equal(got, []string{"DC-B", "DC-C"}) {
		t.Errorf("GPU B asked for %v", got)
	}
	var bodies []string
	for _, r := range f.srv.Requests() {
		if r.Method == "POST" && r.Path == "/v2/pods" {
			bodies = append(bodies, string(r.Body))
		}
	}
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"dataCenterIds":["DC-B","DC-C"]`) {
		t.Errorf("creates %q", bodies)
	}
	f.noneBilling(t)
}

// TestGPUSpecRefused: GPU (or CPU) choices that cannot be met are
// refused, naming the field, before any request.
func TestGPUSpecRefused(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*guard.Spec)
	}{
		{"Spec.GPUTypes", func(s *guard.Spec) { s.GPUTypes = []string{guard.AutoGPU, a40} }},
		{"Spec.GPUTypes", func(s *guard.Spec) { s.GPUTypes = []string{a40, a40} }},
		{"Spec.GPUTypes", func(s *guard.Spec) { s.GPUTypes = []string{a40, " "} }},
		{"Spec.GPUTypes", func(s *guard.Spec) { s.GPUTypes, s.GPUTypeID = []string{a40}, a5000 }},
		{"Spec.GPUTypes", func(s *guard.Spec) { s.GPUTypes, s.MinVRAMGB = []string{a40}, 24 }},
		{"Spec.MaxPricePerGPU", func(s *guard.Spec) { s.GPUTypes, s.MaxPricePerGPU = []string{guard.AutoGPU}, -1 }},
		{"Spec.DataCenters", func(s *guard.Spec) { s.DataCenters = []string{"DC-A", guard.AutoDataCenter} }},
		{"Spec.DataCenters", func(s *guard.Spec) { s.DataCenters = []string{"a/b"} }},
		{"Spec.MinCUDA", func(s *guard.Spec) { s.MinCUDA = "12" }},
		// A CPU pod with a GPU pod's fields, a pod volume, a capacity
		// wait or a vCPU count Runpod does not take.
		{"Spec.CPUFlavor", func(s *guard.Spec) { s.CPUFlavor, s.GPUTypeID = "cpu3c", a40 }},
		{"Spec.CPUFlavor", func(s *guard.Spec) { s.CPUFlavor, s.GPUCount = "cpu3c", 2 }},
		{"Spec.MinCUDA", func(s *guard.Spec) { s.CPUFlavor, s.MinCUDA = "cpu3c", "12.4" }},
		{"Spec.VolumeGB", func(s *guard.Spec) { s.CPUFlavor, s.VolumeGB = "cpu3c", 20 }},
		{"Spec.CapacityWait", func(s *guard.Spec) { s.CPUFlavor, s.CapacityWait = "cpu3c", time.Minute }},
		{"Spec.VCPUs", func(s *guard.Spec) { s.CPUFlavor, s.VCPUs = "cpu3c", 3 }},
	} {
		f := newFallback(t)
		spec := f.spec(t)
		tc.edit(&spec)
		err := f.launch(t, spec)
		var fe *podenv.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err %v", tc.field, err)
		}
		if n := len(f.srv.Requests()); n != 0 {
			t.Errorf("%s: %d requests", tc.field, n)
		}
	}
}

// TestCostCapCountsEarlierPods: the cost cap is the run's, so a pod
// deleted for not coming up in time takes what it may have billed out of
// the next pod's budget (its env carries the rest, for the sweeper), and
// a cap spent that way stops the launch before another create.
func TestCostCapCountsEarlierPods(t *testing.T) {
	f := newFallback(t, runpodtest.WithProvisioningDelay(time.Hour))
	spec := f.spec(t, a5000, a40)
	spec.MaxCostUSD = 1
	if err := f.launch(t, spec); !errors.Is(err, guard.ErrStartTimeout) {
		t.Fatalf("err %v, want ErrStartTimeout", err)
	}
	pods := f.srv.Pods()
	if len(pods) != 2 || len(f.rec.Attempts) != 2 {
		t.Fatalf("pods %+v, attempts %+v", pods, f.rec.Attempts)
	}
	first := f.rec.Attempts[0]
	if first.CostUSD <= 0 {
		t.Fatalf("first attempt %+v: no cost counted", first)
	}
	got := pods[0].Env[podenv.MaxCostEnv] + " then " + pods[1].Env[podenv.MaxCostEnv]
	if want := "1 then " + strconv.FormatFloat(1-first.CostUSD, 'f', -1, 64); got != want {
		t.Errorf("pods' caps %s, want %s", got, want)
	}
	if f.rec.CostUSD < first.CostUSD {
		t.Errorf("run's cost %v leaves out the first pod's %v", f.rec.CostUSD, first.CostUSD)
	}
	f.noneBilling(t)

	f = newFallback(t, runpodtest.WithProvisioningDelay(time.Hour))
	spec = f.spec(t, a5000, a40)
	spec.MaxCostUSD = 1e-9
	if err := f.launch(t, spec); !errors.Is(err, guard.ErrCapSpent) {
		t.Fatalf("err %v, want ErrCapSpent", err)
	}
	if n := f.creates(); n != 1 {
		t.Errorf("%d creates after the cap was spent, want 1", n)
	}
	f.noneBilling(t)
}
