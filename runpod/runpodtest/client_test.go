package runpodtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// The fake and the client are written apart, each from openapi_v2.json;
// the package runpodtest never imports the client. These tests check that
// the two agree on every call the client makes.

func newClient(t *testing.T, srv *runpodtest.Server, opts ...runpod.Option) *runpod.Client {
	t.Helper()
	return checkedfake.Client(t, srv, append([]runpod.Option{runpod.WithRetry(4, 50*time.Millisecond)}, opts...)...)
}

func TestClientAgreesWithTheFake(t *testing.T) {
	srv := checkedfake.NewTestServer(t)
	c := newClient(t, srv)
	ctx := context.Background()

	gpus, err := c.ListGPUTypes(ctx)
	if err != nil || len(gpus) != len(runpodtest.DefaultGPUTypes()) {
		t.Fatalf("ListGPUTypes: %d types, %v", len(gpus), err)
	}
	srv.AddNetworkVolume("vol1", 20)
	words := []string{"bash", "-c", "echo 'it''s' \"$HOME\" \\ end"}
	pod, err := c.CreatePod(ctx, runpod.CreatePodRequest{
		Name:          "contract",
		Image:         "runpod/base",
		GPUTypeID:     "NVIDIA GeForce RTX 4090",
		GPUCount:      2,
		Ports:         []string{"22/tcp"},
		Env:           map[string]string{"K": "{{ RUNPOD_SECRET_k }}"},
		Command:       words,
		NetworkVolume: &runpod.NetworkMount{VolumeID: "vol1", Path: "/workspace"},
	})
	if err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	fake, _ := srv.Pod(pod.ID)
	if !slices.Equal(fake.Words, words) || fake.GPUCount != 2 || fake.NetworkVolumeID != "vol1" || fake.Env["K"] != "{{ RUNPOD_SECRET_k }}" {
		t.Errorf("the fake got %+v", fake)
	}

	got, err := c.GetPod(ctx, pod.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "RUNNING" || got.CostPerHr != fake.CostPerHr {
		t.Errorf("GetPod: %s at %v, the fake bills %v", got.Status, got.CostPerHr, fake.CostPerHr)
	}
	if ip, port, ok := got.PublicPort(22); !ok || ip != "127.0.0.1" || port != fake.SSHPort {
		t.Errorf("PublicPort(22) = %s %d %v, the fake maps %d", ip, port, ok, fake.SSHPort)
	}
	if cmd, err := got.Command(); err != nil || !slices.Equal(cmd, words) {
		t.Errorf("Command() = %q, %v", cmd, err)
	}
	if perHour, err := c.PodCostPerHour(ctx, pod.ID); err != nil || perHour != fake.CostPerHr {
		t.Errorf("PodCostPerHour = %v, %v", perHour, err)
	}
	if list, err := c.ListPods(ctx, runpod.ListPodsOptions{Name: "contract"}); err != nil || len(list) != 1 {
		t.Errorf("ListPods: %d, %v", len(list), err)
	}

	if p, err := c.PodAction(ctx, pod.ID, runpod.ActionStop); err != nil || p.Status != "EXITED" {
		t.Errorf("stop: %v %v", p, err)
	}
	if _, err := c.PodAction(ctx, pod.ID, runpod.ActionStop); !errors.Is(err, runpod.ErrConflict) {
		t.Errorf("stopping a stopped pod: %v, want ErrConflict", err)
	}
	if p, err := c.PodAction(ctx, pod.ID, runpod.ActionStart); err != nil || p.Status != "RUNNING" {
		t.Errorf("start: %v %v", p, err)
	}

	v, err := c.GetNetworkVolume(ctx, "vol1")
	if err != nil || v.SizeGB != 20 {
		t.Fatalf("GetNetworkVolume: %+v %v", v, err)
	}
	if v, err := c.GrowNetworkVolume(ctx, "vol1", 40); err != nil || v.SizeGB != 40 {
		t.Errorf("GrowNetworkVolume: %+v %v", v, err)
	}
	if _, err := c.GrowNetworkVolume(ctx, "vol1", 30); err == nil {
		t.Error("shrinking a volume succeeded")
	}

	sec, err := c.CreateSecret(ctx, "k", "secret-value")
	if err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	if found, err := c.FindSecret(ctx, "k"); err != nil || found.ID != sec.ID {
		t.Errorf("FindSecret: %+v %v", found, err)
	}
	if list, err := c.ListSecrets(ctx); err != nil || len(list) != 1 {
		t.Errorf("ListSecrets: %+v %v", list, err)
	}
	if secrets := srv.Secrets(); len(secrets) != 1 || secrets[0].Value != "secret-value" {
		t.Errorf("the fake holds %+v", secrets)
	}
	if err := c.DeleteSecret(ctx, sec.ID); err != nil || len(srv.Secrets()) != 0 {
		t.Errorf("DeleteSecret: %v, left %+v", err, srv.Secrets())
	}

	if res, err := c.DeletePod(ctx, pod.ID); err != nil || res != runpod.Deleted {
		t.Errorf("DeletePod: %v %v", res, err)
	}
	// Runpod shows a deleted pod as TERMINATED for a while, then not at all.
	if got, err := c.GetPod(ctx, pod.ID); err != nil || got.Status != runpod.StatusTerminated {
		t.Errorf("GetPod right after delete: %+v %v, want TERMINATED", got, err)
	}
	if len(srv.Billing()) != 0 {
		t.Errorf("still billing: %+v", srv.Billing())
	}
}

// DeletePod's fallbacks against the fake's faults: a refused DELETE falls
// back to terminate, and when both are refused, to stop, which still bills.
func TestClientDeleteFallbacksAgainstFaults(t *testing.T) {
	srv := checkedfake.NewTestServer(t, runpodtest.AllowPodsLeft())
	c := newClient(t, srv)
	ctx := context.Background()
	create := func(name string) string {
		p, err := c.CreatePod(ctx, runpod.CreatePodRequest{
			Name: name, Image: "runpod/base", GPUTypeID: "NVIDIA RTX A5000",
			PersistentVolume: &runpod.PersistentMount{SizeGB: 20, Path: "/workspace"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}

	a := create("a")
	srv.Fail("DELETE", "/v2/pods/"+a, runpodtest.Fault{Status: 403})
	if res, err := c.DeletePod(ctx, a); err != nil || res != runpod.Terminated {
		t.Errorf("DELETE refused: %v %v, want Terminated", res, err)
	}

	b := create("b")
	srv.Fail("DELETE", "/v2/pods/"+b, runpodtest.Fault{Status: 403})
	srv.Fail("POST", "/v2/pods/"+b+"/action", runpodtest.Fault{Status: 403})
	res, err := c.DeletePod(ctx, b)
	if res != runpod.Stopped || !res.StillBilling() || !errors.Is(err, runpod.ErrStillBilling) {
		t.Errorf("DELETE and terminate refused: %v %v, want Stopped, still billing", res, err)
	}
	billing := srv.Billing()
	if len(billing) != 1 || billing[0].ID != b || billing[0].Status != runpodtest.StatusExited {
		t.Errorf("Billing() = %+v, want the stopped pod", billing)
	}

	// A rate limit with Retry-After is waited out and retried.
	srv.Fail("GET", "/v2/pods/"+b, runpodtest.Fault{Times: 2, Status: 429, RetryAfter: "0"})
	if _, err := c.GetPod(ctx, b); err != nil {
		t.Errorf("GetPod through two 429s: %v", err)
	}
	var limited int
	for _, r := range srv.Requests() {
		if r.Fault && r.Status == 429 {
			limited++
		}
	}
	if limited != 2 {
		t.Errorf("%d rate-limited calls logged, want 2", limited)
	}
	if res, err := c.DeletePod(ctx, b); err != nil || res != runpod.Deleted {
		t.Errorf("DeletePod of the stopped pod: %v %v", res, err)
	}
}

// The setup a user's test needs: a fake, and the client pointed at it. In a
// test, runpodtest.NewTestServer(t) replaces the first two lines, and also
// fails the test if a pod is left billing.
func Example_client() {
	srv := runpodtest.NewServer()
	defer srv.Close()
	client, _ := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))

	ctx := context.Background()
	pod, _ := client.CreatePod(ctx, runpod.CreatePodRequest{
		Name: "example", Image: "runpod/base", GPUTypeID: "NVIDIA GeForce RTX 4090", Command: []string{"sleep", "infinity"},
	})
	res, _ := client.DeletePod(ctx, pod.ID)
	p, _ := srv.Pod(pod.ID)
	fmt.Println(res, p.Status, p.Billing)
	// Output: deleted TERMINATED false
}

// TestClientHonoursTheQuota: the client waits out a window that resets
// within its retry cap, and fails at once, with one request, when the
// window resets past it.
func TestClientHonoursTheQuota(t *testing.T) {
	srv := checkedfake.NewTestServer(t, runpodtest.WithQuota(
		runpodtest.QuotaWindow{Name: "second", Limit: 1, Window: time.Second},
		runpodtest.QuotaWindow{Name: "hour", Limit: 3, Window: time.Hour},
	))
	c := newClient(t, srv, runpod.WithRetry(4, 3*time.Second))
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.ListPods(ctx, runpod.ListPodsOptions{}); err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
	}
	before := len(srv.Requests())
	_, err := c.ListPods(ctx, runpod.ListPodsOptions{})
	var rl *runpod.RateLimitError
	if !errors.Is(err, runpod.ErrRateLimited) || !errors.As(err, &rl) || rl.Window != "hour" || rl.Wait < 50*time.Minute {
		t.Fatalf("hour used up: %v, want a *RateLimitError for the hour", err)
	}
	if n := len(srv.Requests()) - before; n != 1 {
		t.Errorf("%d requests sent, want 1", n)
	}
}

// TestClientLostActionIsCheckedBeforeResending: the fake carries out a
// stop (or a terminate) but the answer is lost. The client reads the pod
// before resending, and reports the action done; resent, the stop would
// answer 409.
func TestClientLostActionIsCheckedBeforeResending(t *testing.T) {
	srv := checkedfake.NewTestServer(t)
	c := newClient(t, srv)
	ctx := context.Background()
	for _, a := range []runpod.Action{runpod.ActionStop, runpod.ActionTerminate} {
		pod, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: "lost-" + string(a), Image: "runpod/base", GPUTypeID: "NVIDIA GeForce RTX 4090"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.WaitStatus(ctx, pod.ID, runpodtest.StatusRunning); err != nil {
			t.Fatal(err)
		}
		srv.Fail("POST", "/v2/pods/*/action", runpodtest.Fault{Lost: true})
		before := len(srv.Requests())
		p, err := c.PodAction(ctx, pod.ID, a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if a == runpod.ActionStop && (p == nil || p.Status != runpod.StatusExited) {
			t.Errorf("stop returned %+v, want the EXITED pod", p)
		}
		var sent []string
		for _, r := range srv.Requests()[before:] {
			sent = append(sent, r.Method+" "+r.Path)
		}
		if want := []string{"POST /v2/pods/" + pod.ID + "/action", "GET /v2/pods/" + pod.ID}; !slices.Equal(sent, want) {
			t.Errorf("%s: requests %q, want %q", a, sent, want)
		}
		if _, err := c.DeletePod(ctx, pod.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClientLostCreateIsAdopted: the fake makes the pod but the answer is
// lost; the client finds it by name instead of making a second one.
func TestClientLostCreateIsAdopted(t *testing.T) {
	srv := checkedfake.NewTestServer(t)
	c := newClient(t, srv)
	ctx := context.Background()
	srv.Fail("POST", "/v2/pods", runpodtest.Fault{Lost: true})
	pod, err := c.CreatePod(ctx, runpod.CreatePodRequest{Name: "lost-create", Image: "runpod/base", GPUTypeID: "NVIDIA GeForce RTX 4090"})
	if err != nil {
		t.Fatal(err)
	}
	if pods := srv.Pods(); len(pods) != 1 || pods[0].ID != pod.ID {
		t.Errorf("pods %+v, want only %s", pods, pod.ID)
	}
	if _, err := c.DeletePod(ctx, pod.ID); err != nil {
		t.Fatal(err)
	}
}
