package runpodtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/runpod"
)

// call makes one API call with key (none when empty) and returns the status,
// the headers and the body.
func call(t testing.TB, srv *Server, key, method, path string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, raw
}

// mustCall is call that fails the test unless the status is want.
func mustCall(t testing.TB, srv *Server, key, method, path string, body any, want int) []byte {
	t.Helper()
	status, _, raw := call(t, srv, key, method, path, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, raw)
	}
	return raw
}

// checkProblem checks an error answer: the status, an RFC 9457 body that
// matches ErrorResponse, and its content type.
func checkProblem(t testing.TB, srv *Server, key, method, path string, body any, want int) wireProblem {
	t.Helper()
	status, header, raw := call(t, srv, key, method, path, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, raw)
	}
	if ct := header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	checkSchema(t, "ErrorResponse", raw)
	var p wireProblem
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != want || p.Title != http.StatusText(want) {
		t.Errorf("problem %+v for status %d", p, want)
	}
	return p
}

func decode[T any](t testing.TB, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return v
}

const gpu4090 = "NVIDIA GeForce RTX 4090"

func gpuPodBody(name string) map[string]any {
	return map[string]any{
		"name":  name,
		"image": "runpod/pytorch:2.4.0",
		"gpu":   map[string]any{"id": gpu4090, "count": 1},
		"ports": []string{"22/tcp"},
		"env":   map[string]string{"A": "1", "HOST_KEY": "{{ RUNPOD_SECRET_hk }}"},
		"args":  runpod.QuoteArgs([]string{"sleep", "infinity"}),
	}
}

func createPod(t testing.TB, srv *Server, body map[string]any) wirePod {
	t.Helper()
	raw := mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods", body, http.StatusCreated)
	checkSchema(t, "Pod", raw)
	return decode[wirePod](t, raw)
}

func TestPodCreateGetListDelete(t *testing.T) {
	srv := newTestServer(t, WithTerminatedVisible(0))
	key := srv.APIKey()
	created := createPod(t, srv, gpuPodBody("train-1"))
	if created.Status != StatusProvisioning || created.Runtime != nil || created.SSH.Direct != nil {
		t.Errorf("created pod: status %s runtime %v ssh %v", created.Status, created.Runtime, created.SSH.Direct)
	}
	if diff := cmp.Diff([]string{"stop", "terminate"}, created.Actions); diff != "" {
		t.Errorf("actions of a provisioning pod (-want +got):\n%s", diff)
	}
	if created.Env["HOST_KEY"] != "{{ RUNPOD_SECRET_hk }}" {
		t.Errorf("env shows %q: Runpod shows placeholders unresolved", created.Env["HOST_KEY"])
	}

	raw := mustCall(t, srv, key, "GET", "/v2/pods/"+created.ID, nil, http.StatusOK)
	checkSchema(t, "Pod", raw)
	got := decode[wirePod](t, raw)
	if got.Status != StatusRunning || got.Cost != 0.69 {
		t.Errorf("pod %s costs %v, want RUNNING at 0.69", got.Status, got.Cost)
	}
	if got.Runtime == nil || len(got.Runtime.Ports) != 1 {
		t.Fatalf("runtime %+v, want the port 22 mapping", got.Runtime)
	}
	port := got.Runtime.Ports[0]
	if port.Private != 22 || port.Public == nil || *port.Public == 0 || port.Type != "tcp" || port.IP != "127.0.0.1" {
		t.Fatalf("port mapping %+v", port)
	}
	if d := got.SSH.Direct; d == nil || d.Port != *port.Public || d.Host != "127.0.0.1" || d.Username != "root" {
		t.Errorf("ssh.direct %+v, want root@127.0.0.1:%d", d, *port.Public)
	}

	raw = mustCall(t, srv, key, "GET", "/v2/pods", nil, http.StatusOK)
	checkSchema(t, "ListPodsResponse", raw)
	if list := decode[wireListPods](t, raw); len(list.Pods) != 1 || list.Pods[0].ID != created.ID {
		t.Errorf("list %+v", list)
	}

	status, _, body := call(t, srv, key, "DELETE", "/v2/pods/"+created.ID, nil)
	if status != http.StatusNoContent || len(body) != 0 {
		t.Errorf("DELETE: %d %q, want 204 without a body", status, body)
	}
	p := checkProblem(t, srv, key, "GET", "/v2/pods/"+created.ID, nil, http.StatusNotFound)
	if p.Detail != "pod not found" {
		t.Errorf("detail %q", p.Detail)
	}
	checkProblem(t, srv, key, "DELETE", "/v2/pods/"+created.ID, nil, http.StatusNotFound)
	raw = mustCall(t, srv, key, "GET", "/v2/pods", nil, http.StatusOK)
	if list := decode[wireListPods](t, raw); len(list.Pods) != 0 {
		t.Errorf("a terminated pod is still listed: %+v", list)
	}
	pods := srv.Pods()
	if len(pods) != 1 || pods[0].Status != StatusTerminated || pods[0].Billing {
		t.Errorf("Pods() = %+v, want the terminated pod kept for inspection", pods)
	}
	if diff := cmp.Diff([]string{"sleep", "infinity"}, pods[0].Words); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
}

