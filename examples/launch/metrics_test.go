package main_test

import (
	"context"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/testkit/scrape"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// launch sweep --every 1m --metrics-addr 127.0.0.1:0 says where it
// serves, and a scrape of that endpoint shows its first pass: an EXITED
// pod deleted by its rule, a pod without the run marker left, the API's
// answers counted.
func TestSweepServesMetrics(t *testing.T) {
	t.Parallel()
	w := &world{t: t, srv: runpodtest.NewTestServer(t, runpodtest.AllowPodsLeft()), stateDir: filepath.Join(t.TempDir(), "state")}
	api := checkedfake.Client(t, w.srv)
	ctx := context.Background()
	id, env := otherRun(t, time.Now())
	exited, err := api.CreatePod(ctx, runpod.CreatePodRequest{Name: podenv.PodName(id), Image: "x", GPUTypeID: "NVIDIA GeForce RTX 4090", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.CreatePod(ctx, runpod.CreatePodRequest{Name: podenv.PodName("unmarked"), Image: "x", GPUTypeID: "NVIDIA GeForce RTX 4090"}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.GetPod(ctx, exited.ID); err != nil { // RUNNING
		t.Fatal(err)
	}
	if err := w.srv.ExitPod(exited.ID, 0); err != nil {
		t.Fatal(err)
	}

	p := w.start("sweep", "--every", "1m", "--metrics-addr", "127.0.0.1:0", "--exited-grace", "1ms", "--json")
	p.waitOutput("serving metrics on http://", patience)
	m := regexp.MustCompile(`serving metrics on (http://127\.0\.0\.1:[0-9]+/metrics)`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no bound address in %q", p.stderr.String())
	}
	var got map[string]float64
	shtest.Eventually(t, patience, func() bool {
		got, err = scrape.Get(m[1])
		return err == nil && got[`overbrainer_sweep_passes_total{result="ok"}`] >= 1
	}, "no sweep pass in the metrics: %v, %v", got, err)
	for name, want := range map[string]float64{
		`overbrainer_sweep_pods_judged_total{rule="exited"}`:   1,
		`overbrainer_sweep_pods_deleted_total{rule="exited"}`:  1,
		`overbrainer_sweep_pods_judged_total{rule="unmarked"}`: 1,
		`overbrainer_sweep_unmarked_pods`:                      1,
		`overbrainer_sweep_cannot_judge_pods`:                  0,
		`overbrainer_sweep_passes_total{result="error"}`:       0,
		`overbrainer_runpod_rate_limited_total`:                0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if got[`overbrainer_runpod_requests_total{code="200"}`] < 1 || got[`overbrainer_sweep_last_success_timestamp_seconds`] < float64(time.Now().Add(-time.Hour).Unix()) ||
		got[`overbrainer_sweep_duration_seconds_count`] != 1 || got["go_goroutines"] < 1 {
		t.Errorf("metrics %v", got)
	}
	if pod, _ := w.srv.Pod(exited.ID); pod.Status != runpodtest.StatusTerminated {
		t.Errorf("the exited pod is %s", pod.Status)
	}
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 0 && code != 130 {
		t.Errorf("exit %d", code)
	}
}

// --metrics-addr without --every, or not host:port, is a bad command line.
func TestSweepMetricsAddrNeedsEvery(t *testing.T) {
	t.Parallel()
	w := &world{t: t, srv: runpodtest.NewTestServer(t), stateDir: filepath.Join(t.TempDir(), "state")}
	for _, args := range [][]string{
		{"sweep", "--metrics-addr", "127.0.0.1:0"},
		{"sweep", "--every", "1m", "--metrics-addr", "9090"},
	} {
		p := w.run(args...)
		if p.code != 2 {
			t.Errorf("%v: exit %d, want 2", args, p.code)
		}
		mustContain(t, "stderr", p.stderr.String(), "--metrics-addr", "usage:")
	}
}
