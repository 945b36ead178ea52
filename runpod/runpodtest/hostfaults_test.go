package runpodtest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stockOf is the fake's catalog availability of gpu in its own data
// center.
func stockOf(t *testing.T, srv *Server, gpu string) string {
	t.Helper()
	raw := mustCall(t, srv, srv.APIKey(), "GET", "/v2/catalog/gpus?include=AVAILABILITY&product=POD", nil, http.StatusOK)
	for _, g := range decode[struct {
		GPUs []struct {
			ID           string `json:"id"`
			Availability string `json:"availability"`
		} `json:"gpus"`
	}](t, raw).GPUs {
		if g.ID == gpu {
			return g.Availability
		}
	}
	t.Fatalf("no %s in the catalog: %s", gpu, raw)
	return ""
}

// TestOutOfStockReturns: a type out of stock until a time shows NONE and
// refuses creates with the capacity 400 until the fake's clock gets
// there; one out of stock until told comes back with Restock.
func TestOutOfStockReturns(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := NewTestServer(t, WithClock(clock.Now))
	before := stockOf(t, srv, gpu4090)
	srv.OutOfStock(gpu4090, clock.Now().Add(2*time.Minute))
	if s := stockOf(t, srv, gpu4090); s != "NONE" {
		t.Errorf("out of stock shows %q, want NONE", s)
	}
	raw := mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods", gpuPodBody("a"), http.StatusBadRequest)
	if !strings.Contains(string(raw), CapacityDetail) {
		t.Errorf("create answered %s, want the capacity detail", raw)
	}
	clock.Advance(2*time.Minute - time.Second)
	mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods", gpuPodBody("b"), http.StatusBadRequest)
	clock.Advance(time.Second)
	if s := stockOf(t, srv, gpu4090); s != before {
		t.Errorf("back in stock shows %q, want %q", s, before)
	}
	p := createPod(t, srv, gpuPodBody("c"))
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)

	srv.OutOfStock(gpu4090, time.Time{})
	clock.Advance(24 * time.Hour)
	mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods", gpuPodBody("d"), http.StatusBadRequest)
	srv.Restock(gpu4090)
	p = createPod(t, srv, gpuPodBody("e"))
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)
}

// TestFailHostKeepsOnlyTheNetworkVolume: a failed host kills the pod's
// processes and leaves it EXITED for good, its container disk and pod
// volume gone; the network volume's files are there for the next pod.
func TestFailHostKeepsOnlyTheNetworkVolume(t *testing.T) {
	requireRunner(t)
	srv := NewTestServer(t, WithPodRunner())
	srv.AddNetworkVolume("vol1", 20)
	script := `n=$(cat /workspace/count 2>/dev/null || echo 0); n=$((n+1)); echo "$n" > /workspace/count
[ -e /root/mark ] && echo "disk kept"
touch /root/mark
echo "ready $n"
exec sleep 1000`
	body := shPod("host", script, nil)
	body["mounts"] = map[string]any{"network": []any{map[string]any{"volumeId": "vol1", "path": "/workspace"}}}
	p := createPod(t, srv, body)
	waitLog(t, srv, p.ID, "ready 1\n")
	if err := srv.FailHost(p.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := srv.Pod(p.ID)
	if got.Status != StatusExited || len(podProcs(t, p.ID)) != 0 || got.SSHPort != 0 {
		t.Errorf("after FailHost: %s, port %d, processes %v", got.Status, got.SSHPort, podProcs(t, p.ID))
	}
	if _, err := os.Stat(filepath.Join(srv.tmp, "pods", p.ID, "ns")); !os.IsNotExist(err) {
		t.Errorf("the container disk is still there: %v", err)
	}
	for _, action := range []string{"start", "restart"} {
		mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods/"+p.ID+"/action", map[string]string{"action": action}, http.StatusConflict)
	}
	if err := srv.FailHost(p.ID); err != nil {
		t.Errorf("a second FailHost: %v", err)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)
	if err := srv.FailHost(p.ID); err == nil {
		t.Error("FailHost of a deleted pod worked")
	}
	// The next pod on the volume finds its files.
	p2 := createPod(t, srv, body)
	waitLog(t, srv, p2.ID, "ready 2\n")
	if strings.Contains(srv.PodLog(p2.ID), "disk kept") {
		t.Error("a new pod saw the old container disk")
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p2.ID, nil, http.StatusNoContent)
}

// TestRestartForMaintenance: the container gets SIGTERM and runs again
// on a fresh container disk; the pod volume keeps its files.
func TestRestartForMaintenance(t *testing.T) {
	requireRunner(t)
	srv := NewTestServer(t, WithPodRunner(), WithStopGrace(time.Minute))
	script := `n=$(cat /workspace/count 2>/dev/null || echo 0); n=$((n+1)); echo "$n" > /workspace/count
[ -e /root/mark ] && echo "disk kept"
touch /root/mark
trap 'echo "term $n"; exit 0' TERM
echo "ready $n"
while :; do sleep 0.1; done`
	body := shPod("maint", script, nil)
	body["mounts"] = map[string]any{"persistent": map[string]any{"size": 20, "path": "/workspace"}}
	p := createPod(t, srv, body)
	waitLog(t, srv, p.ID, "ready 1\n")
	// The container may print before the API reads the pod as RUNNING,
	// and only a RUNNING pod restarts.
	if _, err := srv.WaitStatus(t.Context(), p.ID, StatusRunning); err != nil {
		t.Fatal(err)
	}
	if err := srv.RestartForMaintenance(p.ID); err != nil {
		t.Fatal(err)
	}
	waitLog(t, srv, p.ID, "ready 2\n")
	log := srv.PodLog(p.ID)
	if !strings.Contains(log, "term 1\n") || strings.Contains(log, "disk kept") {
		t.Errorf("log %q: want a SIGTERM, then a fresh container disk", log)
	}
	if _, err := srv.WaitStatus(waitCtx(t), p.ID, StatusRunning); err != nil {
		t.Fatal(err)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)
	if err := srv.RestartForMaintenance(p.ID); err == nil {
		t.Error("a deleted pod was restarted")
	}
}