func TestCreateRefusesBadRequests(t *testing.T) {
	srv := newTestServer(t)
	srv.AddNetworkVolume("vol1", 50)
	with := func(change func(map[string]any)) map[string]any {
		b := gpuPodBody("x")
		change(b)
		return b
	}
	cases := []struct {
		name   string
		body   any
		status int
	}{
		{"not JSON", "{", 422},
		{"unknown field", with(func(b map[string]any) { b["bogus"] = 1 }), 422},
		{"unknown nested field", with(func(b map[string]any) { b["gpu"] = map[string]any{"id": gpu4090, "colour": "red"} }), 422},
		{"no name", with(func(b map[string]any) { delete(b, "name") }), 422},
		{"no image", with(func(b map[string]any) { delete(b, "image") }), 422},
		{"bad port", with(func(b map[string]any) { b["ports"] = []string{"22"} }), 422},
		{"small persistent volume", with(func(b map[string]any) {
			b["mounts"] = map[string]any{"persistent": map[string]any{"size": 5, "path": "/workspace"}}
		}), 422},
		{"wrong type", with(func(b map[string]any) { b["disk"] = "big" }), 422},
		{"no compute", with(func(b map[string]any) { delete(b, "gpu") }), 422},
		{"gpu and cpu", with(func(b map[string]any) { b["cpu"] = map[string]any{"id": "cpu3c", "vcpuCount": 2} }), 422},
		{"body over 102,400 bytes", with(func(b map[string]any) { b["env"] = map[string]string{"BIG": strings.Repeat("x", 102400)} }), 413},
		{"unknown gpu", with(func(b map[string]any) { b["gpu"] = map[string]any{"id": "NVIDIA Quantum 9000"} }), 400},
		{"not in community", with(func(b map[string]any) {
			b["gpu"] = map[string]any{"id": "NVIDIA H100 80GB HBM3"}
			b["cloud"] = "COMMUNITY"
		}), 400},
		{"two kinds of mounts", with(func(b map[string]any) {
			b["mounts"] = map[string]any{
				"persistent": map[string]any{"size": 20, "path": "/workspace"},
				"network":    []any{map[string]any{"volumeId": "vol1", "path": "/data"}},
			}
		}), 422},
		{"unknown network volume", with(func(b map[string]any) {
			b["mounts"] = map[string]any{"network": []any{map[string]any{"volumeId": "nope", "path": "/data"}}}
		}), 404},
		{"template", with(func(b map[string]any) { b["templateId"] = "t1" }), 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := checkProblem(t, srv, srv.APIKey(), "POST", "/v2/pods", c.body, c.status)
			if c.status == 422 && len(p.Errors) == 0 {
				t.Errorf("a 422 without errors: %+v", p)
			}
		})
	}
	if n := len(srv.Pods()); n != 0 {
		t.Errorf("%d pods created by refused requests", n)
	}
}

func TestKeys(t *testing.T) {
	srv := newTestServer(t, WithAPIKey("rpa_TESTACCOUNTKEY"))
	if srv.APIKey() != "rpa_TESTACCOUNTKEY" {
		t.Fatalf("APIKey %q", srv.APIKey())
	}
	srv.AddNetworkVolume("vol1", 50)
	a := createPod(t, srv, gpuPodBody("a"))
	b := createPod(t, srv, gpuPodBody("b"))
	keyA := srv.PodKey(a.ID)
	if keyA == "" || keyA == srv.PodKey(b.ID) || keyA == srv.APIKey() {
		t.Fatalf("pod keys %q %q", keyA, srv.PodKey(b.ID))
	}

	if p := checkProblem(t, srv, "", "GET", "/v2/pods", nil, 401); p.Detail != "missing bearer token" {
		t.Errorf("detail %q", p.Detail)
	}
	checkProblem(t, srv, "rpa_WRONG", "GET", "/v2/pods", nil, 401)

	// A pod's key reaches its own pod and nothing else.
	mustCall(t, srv, keyA, "GET", "/v2/pods/"+a.ID, nil, 200)
	checkProblem(t, srv, keyA, "GET", "/v2/pods/"+b.ID, nil, 403)
	checkProblem(t, srv, keyA, "DELETE", "/v2/pods/"+b.ID, nil, 403)
	checkProblem(t, srv, keyA, "POST", "/v2/pods/"+b.ID+"/action", map[string]string{"action": "stop"}, 403)
	checkProblem(t, srv, keyA, "GET", "/v2/pods", nil, 403)
	checkProblem(t, srv, keyA, "POST", "/v2/pods", gpuPodBody("c"), 403)
	checkProblem(t, srv, keyA, "GET", "/v2/network-volumes/vol1", nil, 403)
	checkProblem(t, srv, keyA, "GET", "/v2/catalog/gpus", nil, 403)
	// The fake assumes a pod's key cannot see the account's secrets.
	checkProblem(t, srv, keyA, "GET", "/v2/account/secrets", nil, 403)
	checkProblem(t, srv, keyA, "POST", "/v2/account/secrets", map[string]any{"name": "x", "value": "v"}, 403)
	if p, _ := srv.Pod(b.ID); p.Status != StatusRunning {
		t.Errorf("pod b is %s after refused calls", p.Status)
	}
	// Its own pod it may delete: what the watchdog does.
	mustCall(t, srv, keyA, "DELETE", "/v2/pods/"+a.ID, nil, 204)
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+b.ID, nil, 204)

	var callers []string
	for _, r := range srv.Requests() {
		callers = append(callers, r.Caller)
	}
	if !slices.Contains(callers, a.ID) || !slices.Contains(callers, CallerAccount) || !slices.Contains(callers, CallerNone) {
		t.Errorf("callers %v: want the account, pod %s and none", callers, a.ID)
	}
}

