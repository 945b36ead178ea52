package doctor_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/doctor"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

func TestMain(m *testing.M) { runpodtest.Main(m) }

// Each way the live API may differ from our text, played by the emulator,
// makes the doctor fail (or warn, for a member it does not know) naming
// the check that proves it; with none, every check passes. Whatever
// fails, nothing is left: NewTestServer fails a test that leaves a pod
// billing, and the test a secret.
func TestDoctorNamesEachDifference(t *testing.T) {
	shtest.NeedPods(t, localpod.Check())
	for _, tc := range []struct {
		name  string
		drift runpodtest.Drift
		noPod bool
		fail  []string // the checks that fail (among others); none: no check fails
		warn  []string // the checks that warn (among others)
	}{
		{name: "none"},
		{name: "pod key DELETE 403", drift: runpodtest.Drift{PodKeyDelete: 403}, fail: []string{doctor.CheckPodDelete}},
		{name: "pod key DELETE 404", drift: runpodtest.Drift{PodKeyDelete: 404}, fail: []string{doctor.CheckPodDelete}},
		{name: "dashed placeholder unresolved", drift: runpodtest.Drift{DashUnresolved: true}, fail: []string{doctor.CheckPodReady}},
		{name: "413 below 100 KB", drift: runpodtest.Drift{MaxCreateBody: 10000}, fail: []string{doctor.CheckPodBody}},
		{name: "whole number as 50.0", drift: runpodtest.Drift{WholeAsFraction: true}, noPod: true, fail: []string{doctor.CheckGPUTypes}},
		{name: "unknown member", drift: runpodtest.Drift{UnknownMember: "spendLimit"}, noPod: true, warn: []string{doctor.CheckGPUTypes, doctor.CheckOpenAPI}},
		{name: "missing member", drift: runpodtest.Drift{MissingMember: "maxCount"}, noPod: true, fail: []string{doctor.CheckGPUTypes, doctor.CheckOpenAPI}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := runpodtest.NewTestServer(t, runpodtest.WithPodRunner(), runpodtest.WithDrift(tc.drift))
			rep := doctor.Run(context.Background(), doctor.Options{
				Key: srv.APIKey(), BaseURL: srv.BaseURL(), NoPod: tc.noPod, Timeout: time.Minute,
				BootGrace: 15 * time.Second, Interval: time.Second, DeleteCodes: srv.DeleteStatuses,
			})
			var failed, warned []string
			for _, c := range rep.Checks {
				switch c.Result {
				case doctor.ResultFail:
					failed = append(failed, c.Name)
				case doctor.ResultWarn:
					warned = append(warned, c.Name)
				}
				t.Logf("%s: %s (%s)", c.Name, c.Result, c.Detail)
			}
			if len(tc.fail) == 0 && len(failed) > 0 {
				t.Errorf("failed %q, want none", failed)
			}
			for _, f := range tc.fail {
				if !slices.Contains(failed, f) {
					t.Errorf("failed %q, want %q among them", failed, f)
				}
			}
			if len(tc.warn) == 0 && len(tc.fail) == 0 && len(warned) > 0 {
				t.Errorf("warned %q, want none", warned)
			}
			for _, w := range tc.warn {
				if !slices.Contains(warned, w) {
					t.Errorf("warned %q, want %q among them", warned, w)
				}
			}
			if c, _ := rep.Check(doctor.CheckCleanup); c.Result != doctor.ResultOK {
				t.Errorf("cleanup: %s (%s)", c.Result, c.Detail)
			}
			if s := srv.Secrets(); len(s) > 0 {
				t.Errorf("%d secrets left", len(s))
			}
		})
		// Ctrl-C mid-way, once the pod (or, without one, the secret) is
		// made: what was made is removed all the same, and the checks
		// the interrupt kept from ending are skipped, never failed.
		t.Run(tc.name+", interrupted", func(t *testing.T) {
			t.Parallel()
			srv := runpodtest.NewTestServer(t, runpodtest.WithPodRunner(), runpodtest.WithDrift(tc.drift))
			made := "/v2/pods"
			if tc.noPod {
				made = "/v2/account/secrets"
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rep := doctor.Run(ctx, doctor.Options{
				Key: srv.APIKey(), BaseURL: srv.BaseURL(), NoPod: tc.noPod, Timeout: time.Minute,
				BootGrace: 15 * time.Second, Interval: time.Second, DeleteCodes: srv.DeleteStatuses,
				Transport: cancelAfter{http.MethodPost, made, cancel},
			})
			if !rep.Interrupted {
				t.Errorf("not interrupted: %+v", rep.Checks)
			}
			for _, c := range rep.Checks {
				if c.Result == doctor.ResultFail && strings.Contains(c.Detail, context.Canceled.Error()) {
					t.Errorf("%s failed for the interrupt: %s", c.Name, c.Detail)
				}
			}
			if c, _ := rep.Check(doctor.CheckCleanup); c.Result != doctor.ResultOK {
				t.Errorf("cleanup: %s (%s)", c.Result, c.Detail)
			}
			if p := srv.Billing(); len(p) > 0 {
				t.Errorf("%d pods left billing", len(p))
			}
			if s := srv.Secrets(); len(s) > 0 {
				t.Errorf("%d secrets left", len(s))
			}
		})
	}
}

// cancelAfter cancels once the answer to a method on path came back.
type cancelAfter struct {
	method, path string
	cancel       context.CancelFunc
}

func (c cancelAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if req.Method == c.method && req.URL.Path == c.path {
		c.cancel()
	}
	return resp, err
}

// The test pod is a CPU pod where the API offers one (the emulator's CPU
// catalog), else the cheapest GPU in stock: both pass every check.
func TestDoctorPodCPUElseGPU(t *testing.T) {
	shtest.NeedPods(t, localpod.Check())
	for _, tc := range []struct {
		name   string
		noCPUs bool
	}{{name: "CPU catalog"}, {name: "no CPU catalog", noCPUs: true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := runpodtest.NewTestServer(t, runpodtest.WithPodRunner())
			if tc.noCPUs {
				srv.Fail(http.MethodGet, "/v2/catalog/cpus", runpodtest.Fault{Status: http.StatusNotFound, Times: -1})
			}
			rep := doctor.Run(context.Background(), doctor.Options{
				Key: srv.APIKey(), BaseURL: srv.BaseURL(), Timeout: time.Minute,
				BootGrace: 15 * time.Second, Interval: time.Second, DeleteCodes: srv.DeleteStatuses,
			})
			for _, c := range rep.Failed() {
				t.Errorf("%s: %s", c.Name, c.Detail)
			}
			pods := srv.Pods()
			if len(pods) != 1 {
				t.Fatalf("%d pods made, want 1", len(pods))
			}
			cpu := pods[0].CPUFlavor != ""
			if cpu == tc.noCPUs || rep.CPU != cpu || rep.GPU == "" {
				t.Errorf("a CPU pod: %v (report: %v, %q), want %v", cpu, rep.CPU, rep.GPU, !tc.noCPUs)
			}
		})
	}
}
