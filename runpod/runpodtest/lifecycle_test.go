package runpodtest

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartingPhaseShowsNoPorts: after provisioning, an API-only pod is
// STARTING for the starting delay on the fake's clock, without runtime,
// ports or SSH endpoint, and only then RUNNING with them.
func TestStartingPhaseShowsNoPorts(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := newTestServer(t, WithClock(clock.Now), WithProvisioningDelay(time.Minute), WithStartingDelay(2*time.Minute))
	key := srv.APIKey()
	created := createPod(t, srv, gpuPodBody("boot"))
	get := func() wirePod {
		raw := mustCall(t, srv, key, "GET", "/v2/pods/"+created.ID, nil, http.StatusOK)
		checkSchema(t, "Pod", raw)
		return decode[wirePod](t, raw)
	}
	clock.Advance(90 * time.Second)
	if p := get(); p.Status != StatusStarting || p.Runtime != nil || p.SSH.Direct != nil {
		t.Fatalf("after provisioning: %s runtime %+v ssh %+v, want STARTING without either", p.Status, p.Runtime, p.SSH.Direct)
	}
	if p, _ := srv.Pod(created.ID); !p.Billing || p.Bill.RunSeconds != 0 {
		t.Errorf("a starting pod: billing %v, run %vs", p.Billing, p.Bill.RunSeconds)
	}
	clock.Advance(2 * time.Minute)
	p := get()
	if p.Status != StatusRunning || p.Runtime == nil || len(p.Runtime.Ports) != 1 || p.SSH.Direct == nil {
		t.Fatalf("after starting: %s runtime %+v ssh %+v, want RUNNING with port 22", p.Status, p.Runtime, p.SSH.Direct)
	}
	if got, _ := srv.Pod(created.ID); got.Bill.RunSeconds != 30 {
		t.Errorf("run %vs, want the 30s since it came up", got.Bill.RunSeconds)
	}
	mustCall(t, srv, key, "DELETE", "/v2/pods/"+created.ID, nil, http.StatusNoContent)
}

// TestPodRunnerStartingPhase: with the runner, the command already runs
// while the pod shows STARTING without its ports; RUNNING follows.
func TestPodRunnerStartingPhase(t *testing.T) {
	requireRunner(t)
	srv := newTestServer(t, WithPodRunner(), WithStartingDelay(time.Second))
	created := createPod(t, srv, shPod("boot", "echo up; exec sleep 1000", nil))
	ctx := waitCtx(t)
	if _, err := srv.WaitStatus(ctx, created.ID, StatusStarting); err != nil {
		t.Fatal(err)
	}
	waitLog(t, srv, created.ID, "up")
	raw := mustCall(t, srv, srv.APIKey(), "GET", "/v2/pods/"+created.ID, nil, http.StatusOK)
	if p := decode[wirePod](t, raw); p.Status == StatusStarting && (p.Runtime != nil || p.SSH.Direct != nil) {
		t.Errorf("a STARTING pod shows runtime %+v ssh %+v", p.Runtime, p.SSH.Direct)
	}
	if _, err := srv.WaitStatus(ctx, created.ID, StatusRunning); err != nil {
		t.Fatal(err)
	}
	raw = mustCall(t, srv, srv.APIKey(), "GET", "/v2/pods/"+created.ID, nil, http.StatusOK)
	if p := decode[wirePod](t, raw); p.Runtime == nil || len(p.Runtime.Ports) != 1 {
		t.Errorf("RUNNING: runtime %+v, want port 22", p.Runtime)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+created.ID, nil, http.StatusNoContent)
}

// TestPodRunnerRestartsAnEndedContainer: a command that ends is run again,
// as Runpod restarts the container, until the pod is stopped; the pod
// never shows EXITED meanwhile, and keeps billing.
func TestPodRunnerRestartsAnEndedContainer(t *testing.T) {
	requireRunner(t)
	srv := newTestServer(t, WithPodRunner(), WithRestartDelay(20*time.Millisecond))
	created := createPod(t, srv, shPod("loop", "echo run-$$; exit 3", nil))
	ctx := waitCtx(t)
	p, err := srv.WaitPod(ctx, created.ID, func(p Pod) bool { return p.Restarts >= 3 || p.Status == StatusExited })
	if err != nil {
		t.Fatal(err)
	}
	if p.Status == StatusExited || !p.Billing {
		t.Fatalf("a restarting pod: %s billing %v", p.Status, p.Billing)
	}
	if n := strings.Count(srv.PodLog(created.ID), "run-"); n < 3 {
		t.Errorf("the command ran %d times, want 3 or more: %q", n, srv.PodLog(created.ID))
	}
	// A stop ends the loop, even between two runs.
	mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods/"+created.ID+"/action", map[string]string{"action": "stop"}, http.StatusOK)
	stopped, err := srv.WaitStatus(ctx, created.ID, StatusExited)
	if err != nil {
		t.Fatal(err)
	}
	n := stopped.Restarts
	time.Sleep(200 * time.Millisecond)
	if again, _ := srv.Pod(created.ID); again.Status != StatusExited || again.Restarts != n {
		t.Errorf("after the stop: %s, %d restarts (was %d)", again.Status, again.Restarts, n)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+created.ID, nil, http.StatusNoContent)
}