func TestPodActions(t *testing.T) {
	srv := newTestServer(t)
	key := srv.APIKey()
	p := createPod(t, srv, gpuPodBody("acts"))
	path := "/v2/pods/" + p.ID + "/action"
	act := func(action string, want int) wirePod {
		t.Helper()
		raw := mustCall(t, srv, key, "POST", path, map[string]string{"action": action}, want)
		if want != 200 {
			return wirePod{}
		}
		checkSchema(t, "Pod", raw)
		return decode[wirePod](t, raw)
	}
	if got := act("stop", 200); got.Status != StatusExited || got.Cost != 0 || got.Runtime != nil || got.SSH.Direct != nil {
		t.Errorf("stopped pod: %s cost %v runtime %v", got.Status, got.Cost, got.Runtime)
	} else if diff := cmp.Diff([]string{"start", "terminate"}, got.Actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	checkProblem(t, srv, key, "POST", path, map[string]string{"action": "stop"}, 409)
	checkProblem(t, srv, key, "POST", path, map[string]string{"action": "restart"}, 409)
	if got := act("start", 200); got.Status != StatusRunning {
		t.Errorf("started pod is %s", got.Status)
	}
	if got := act("restart", 200); got.Status != StatusRunning {
		t.Errorf("restarted pod is %s", got.Status)
	}
	checkProblem(t, srv, key, "POST", path, map[string]string{"action": "explode"}, 422)
	checkProblem(t, srv, key, "POST", path, map[string]any{"action": "stop", "force": true}, 422)
	checkProblem(t, srv, key, "POST", path, map[string]any{}, 422)
	status, _, body := call(t, srv, key, "POST", path, map[string]string{"action": "terminate"})
	if status != 204 || len(body) != 0 {
		t.Errorf("terminate: %d %q", status, body)
	}
	checkProblem(t, srv, key, "POST", path, map[string]string{"action": "start"}, 404)
	checkProblem(t, srv, key, "GET", "/v2/pods/"+p.ID+"/logs", nil, 404) // terminated: no log
	checkProblem(t, srv, key, "PUT", "/v2/pods/"+p.ID, nil, 405)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestBillingFollowsTheClock(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	srv := newTestServer(t, WithClock(clock.Now), WithProvisioningDelay(2*time.Minute))
	body := gpuPodBody("billed")
	body["gpu"] = map[string]any{"id": gpu4090, "count": 2}
	body["mounts"] = map[string]any{"persistent": map[string]any{"size": 100, "path": "/workspace"}}
	p := createPod(t, srv, body)

	clock.Advance(time.Minute)
	if got, _ := srv.Pod(p.ID); got.Status != StatusProvisioning || got.Bill.USD != 0 || !got.Billing {
		t.Errorf("after 1 of 2 provisioning minutes: %s, bill %+v", got.Status, got.Bill)
	}
	clock.Advance(time.Minute + 30*time.Minute)
	got, _ := srv.Pod(p.ID)
	if got.Status != StatusRunning || got.CostPerHr != 1.38 {
		t.Fatalf("pod %s at %v/h", got.Status, got.CostPerHr)
	}
	if got.Bill.RunSeconds != 1800 || !near(got.Bill.RunUSD, 0.69) {
		t.Errorf("after 30 running minutes at 1.38/h: %+v", got.Bill)
	}
	if !got.StartedAt.Equal(got.CreatedAt.Add(2 * time.Minute)) {
		t.Errorf("started %v, created %v", got.StartedAt, got.CreatedAt)
	}

	// Stop is not delete: the volume keeps billing.
	mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods/"+p.ID+"/action", map[string]string{"action": "stop"}, 200)
	clock.Advance(hoursPerMonth * time.Hour)
	got, _ = srv.Pod(p.ID)
	if got.Bill.RunSeconds != 1800 || got.Bill.StoppedSeconds != hoursPerMonth*3600 {
		t.Errorf("after a stopped month: %+v", got.Bill)
	}
	if !near(got.Bill.VolumeUSD, 100*0.20) || !near(got.Bill.USD, 0.69+20) {
		t.Errorf("a stopped month of 100 GB at 0.20/GB/month: %+v", got.Bill)
	}
	if billing := srv.Billing(); len(billing) != 1 || billing[0].ID != p.ID {
		t.Errorf("Billing() = %v, want the stopped pod", billing)
	}

	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, 204)
	final, _ := srv.Pod(p.ID)
	clock.Advance(24 * time.Hour)
	later, _ := srv.Pod(p.ID)
	if later.Bill != final.Bill || len(srv.Billing()) != 0 {
		t.Errorf("a terminated pod still bills: %+v then %+v", final.Bill, later.Bill)
	}
	if !near(srv.TotalUSD(), final.Bill.USD) {
		t.Errorf("TotalUSD %v, pod %v", srv.TotalUSD(), final.Bill.USD)
	}
}

func TestCustomCatalogPricesPods(t *testing.T) {
	srv := newTestServer(t, WithGPUTypes(GPUType{ID: "NVIDIA Test GPU", Name: "Test", MemoryGB: 8, SecurePrice: 0.5, CommunityPrice: 0.25, MaxCount: 2}))
	raw := mustCall(t, srv, srv.APIKey(), "GET", "/v2/catalog/gpus", nil, 200)
	checkSchema(t, "ListGpuTypesResponse", raw)
	list := decode[wireListGPUTypes](t, raw)
	if len(list.GPUs) != 1 || list.GPUs[0].Price.Community != 0.25 || list.GPUs[0].MaxCount.Secure != 2 {
		t.Fatalf("catalog %+v", list)
	}
	one := mustCall(t, srv, srv.APIKey(), "GET", "/v2/catalog/gpus/NVIDIA%20Test%20GPU", nil, 200)
	checkSchema(t, "GpuType", one)
	checkProblem(t, srv, srv.APIKey(), "GET", "/v2/catalog/gpus/nope", nil, 404)

	body := gpuPodBody("cheap")
	body["gpu"] = map[string]any{"id": "NVIDIA Test GPU", "count": 2}
	body["cloud"] = "COMMUNITY"
	if p := createPod(t, srv, body); p.Cost != 0.5 {
		t.Errorf("2 x 0.25 community: cost %v", p.Cost)
	}
	body["gpu"] = map[string]any{"id": "NVIDIA Test GPU", "count": 3}
	checkProblem(t, srv, srv.APIKey(), "POST", "/v2/pods", body, 400)

	cpu := map[string]any{"name": "cpu", "image": "busybox", "cpu": map[string]any{"id": "cpu3c", "vcpuCount": 4}}
	if p := createPod(t, srv, cpu); p.Cost != 0.12 || p.CPU == nil || p.GPU != nil {
		t.Errorf("4 vCPU pod: cost %v cpu %+v", p.Cost, p.CPU)
	}
	for _, p := range srv.Pods() {
		mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, 204)
	}
}

