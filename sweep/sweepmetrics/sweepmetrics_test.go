package sweepmetrics_test

import (
	"context"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/overbrainer/overbrainer-go/internal/testkit/scrape"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/sweep"
	"github.com/overbrainer/overbrainer-go/sweep/sweepmetrics"
)

// Real keys, for an env that validates.
const (
	clientKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcomaqb8ckRepkDHH1CfKQjIlXD1MGWnmwCZJZcsNG3"
	hostKey   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV"
)

func scrapeOf(t *testing.T, url string) map[string]float64 {
	t.Helper()
	got, err := scrape.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// One pass over an account with a pod past its deadline, one that cannot
// be judged and one without the run marker, through a 429: the scrape
// shows each by rule, the dollars past the bound, the pass and the 429.
func TestMetricsOfAPass(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	clock := runpodtest.NewManualClock(now)
	srv := runpodtest.NewTestServer(t, runpodtest.WithClock(clock.Now), runpodtest.AllowPodsLeft())
	reg := prometheus.NewRegistry()
	m := sweepmetrics.New(reg)
	c := checkedfake.Client(t, srv, runpod.WithRetry(4, 50*time.Millisecond),
		runpod.WithHTTPClient(&http.Client{Timeout: time.Minute, Transport: m.RoundTripper(nil)}))
	ctx := context.Background()
	create := func(name string, env map[string]string) {
		p, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: name, Image: "x", GPUTypeID: "NVIDIA GeForce RTX 4090", Env: env})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetPod(ctx, p.ID); err != nil { // RUNNING from now
			t.Fatal(err)
		}
	}
	envOf := func(id string) map[string]string {
		env, err := podenv.Settings{RunID: id, Workdir: "/workspace/overbrainer", AuthorizedKey: clientKey, Claim: hostKey,
			Rules: podenv.Rules{Deadline: now.Add(time.Hour), HardDeadline: true}}.Env()
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	create(podenv.PodName("late"), envOf("late"))
	odd := envOf("odd")
	odd[podenv.DeadlineEnv] = "soon"
	create(podenv.PodName("odd"), odd)
	create(podenv.PodName("unmarked"), nil)
	clock.Advance(2 * time.Hour) // late is an hour past its hard deadline
	srv.Fail("GET", "/v2/pods", runpodtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "0"})

	rep, err := sweep.Once(ctx, c, sweep.Policy{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	m.Observe(rep, err)
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer hs.Close()
	got := scrapeOf(t, hs.URL+"/metrics")

	// At $0.69/h, an hour past the deadline less the margin of 5m.
	price := srv.Pods()[0].CostPerHr
	want := map[string]float64{
		`overbrainer_sweep_pods_judged_total{rule="deadline"}`:     1,
		`overbrainer_sweep_pods_judged_total{rule="cannot_judge"}`: 1,
		`overbrainer_sweep_pods_judged_total{rule="unmarked"}`:     1,
		`overbrainer_sweep_pods_deleted_total{rule="deadline"}`:    1,
		`overbrainer_sweep_pods_deleted_total{rule="exited"}`:      0,
		`overbrainer_sweep_cannot_judge_pods`:                      1,
		`overbrainer_sweep_unmarked_pods`:                          1,
		`overbrainer_sweep_unbounded_pods`:                         1, // odd
		`overbrainer_sweep_committed_usd`:                          0, // late is deleted
		`overbrainer_sweep_delete_failures_total{kind="pod"}`:      0,
		`overbrainer_sweep_passes_total{result="ok"}`:              1,
		`overbrainer_sweep_passes_total{result="error"}`:           0,
		`overbrainer_sweep_duration_seconds_count`:                 1,
		`overbrainer_sweep_last_success_timestamp_seconds`:         float64(clock.Now().Unix()),
		`overbrainer_sweep_past_bound_usd_total{rule="deadline"}`:  price * (55 * time.Minute).Hours(),
		`overbrainer_runpod_rate_limited_total`:                    1,
		`overbrainer_runpod_requests_total{code="429"}`:            1,
		`overbrainer_runpod_api_errors_total`:                      1,
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok || g < v-1e-6 || g > v+1e-6 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if got[`overbrainer_runpod_requests_total{code="200"}`] < 1 {
		t.Error("no 200 counted")
	}

	// A pass whose listing fails is an error; the pods' gauges stay.
	srv.Fail("GET", "/v2/pods", runpodtest.Fault{Status: http.StatusInternalServerError, Times: -1})
	rep, err = sweep.Once(ctx, c, sweep.Policy{Now: clock.Now})
	if err == nil {
		t.Fatal("a failed listing swept")
	}
	m.Observe(rep, err)
	srv.ClearFaults()
	got = scrapeOf(t, hs.URL+"/metrics")
	if got[`overbrainer_sweep_passes_total{result="error"}`] != 1 || got[`overbrainer_sweep_cannot_judge_pods`] != 1 ||
		got[`overbrainer_runpod_requests_total{code="500"}`] < 1 || got[`overbrainer_runpod_api_errors_total`] < 2 {
		t.Errorf("after a failed pass: %v", got)
	}
}

// A host-key secret the pass could not judge is counted, as a pod is.
func TestMetricsCannotJudgeSecrets(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := sweepmetrics.New(reg)
	m.Observe(sweep.Report{Secrets: 2, Decisions: []sweep.Decision{
		{Secret: "overbrainer_host_key_20200101-000000-abcd", Rule: sweep.RuleCannotJudge},
		{Secret: "overbrainer_host_key_20200101-000000-abce", Rule: sweep.RuleKeep},
	}}, nil)
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer hs.Close()
	got := scrapeOf(t, hs.URL+"/metrics")
	if v, ok := got[`overbrainer_sweep_cannot_judge_secrets`]; !ok || v != 1 {
		t.Errorf("overbrainer_sweep_cannot_judge_secrets = %v (present %v), want 1", v, ok)
	}
}