// TestTerminatedShowsThenGoes: a deleted pod answers GET as TERMINATED for
// a while, leaves the list at once, and then answers 404.
func TestTerminatedShowsThenGoes(t *testing.T) {
	srv := newTestServer(t, WithTerminatedVisible(300*time.Millisecond))
	key := srv.APIKey()
	created := createPod(t, srv, gpuPodBody("gone"))
	mustCall(t, srv, key, "DELETE", "/v2/pods/"+created.ID, nil, http.StatusNoContent)
	raw := mustCall(t, srv, key, "GET", "/v2/pods/"+created.ID, nil, http.StatusOK)
	checkSchema(t, "Pod", raw)
	if p := decode[wirePod](t, raw); p.Status != StatusTerminated || len(p.Actions) != 0 || p.Cost != 0 || p.Runtime != nil {
		t.Errorf("right after delete: %+v, want TERMINATED, no actions, no cost", p)
	}
	if list := decode[wireListPods](t, mustCall(t, srv, key, "GET", "/v2/pods", nil, http.StatusOK)); len(list.Pods) != 0 {
		t.Errorf("listed after delete: %+v", list.Pods)
	}
	checkProblem(t, srv, key, "DELETE", "/v2/pods/"+created.ID, nil, http.StatusNotFound)
	checkProblem(t, srv, key, "POST", "/v2/pods/"+created.ID+"/action", map[string]string{"action": "start"}, http.StatusNotFound)
	deadline := time.Now().Add(time.Minute)
	for {
		status, _, _ := call(t, srv, key, "GET", "/v2/pods/"+created.ID, nil)
		if status == http.StatusNotFound {
			break
		}
		if status != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("GET of a deleted pod: %d, want 200 then 404", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPodRunnerIsolation: a pod has a hostname and IPC namespace of its
// own, lacks the capabilities outside Docker's default set (so it cannot
// mount), and sees neither the fake's directory nor a hidden one, even when
// they lie outside /tmp.
func TestPodRunnerIsolation(t *testing.T) {
	requireRunner(t)
	base, err := os.MkdirTemp("/var/tmp", "runpodtest-isolation-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	state := filepath.Join(base, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "local-server.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", base)
	srv := newTestServer(t, WithPodRunner(), WithExitedOnEnd(), WithHiddenDirs(state))
	if !strings.HasPrefix(srv.tmp, base) {
		t.Fatalf("the fake's directory %s is not under %s", srv.tmp, base)
	}
	script := `echo "hostname=$(hostname)"
echo "uts=$(readlink /proc/self/ns/uts)"
echo "ipc=$(readlink /proc/self/ns/ipc)"
echo "capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)"
echo "fake=$(ls -A "$FAKE_DIR" | wc -l)"
echo "state=$(ls -A "$STATE_DIR" | wc -l)"
mkdir -p /mnt/x && if mount -t tmpfs tmpfs /mnt/x 2>/dev/null; then echo mount=ok; else echo mount=refused; fi
`
	created := createPod(t, srv, shPod("iso", script, map[string]string{"FAKE_DIR": srv.tmp, "STATE_DIR": state}))
	if _, err := srv.WaitStatus(waitCtx(t), created.ID, StatusExited); err != nil {
		t.Fatal(err)
	}
	got := facts([]byte(srv.PodLog(created.ID)))
	hostUTS, _ := os.Readlink("/proc/self/ns/uts")
	hostIPC, _ := os.Readlink("/proc/self/ns/ipc")
	host, _ := os.Hostname()
	if got["hostname"] != created.ID+"-runpodtest" || host == got["hostname"] {
		t.Errorf("hostname %q (host %q), want the pod's", got["hostname"], host)
	}
	if got["uts"] == "" || got["uts"] == hostUTS || got["ipc"] == "" || got["ipc"] == hostIPC {
		t.Errorf("namespaces uts %q ipc %q, host's %q %q", got["uts"], got["ipc"], hostUTS, hostIPC)
	}
	capEff, err := strconv.ParseUint(got["capeff"], 16, 64)
	if err != nil {
		t.Fatalf("CapEff %q: %v", got["capeff"], err)
	}
	const sysAdmin, sysPtrace, setuid, sysChroot = 21, 19, 7, 18
	if capEff&(1<<sysAdmin) != 0 || capEff&(1<<sysPtrace) != 0 || capEff&(1<<setuid) == 0 || capEff&(1<<sysChroot) == 0 {
		t.Errorf("CapEff %s: want no SYS_ADMIN nor SYS_PTRACE, SETUID and SYS_CHROOT kept", got["capeff"])
	}
	if got["mount"] != "refused" || got["fake"] != "0" || got["state"] != "0" {
		t.Errorf("mount %q, fake dir entries %q, state dir entries %q; want refused, 0, 0: %s", got["mount"], got["fake"], got["state"], srv.PodLog(created.ID))
	}
	if h, _ := os.Hostname(); h != host {
		t.Errorf("the host's hostname changed to %q", h)
	}
}