func TestNetworkVolumes(t *testing.T) {
	srv := newTestServer(t)
	key := srv.APIKey()
	v := srv.AddNetworkVolume("vol1", 50)
	if v.Dir == "" || v.SizeGB != 50 {
		t.Fatalf("volume %+v", v)
	}
	raw := mustCall(t, srv, key, "GET", "/v2/network-volumes/vol1", nil, 200)
	checkSchema(t, "NetworkVolume", raw)
	raw = mustCall(t, srv, key, "PATCH", "/v2/network-volumes/vol1", map[string]int{"size": 80}, 200)
	checkSchema(t, "NetworkVolume", raw)
	if got := decode[wireNetworkVolume](t, raw); got.Size != 80 {
		t.Errorf("grown to %d", got.Size)
	}
	p := checkProblem(t, srv, key, "PATCH", "/v2/network-volumes/vol1", map[string]int{"size": 60}, 400)
	if !strings.Contains(p.Detail, "cannot be reduced") {
		t.Errorf("detail %q", p.Detail)
	}
	checkProblem(t, srv, key, "PATCH", "/v2/network-volumes/vol1", map[string]int{"size": 5000}, 422)
	checkProblem(t, srv, key, "PATCH", "/v2/network-volumes/vol1", map[string]any{}, 422)
	checkProblem(t, srv, key, "PATCH", "/v2/network-volumes/vol1", map[string]any{"size": 90, "type": "FAST"}, 422)
	checkProblem(t, srv, key, "PATCH", "/v2/network-volumes/nope", map[string]int{"size": 90}, 404)
	checkProblem(t, srv, key, "GET", "/v2/network-volumes/nope", nil, 404)
	if got := srv.NetworkVolumes(); len(got) != 1 || got[0].SizeGB != 80 {
		t.Errorf("NetworkVolumes() = %+v", got)
	}

	body := gpuPodBody("on-volume")
	body["mounts"] = map[string]any{"network": []any{map[string]any{"volumeId": "vol1", "path": "/workspace"}}}
	pod := createPod(t, srv, body)
	if len(pod.Mounts.Network) != 1 || pod.Mounts.Network[0].VolumeID != "vol1" {
		t.Errorf("mounts %+v", pod.Mounts)
	}
	mustCall(t, srv, key, "DELETE", "/v2/pods/"+pod.ID, nil, 204)
}

func TestFaults(t *testing.T) {
	srv := newTestServer(t)
	key := srv.APIKey()
	p := createPod(t, srv, gpuPodBody("faulty"))

	srv.Fail("GET", "/v2/pods/*", Fault{Times: 2, Status: 429, RetryAfter: "3"})
	for i := range 2 {
		status, header, raw := call(t, srv, key, "GET", "/v2/pods/"+p.ID, nil)
		if status != 429 || header.Get("Retry-After") != "3" {
			t.Errorf("call %d: %d Retry-After %q", i, status, header.Get("Retry-After"))
		}
		checkSchema(t, "ErrorResponse", raw)
	}
	mustCall(t, srv, key, "GET", "/v2/pods/"+p.ID, nil, 200)

	// A caller's fault spares the other callers; a pattern's * stops at /.
	srv.Fail("", "/v2/pods/*", Fault{Times: -1, Status: 503, Caller: p.ID})
	mustCall(t, srv, key, "GET", "/v2/pods/"+p.ID, nil, 200)
	checkProblem(t, srv, srv.PodKey(p.ID), "GET", "/v2/pods/"+p.ID, nil, 503)
	checkProblem(t, srv, srv.PodKey(p.ID), "DELETE", "/v2/pods/"+p.ID, nil, 503)
	mustCall(t, srv, srv.PodKey(p.ID), "POST", "/v2/pods/"+p.ID+"/action", map[string]string{"action": "restart"}, 200)
	srv.ClearFaults()
	mustCall(t, srv, srv.PodKey(p.ID), "GET", "/v2/pods/"+p.ID, nil, 200)

	// A fresh transport: Go retries a GET that fails on a reused connection.
	fresh := &http.Client{Transport: &http.Transport{}}
	get := func(c *http.Client, path string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", srv.BaseURL()+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		return c.Do(req)
	}
	srv.Fail("GET", "/v2/pods", Fault{Drop: true})
	if resp, err := get(fresh, "/pods"); err == nil {
		resp.Body.Close()
		t.Errorf("a dropped connection answered %d", resp.StatusCode)
	}

	srv.Fail("GET", "/v2/catalog/gpus", Fault{Hang: true})
	if _, err := get(&http.Client{Timeout: 200 * time.Millisecond}, "/catalog/gpus"); err == nil {
		t.Error("a hanging call answered")
	}
	mustCall(t, srv, key, "GET", "/v2/catalog/gpus", nil, 200)

	var faulted []int
	for _, r := range srv.Requests() {
		if r.Fault {
			faulted = append(faulted, r.Status)
		}
	}
	if diff := cmp.Diff([]int{429, 429, 503, 503, 0, 0}, faulted); diff != "" {
		t.Errorf("faulted statuses in the log (-want +got):\n%s", diff)
	}
	mustCall(t, srv, key, "DELETE", "/v2/pods/"+p.ID, nil, 204)
}

// A call hanging on a fault must not keep Close from returning.
func TestCloseReleasesHangingCalls(t *testing.T) {
	srv := NewServer()
	srv.Fail("", "/v2/pods", Fault{Hang: true})
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("GET", srv.BaseURL()+"/pods", nil)
		req.Header.Set("Authorization", "Bearer "+srv.APIKey())
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(srv.Requests()) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the hanging call never arrived")
		case <-time.After(5 * time.Millisecond):
		}
	}
	srv.Close()
	if err := <-errc; err == nil {
		t.Error("the hanging call got an answer")
	}
}

func TestRequestLog(t *testing.T) {
	srv := newTestServer(t)
	body := gpuPodBody("logged")
	p := createPod(t, srv, body)
	mustCall(t, srv, srv.PodKey(p.ID), "DELETE", "/v2/pods/"+p.ID, nil, 204)
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests logged", len(reqs))
	}
	create, del := reqs[0], reqs[1]
	if create.Method != "POST" || create.Path != "/v2/pods" || create.Status != 201 || create.Caller != CallerAccount {
		t.Errorf("create logged as %+v", create)
	}
	if got := create.Header.Get("Authorization"); got != "Bearer "+srv.APIKey() {
		t.Errorf("Authorization %q", got)
	}
	if sent := decode[map[string]any](t, create.Body); sent["name"] != "logged" {
		t.Errorf("body %s", create.Body)
	}
	if del.Caller != p.ID || del.Status != 204 || del.Header.Get("Authorization") != "Bearer "+srv.PodKey(p.ID) {
		t.Errorf("delete logged as %+v", del)
	}
}

func TestSecretsREST(t *testing.T) {
	srv := newTestServer(t)
	key := srv.APIKey()
	const value = "c2VjcmV0IGtleQ=="
	raw := mustCall(t, srv, key, "POST", "/v2/account/secrets", map[string]any{"name": "overbrainer_host_key_r1", "value": value}, 201)
	checkSchema(t, "Secret", raw)
	if strings.Contains(string(raw), value) {
		t.Errorf("the create's answer holds the value: %s", raw)
	}
	created := decode[wireSecret](t, raw)
	if created.Name != "overbrainer_host_key_r1" || created.ID == "" || created.CreatedAt == "" {
		t.Errorf("created %+v", created)
	}
	mustCall(t, srv, key, "POST", "/v2/account/secrets", map[string]any{"name": "hf/read.token-1", "value": `hf_"quoted"`, "description": "HF"}, 201)
	// A taken name, in any case, is a conflict; nothing changes.
	checkProblem(t, srv, key, "POST", "/v2/account/secrets", map[string]any{"name": "Overbrainer_Host_Key_R1", "value": "again"}, 409)
	if got := srv.Secrets(); len(got) != 2 || got[0].Value != value || got[1].Value != `hf_"quoted"` || got[1].Description != "HF" {
		t.Errorf("secrets %+v", got)
	}
	// Names and values outside Runpod's rule are 422 problems that never
	// quote the value.
	for _, body := range []map[string]any{
		{"name": "RunPod_x", "value": "v"},
		{"name": "1x", "value": "v"},
		{"name": "a b", "value": "v"},
		{"name": strings.Repeat("a", 192), "value": "v"},
		{"name": "ok", "value": ""},
		{"name": "ok"},
		{"value": "v"},
		{"name": "ok", "value": "v", "extra": 1},
		{"name": "ok", "value": strings.Repeat("v", 16<<20)},
	} {
		p := checkProblem(t, srv, key, "POST", "/v2/account/secrets", body, 422)
		if len(p.Errors) == 0 || strings.Contains(fmt.Sprint(p), "vvvv") {
			t.Errorf("%.80v: problem %.200v", body, p)
		}
	}
	if got := srv.Secrets(); len(got) != 2 {
		t.Fatalf("a refused create made a secret: %+v", got)
	}

	raw = mustCall(t, srv, key, "GET", "/v2/account/secrets", nil, 200)
	checkSchema(t, "ListSecretsResponse", raw)
	if strings.Contains(string(raw), value) || len(decode[wireListSecrets](t, raw).Secrets) != 2 {
		t.Errorf("list: %s", raw)
	}
	// ?name= ignores case and returns only that secret.
	raw = mustCall(t, srv, key, "GET", "/v2/account/secrets?name=OVERBRAINER_HOST_KEY_R1", nil, 200)
	if l := decode[wireListSecrets](t, raw).Secrets; len(l) != 1 || l[0].ID != created.ID {
		t.Errorf("filtered list: %s", raw)
	}
	raw = mustCall(t, srv, key, "GET", "/v2/account/secrets/"+created.ID, nil, 200)
	checkSchema(t, "Secret", raw)

	// PATCH rotates the value.
	raw = mustCall(t, srv, key, "PATCH", "/v2/account/secrets/"+created.ID, map[string]any{"value": "rotated"}, 200)
	checkSchema(t, "Secret", raw)
	if strings.Contains(string(raw), "rotated") || srv.Secrets()[0].Value != "rotated" {
		t.Errorf("patch: %s, stored %+v", raw, srv.Secrets()[0])
	}
	checkProblem(t, srv, key, "PATCH", "/v2/account/secrets/"+created.ID, map[string]any{}, 422)
	checkProblem(t, srv, key, "PATCH", "/v2/account/secrets/"+created.ID, map[string]any{"name": "renamed"}, 422)
	checkProblem(t, srv, key, "PATCH", "/v2/account/secrets/nope", map[string]any{"value": "x"}, 404)

	mustCall(t, srv, key, "DELETE", "/v2/account/secrets/"+created.ID, nil, 204)
	checkProblem(t, srv, key, "DELETE", "/v2/account/secrets/"+created.ID, nil, 404)
	checkProblem(t, srv, key, "GET", "/v2/account/secrets/"+created.ID, nil, 404)
	if got := srv.Secrets(); len(got) != 1 || got[0].Name != "hf/read.token-1" {
		t.Errorf("after delete: %+v", got)
	}
	checkProblem(t, srv, "", "GET", "/v2/account/secrets", nil, 401)
	// No GraphQL is served any more.
	if status, _, _ := call(t, srv, key, "POST", "/graphql", map[string]any{"query": "query { myself { secrets { id } } }"}); status != 404 {
		t.Errorf("POST /graphql: %d, want 404", status)
	}
}

func TestExitPodAndWaitStatus(t *testing.T) {
	srv := newTestServer(t)
	p := createPod(t, srv, gpuPodBody("exits"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan Pod, 1)
	go func() {
		got, err := srv.WaitStatus(ctx, p.ID, StatusExited)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	if err := srv.ExitPod(p.ID, 3); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.Status != StatusExited || got.ExitCode != 3 {
		t.Errorf("pod %s exit %d", got.Status, got.ExitCode)
	}
	if err := srv.ExitPod(p.ID, 0); err == nil {
		t.Error("an exited pod exited again")
	}
	short, cancelShort := context.WithCancel(ctx)
	cancelShort()
	if _, err := srv.WaitStatus(short, p.ID, StatusRunning); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitStatus on a cancelled context: %v", err)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, 204)
}

// recordingTB is a testing.TB that records failures and cleanups instead of
// acting on them, to test NewTestServer itself.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	cleanups []func()
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestNewTestServerFailsOnPodsLeftBilling(t *testing.T) {
	rec := &recordingTB{TB: t}
	srv := NewTestServer(rec)
	left := createPod(t, srv, gpuPodBody("forgotten"))
	gone := createPod(t, srv, gpuPodBody("deleted"))
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+gone.ID, nil, 204)
	rec.runCleanups()
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], left.ID) || !strings.Contains(rec.errors[0], "billing") {
		t.Errorf("errors %q, want one about pod %s", rec.errors, left.ID)
	}
	if _, err := http.Get(srv.URL); err == nil {
		t.Error("the server still answers after the test's cleanup")
	}

	rec = &recordingTB{TB: t}
	srv = NewTestServer(rec, AllowPodsLeft())
	createPod(t, srv, gpuPodBody("kept on purpose"))
	rec.runCleanups()
	if len(rec.errors) != 0 {
		t.Errorf("AllowPodsLeft still failed: %q", rec.errors)
	}
}

// TestQuota: in quota mode every authenticated REST answer says how much
// is left, and a used-up window answers 429 until it resets; the window
// that resets last decides the Retry-After.
func TestQuota(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	srv := newTestServer(t, WithClock(clock.Now), WithQuota(
		QuotaWindow{Name: "minute", Limit: 2, Window: time.Minute},
		QuotaWindow{Name: "hour", Limit: 3, Window: time.Hour},
	))
	key := srv.APIKey()
	status, h, _ := call(t, srv, key, "GET", "/v2/pods", nil)
	if status != 200 || h.Get("RateLimit-Policy") != `"minute";q=2;w=60, "hour";q=3;w=3600` || h.Get("RateLimit") != `"minute";r=1;t=60, "hour";r=2;t=3600` {
		t.Fatalf("first: %d, policy %q, state %q", status, h.Get("RateLimit-Policy"), h.Get("RateLimit"))
	}
	clock.Advance(10 * time.Second)
	call(t, srv, key, "GET", "/v2/pods", nil)
	status, h, body := call(t, srv, key, "GET", "/v2/pods", nil)
	if status != 429 || h.Get("Retry-After") != "50" || h.Get("RateLimit") != `"minute";r=0;t=50, "hour";r=1;t=3590` {
		t.Fatalf("third: %d, Retry-After %q, state %q: %s", status, h.Get("Retry-After"), h.Get("RateLimit"), body)
	}
	// Unauthenticated calls are not counted.
	if status, _, _ := call(t, srv, "", "GET", "/v2/pods", nil); status != 401 {
		t.Errorf("no key: %d", status)
	}
	clock.Advance(50 * time.Second)
	if status, _, _ := call(t, srv, key, "GET", "/v2/pods", nil); status != 200 {
		t.Fatalf("after the minute: %d", status)
	}
	// Now the hour is used up, and its reset decides.
	status, h, _ = call(t, srv, key, "GET", "/v2/pods", nil)
	if status != 429 || h.Get("Retry-After") != "3540" {
		t.Errorf("hour used up: %d, Retry-After %q, state %q", status, h.Get("Retry-After"), h.Get("RateLimit"))
	}
}

// TestQuotaIsPerKey: a pod's key has a quota of its own, as on Runpod, so
// that its watchdog's calls do not use up the account's.
func TestQuotaIsPerKey(t *testing.T) {
	srv := newTestServer(t, WithQuota(QuotaWindow{Name: "hour", Limit: 2, Window: time.Hour}))
	p := createPod(t, srv, gpuPodBody("quota"))
	mustCall(t, srv, srv.APIKey(), "GET", "/v2/pods", nil, http.StatusOK)
	mustCall(t, srv, srv.APIKey(), "GET", "/v2/pods", nil, http.StatusTooManyRequests)
	podKey := srv.PodKey(p.ID)
	status, h, _ := call(t, srv, podKey, "GET", "/v2/pods/"+p.ID, nil)
	if status != http.StatusOK || h.Get("RateLimit") != `"hour";r=1;t=3600` {
		t.Errorf("the pod's first call: %d, state %q; want 200 with its own window", status, h.Get("RateLimit"))
	}
	// The pod deletes itself, as its watchdog does, with its own quota.
	mustCall(t, srv, podKey, "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)
}

// TestFaultLost: a Lost fault runs the call, then closes the connection
// without its answer, as when an answer is lost on the way back.
func TestFaultLost(t *testing.T) {
	srv := newTestServer(t)
	p := createPod(t, srv, gpuPodBody("lost"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := srv.WaitStatus(ctx, p.ID, StatusRunning); err != nil {
		t.Fatal(err)
	}
	srv.Fail("POST", "/v2/pods/*/action", Fault{Lost: true})
	req, _ := http.NewRequest("POST", srv.BaseURL()+"/pods/"+p.ID+"/action", strings.NewReader(`{"action":"stop"}`))
	req.Header.Set("Authorization", "Bearer "+srv.APIKey())
	req.Header.Set("Content-Type", "application/json")
	if resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a lost answer arrived: %d", resp.StatusCode)
	}
	if got, _ := srv.Pod(p.ID); got.Status != StatusExited {
		t.Errorf("status %s after a lost stop, want EXITED: the call did not run", got.Status)
	}
	reqs := srv.Requests()
	if last := reqs[len(reqs)-1]; !last.Fault || last.Status != 0 {
		t.Errorf("logged as %+v", last)
	}
	mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods/"+p.ID+"/action", map[string]string{"action": "stop"}, http.StatusConflict)
}

// TestListPodsPagination: every list answer carries pagination; a cursor
// is valid only with the parameters that issued it.
func TestListPodsPagination(t *testing.T) {
	srv := newTestServer(t, WithProvisioningDelay(24*time.Hour), AllowPodsLeft())
	key := srv.APIKey()
	for i := range 5 {
		srv.AddPods(SeedPod{Name: fmt.Sprint("p", i)})
	}
	raw := mustCall(t, srv, key, "GET", "/v2/pods", nil, 200)
	checkSchema(t, "ListPodsResponse", raw)
	if l := decode[wireListPods](t, raw); len(l.Pods) != 5 || l.Pagination.HasNextPage || l.Pagination.NextCursor != nil {
		t.Errorf("one page: %s", raw)
	}
	var ids []string
	cursor := ""
	for page := 0; ; page++ {
		path := "/v2/pods?limit=2&includeClusterPods=true"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		raw := mustCall(t, srv, key, "GET", path, nil, 200)
		checkSchema(t, "ListPodsResponse", raw)
		l := decode[wireListPods](t, raw)
		for _, p := range l.Pods {
			ids = append(ids, p.ID)
		}
		if !l.Pagination.HasNextPage {
			break
		}
		if page == 0 {
			// The same cursor with other parameters is refused.
			next := url.QueryEscape(*l.Pagination.NextCursor)
			for _, q := range []string{"limit=3&includeClusterPods=true", "limit=2", "includeClusterPods=true", "limit=2&includeClusterPods=false"} {
				p := checkProblem(t, srv, key, "GET", "/v2/pods?"+q+"&cursor="+next, nil, 422)
				if !strings.Contains(strings.Join(p.Errors, " "), "cursor") {
					t.Errorf("%s: %+v does not name the cursor", q, p)
				}
			}
		}
		cursor = *l.Pagination.NextCursor
	}
	if len(ids) != 5 {
		t.Errorf("paged ids %q, want 5", ids)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "cursor=never-issued", "includeClusterPods=yes"} {
		checkProblem(t, srv, key, "GET", "/v2/pods?"+q, nil, 422)
	}
}
