//go:build linux

package runpodtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// requireRunner skips a test that needs the pod runner where it cannot run,
// and fails it instead when CI says the runner must be there.
func requireRunner(t *testing.T) {
	t.Helper()
	if err := localpod.Check(); err != nil {
		if os.Getenv("REQUIRE_SHELLS") == "1" || os.Getenv("REQUIRE_POD_RUNNER") == "1" {
			t.Fatalf("%v (REQUIRE_SHELLS or REQUIRE_POD_RUNNER is set)", err)
		}
		t.Skip(err)
	}
}

// podProcs lists the host pids of the pod's processes: its init (which
// names the pod in its arguments) and what carries the pod's id in its
// environment, every process the pod's command made.
func podProcs(t testing.TB, podID string) []int {
	t.Helper()
	marker := []byte("RUNPOD_POD_ID=" + podID + "\x00")
	initArgs := []byte("runpodtest-pod-init\x00" + podID + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue // gone, or a kernel thread
		}
		args, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.Contains(env, marker) || bytes.Equal(args, initArgs) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hostTree fingerprints a host directory (names, modes and contents), or
// says it is missing.
func hostTree(t testing.TB, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v", p, info.Mode())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteByte('\n')
		return nil
	})
	if os.IsNotExist(err) {
		return root + " missing"
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// waitFile polls for a file the pod writes, for up to a minute.
func waitFile(t testing.TB, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if data, err := os.ReadFile(path); err == nil {
			return data
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func facts(data []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func shPod(name, script string, env map[string]string) map[string]any {
	body := map[string]any{
		"name":  name,
		"image": "runpod/base:local",
		"gpu":   map[string]any{"id": gpu4090},
		"ports": []string{"22/tcp"},
		"args":  runpod.QuoteArgs([]string{"sh", "-c", script}),
	}
	if env != nil { // the document has no null env
		body["env"] = env
	}
	return body
}

// The pod's script for TestPodRunnerRunsThePodAsThePodWould: it writes what
// it sees to the network volume (a host directory), writes where the host
// must not change, calls the API with its own key, and leaves processes
// behind, one of them out of its process group.
const probeScript = `set -eu
out=/data/facts
{
  echo "secret=$SECRET_REF"
  echo "plain=$PLAIN"
  echo "pod_id=$RUNPOD_POD_ID"
  echo "api_url=$OVERBRAINER_API_URL"
  echo "ssh_port=$OVERBRAINER_SSH_PORT"
  echo "tcp22=$RUNPOD_TCP_PORT_22"
  echo "public_ip=$RUNPOD_PUBLIC_IP"
  echo "key_prefix=$(printf %s "$RUNPOD_API_KEY" | cut -c1-4)"
  echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"
  echo "etc_ssh_entries=$(ls -A /etc/ssh | wc -l)"
  echo "host_var=${HOST_ONLY_VAR:-unset}"
} > "$out.tmp"
echo pod > /etc/ssh/sshd_config
mkdir -p /root/.ssh && echo pod > /root/.ssh/authorized_keys
echo pod > /etc/overbrainer/job.env
mkdir -p "$OVERBRAINER_WORKDIR/run" && echo pod > "$OVERBRAINER_WORKDIR/run/file"
echo pod > /etc/runpodtest-probe
code() {
  printf 'Authorization: Bearer %s\n' "$RUNPOD_API_KEY" |
    curl -s -o /dev/null -w '%{http_code}' -H @- "$OVERBRAINER_API_URL/pods/$1"
}
echo "own=$(code "$RUNPOD_POD_ID")" >> "$out.tmp"
echo "other=$(code "$OTHER_POD")" >> "$out.tmp"
echo "leak key=$RUNPOD_API_KEY secret=$SECRET_REF"
setsid sleep 1000 </dev/null >/dev/null 2>&1 &
sleep 1000 &
mv "$out.tmp" "$out"
wait
`

func TestPodRunnerRunsThePodAsThePodWould(t *testing.T) {
	requireRunner(t)
	// A workdir under a top directory the host lacks: the pod must get it
	// without the host getting it.
	workTop := "/runpodtest-" + newID()
	t.Setenv("HOST_ONLY_VAR", "host")
	srv := newTestServer(t, WithPodRunner())
	srv.AddSecret("token", "s3cr3t-value-xyz")
	vol := srv.AddNetworkVolume("vol1", 20)
	// What the pod writes to, as the host has it.
	guarded := []string{"/etc/ssh", "/root/.ssh", "/etc/overbrainer", "/etc/runpodtest-probe", workTop}
	before := map[string]string{}
	for _, p := range guarded {
		before[p] = hostTree(t, p)
	}
	mountsBefore, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}

	other := createPod(t, srv, shPod("other", "exec sleep 1000", nil))
	body := shPod("probe", probeScript, map[string]string{
		"SECRET_REF":      "{{ RUNPOD_SECRET_token }}",
		"PLAIN":           "plain value",
		"OTHER_POD":       other.ID,
		podenv.WorkdirEnv: workTop + "/ob",
		podenv.APIURLEnv:  "https://api.runpod.io/v2",
	})
	body["mounts"] = map[string]any{"network": []any{map[string]any{"volumeId": "vol1", "path": "/data"}}}
	probe := createPod(t, srv, body)

	got := facts(waitFile(t, filepath.Join(vol.Dir, "facts")))
	pod, err := srv.WaitStatus(waitCtx(t), probe.ID, StatusRunning)
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(pod.SSHPort)
	want := map[string]string{
		"secret":          "s3cr3t-value-xyz",
		"plain":           "plain value",
		"pod_id":          probe.ID,
		"api_url":         srv.BaseURL(),
		"ssh_port":        port,
		"tcp22":           port,
		"public_ip":       "127.0.0.1",
		"key_prefix":      "rpa_",
		"pid1":            "runpodtest-pod-init " + probe.ID + " ",
		"etc_ssh_entries": "0",
		"host_var":        "unset",
		"own":             "200",
		"other":           "403",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the pod saw %s=%q, want %q", k, got[k], v)
		}
	}
	if pod.Env["SECRET_REF"] != "{{ RUNPOD_SECRET_token }}" {
		t.Errorf("the pod's env shows %q, want the placeholder", pod.Env["SECRET_REF"])
	}
	raw := mustCall(t, srv, srv.APIKey(), "GET", "/v2/pods/"+probe.ID, nil, 200)
	if wp := decode[wirePod](t, raw); wp.Runtime == nil || len(wp.Runtime.Ports) != 1 || wp.Runtime.Ports[0].Public == nil || *wp.Runtime.Ports[0].Public != pod.SSHPort {
		t.Errorf("runtime %+v, want port 22 at %d", wp.Runtime, pod.SSHPort)
	}

	// The host did not change, and saw none of the pod's mounts.
	for _, p := range guarded {
		if now := hostTree(t, p); now != before[p] {
			t.Errorf("host %s changed:\n%s\nwas:\n%s", p, now, before[p])
		}
	}
	if mountsNow, _ := os.ReadFile("/proc/self/mountinfo"); !bytes.Equal(mountsNow, mountsBefore) {
		t.Errorf("the host's mounts changed while the pod runs:\n%s", mountsNow)
	}

	// The pod log has the command's output, keys and secrets redacted.
	log := srv.PodLog(probe.ID)
	if !strings.Contains(log, "leak key="+redacted+" secret="+redacted) {
		t.Errorf("pod log %q", log)
	}
	if strings.Contains(log, srv.PodKey(probe.ID)) || strings.Contains(log, "s3cr3t-value-xyz") {
		t.Errorf("a secret reached the pod log: %q", log)
	}

	// DELETE returns once every process of the pod is gone, the daemon
	// that left the process group too; the other pod runs on.
	procs := podProcs(t, probe.ID)
	if len(procs) != 4 { // init, sh, two sleeps
		t.Errorf("pod processes %v, want init, sh and two sleeps", procs)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+probe.ID, nil, 204)
	if left := podProcs(t, probe.ID); len(left) != 0 {
		t.Errorf("processes %v left after DELETE", left)
	}
	if final, _ := srv.Pod(probe.ID); final.Status != StatusTerminated || final.Billing || final.Bill.RunSeconds <= 0 {
		t.Errorf("deleted pod: %s billing=%v bill %+v", final.Status, final.Billing, final.Bill)
	}
	if len(podProcs(t, other.ID)) == 0 {
		t.Error("the other pod died with the first")
	}
	mustCall(t, srv, srv.PodKey(other.ID), "DELETE", "/v2/pods/"+other.ID, nil, 204)
	if left := podProcs(t, other.ID); len(left) != 0 {
		t.Errorf("processes %v left after the pod deleted itself", left)
	}
	if data, err := os.ReadFile(filepath.Join(vol.Dir, "facts")); err != nil || len(data) == 0 {
		t.Errorf("the network volume lost its files: %v", err)
	}
}

// waitLog polls the pod's log for text, for up to a minute.
func waitLog(t testing.TB, srv *Server, id, text string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(srv.PodLog(id), text) {
		if time.Now().After(deadline) {
			t.Fatalf("pod %s never wrote %q; log: %q", id, text, srv.PodLog(id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPodRunnerStopKeepsTheVolumeAndBilling(t *testing.T) {
	requireRunner(t)
	srv := newTestServer(t, WithPodRunner(), WithStopGrace(time.Minute))
	// The persistent volume counts the starts.
	script := `n=$(cat /workspace/count 2>/dev/null || echo 0); n=$((n+1)); echo "$n" > /workspace/count
trap 'echo "term $n"; exit 0' TERM
echo "ready $n"
while :; do sleep 0.1; done`
	body := shPod("stopper", script, nil)
	body["mounts"] = map[string]any{"persistent": map[string]any{"size": 20, "path": "/workspace"}}
	p := createPod(t, srv, body)
	waitLog(t, srv, p.ID, "ready 1\n")
	mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods/"+p.ID+"/action", map[string]string{"action": "stop"}, 200)
	if left := podProcs(t, p.ID); len(left) != 0 {
		t.Errorf("processes %v left after stop", left)
	}
	// Stop asked first: the command had its SIGTERM, well before the grace.
	if log := srv.PodLog(p.ID); !strings.Contains(log, "term 1\n") {
		t.Errorf("the command got no SIGTERM on stop: log %q", log)
	}
	stopped, _ := srv.Pod(p.ID)
	if stopped.Status != StatusExited || !stopped.Billing {
		t.Errorf("stopped pod %s billing=%v: a stopped pod keeps billing its volume", stopped.Status, stopped.Billing)
	}

	mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods/"+p.ID+"/action", map[string]string{"action": "start"}, 200)
	// The persistent volume outlived the stop.
	waitLog(t, srv, p.ID, "ready 2\n")
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, 204)
	if left := podProcs(t, p.ID); len(left) != 0 {
		t.Errorf("processes %v left after DELETE", left)
	}
}

func TestPodRunnerCommandEndsAndFailures(t *testing.T) {
	requireRunner(t)
	srv := newTestServer(t, WithPodRunner(), WithExitedOnEnd())
	ctx := waitCtx(t)

	exits := createPod(t, srv, shPod("exits", "echo bye; exit 7", nil))
	p, err := srv.WaitStatus(ctx, exits.ID, StatusExited)
	if err != nil {
		t.Fatal(err)
	}
	if p.ExitCode != 7 || p.Billing || p.SSHPort != 0 || !strings.Contains(srv.PodLog(exits.ID), "bye") {
		t.Errorf("exited pod: code %d billing=%v port %d log %q", p.ExitCode, p.Billing, p.SSHPort, srv.PodLog(exits.ID))
	}

	missing := shPod("missing", "", nil)
	missing["args"] = runpod.QuoteArgs([]string{"no-such-command-here"})
	empty := shPod("empty", "", nil)
	empty["args"] = ""
	badQuote := shPod("bad quote", "", nil)
	badQuote["args"] = "sh -c 'unterminated"
	for body, want := range map[*map[string]any]string{&missing: "command not found", &empty: "no command", &badQuote: "unterminated"} {
		created := createPod(t, srv, *body)
		p, err := srv.WaitStatus(ctx, created.ID, StatusError)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Error, want) || p.Billing {
			t.Errorf("%s: error %q billing=%v, want %q", p.Name, p.Error, p.Billing, want)
		}
		mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+created.ID, nil, 204)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+exits.ID, nil, 204)
}

// Without root, a pod says why it cannot run (localpod's tests hold
// localpod.Check to what it says without root).
func TestPodRunnerWithoutRootSaysSo(t *testing.T) {
	saved := checkPodRunner
	checkPodRunner = func() error { return localpod.ErrNeedsRoot }
	t.Cleanup(func() { checkPodRunner = saved })
	srv := newTestServer(t, WithPodRunner())
	created := createPod(t, srv, shPod("rootless", "true", nil))
	p, err := srv.WaitStatus(waitCtx(t), created.ID, StatusError)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Error, "needs root") || !strings.Contains(srv.PodLog(created.ID), "needs root") {
		t.Errorf("error %q, log %q", p.Error, srv.PodLog(created.ID))
	}
	raw := mustCall(t, srv, srv.APIKey(), "GET", "/v2/pods/"+created.ID, nil, http.StatusOK)
	if wp := decode[wirePod](t, raw); wp.Status != StatusError || wp.Cost != 0 {
		t.Errorf("API shows %s at %v", wp.Status, wp.Cost)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+created.ID, nil, 204)
}

func TestCloseKillsEveryPod(t *testing.T) {
	requireRunner(t)
	srv := NewServer(checked(t), WithPodRunner())
	var ids []string
	for i := range 3 {
		p := createPod(t, srv, shPod(fmt.Sprint("pod", i), "setsid sleep 1000 & exec sleep 1000", nil))
		ids = append(ids, p.ID)
	}
	for _, id := range ids {
		if _, err := srv.WaitStatus(waitCtx(t), id, StatusRunning); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()
	for _, id := range ids {
		if left := podProcs(t, id); len(left) != 0 {
			t.Errorf("pod %s: processes %v left after Close", id, left)
		}
		if p, _ := srv.Pod(id); p.Status != StatusTerminated || p.Billing {
			t.Errorf("pod %s is %s after Close", id, p.Status)
		}
	}
	if _, err := os.Stat(srv.tmp); !os.IsNotExist(err) {
		t.Errorf("the fake's directory %s is still there: %v", srv.tmp, err)
	}
}

// A DELETE that comes while a stop waits out its grace ends the pod at once,
// and a second stop meanwhile is refused.
func TestPodRunnerDeleteCutsAStopShort(t *testing.T) {
	requireRunner(t)
	// A grace far longer than the test's timeout: only the DELETE can end
	// the stop in time.
	srv := newTestServer(t, WithPodRunner(), WithStopGrace(time.Hour))
	p := createPod(t, srv, shPod("stubborn", `trap 'echo got-term' TERM; echo ready; while :; do sleep 0.1; done`, nil))
	waitLog(t, srv, p.ID, "ready\n")
	stopped := callInBackground(srv, "POST", "/pods/"+p.ID+"/action", `{"action":"stop"}`)
	waitLog(t, srv, p.ID, "got-term\n")
	if got, _ := srv.Pod(p.ID); got.Status != StatusRunning {
		t.Errorf("a pod whose command still runs shows %s", got.Status)
	}
	checkProblem(t, srv, srv.APIKey(), "POST", "/v2/pods/"+p.ID+"/action", map[string]string{"action": "stop"}, http.StatusConflict)
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)
	if left := podProcs(t, p.ID); len(left) != 0 {
		t.Errorf("processes %v left after DELETE", left)
	}
	select {
	case status := <-stopped:
		if status != http.StatusOK {
			t.Errorf("the stop answered %d", status)
		}
	case <-waitCtx(t).Done():
		t.Fatal("the stop never returned")
	}
	if got, _ := srv.Pod(p.ID); got.Status != StatusTerminated || got.Billing {
		t.Errorf("pod %s, billing=%v", got.Status, got.Billing)
	}
}

// A stop that comes while the pod starts, once its command runs but before
// the runner knows its processes, still reaches the command as SIGTERM: the
// command has written its log, so a test (or a client) may well stop it
// then. The runner is held in that window until the stop has asked.
func TestPodRunnerStopWhileStartingTermsTheCommand(t *testing.T) {
	requireRunner(t)
	srv := newTestServer(t, WithPodRunner(), WithStopGrace(time.Hour))
	inWindow := make(chan struct{})
	srv.podStarted = func(l *launch) {
		close(inWindow)
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			l.mu.Lock()
			asked := l.termPending
			l.mu.Unlock()
			if asked {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	p := createPod(t, srv, shPod("early stop", `trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.1; done`, nil))
	select {
	case <-inWindow:
	case <-waitCtx(t).Done():
		t.Fatal("the pod never started")
	}
	waitLog(t, srv, p.ID, "ready\n")
	if got, _ := srv.Pod(p.ID); got.Status == StatusRunning {
		t.Fatalf("the pod shows %s before the runner knows its processes", got.Status)
	}
	// The command exits by itself on SIGTERM: the stop returns long before
	// its hour of grace, with the pod EXITED.
	resp := mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods/"+p.ID+"/action", map[string]string{"action": "stop"}, http.StatusOK)
	if wp := decode[wirePod](t, resp); wp.Status != StatusExited {
		t.Errorf("the stop answered a pod %s", wp.Status)
	}
	if log := srv.PodLog(p.ID); !strings.Contains(log, "got-term\n") {
		t.Errorf("the command never got SIGTERM; log %q", log)
	}
	if left := podProcs(t, p.ID); len(left) != 0 {
		t.Errorf("processes %v left after the stop", left)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)
}

// A pod's /root is its own and starts empty: the host's (its .bashrc, which
// may run pyenv or conda in every SSH session, and its keys) is none of the
// pod's business, and what the pod writes there, the bootstrap's
// authorized_keys above all, never reaches the host.
func TestPodRunnerPodHasItsOwnRoot(t *testing.T) {
	requireRunner(t)
	// Something of the host's in /root for the pod to (not) see, whatever
	// this machine's /root holds.
	marker := "/root/.runpodtest-host-" + newID()
	if err := os.WriteFile(marker, []byte("host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(marker) })
	guarded := []string{marker, "/root/.bashrc", "/root/.ssh", "/root/pod-was-here"}
	before := map[string]string{}
	for _, p := range guarded {
		before[p] = hostTree(t, p)
	}

	srv := newTestServer(t, WithPodRunner(), WithExitedOnEnd())
	script := `set -eu
echo "home=$HOME entries=[$(ls -A /root | tr '\n' ' ')] mode=$(stat -c '%a %U' /root)"
mkdir -p /root/.ssh && echo pod > /root/.ssh/authorized_keys
echo pod > /root/.bashrc
echo pod > /root/pod-was-here
echo "after=[$(ls -A /root | tr '\n' ' ')]"`
	p := createPod(t, srv, shPod("home", script, nil))
	got, err := srv.WaitStatus(waitCtx(t), p.ID, StatusExited)
	if err != nil {
		t.Fatal(err)
	}
	log := srv.PodLog(p.ID)
	if got.ExitCode != 0 {
		t.Fatalf("the pod's script failed (%d): %q", got.ExitCode, log)
	}
	for _, want := range []string{
		"home=/root entries=[] mode=700 root\n",
		"after=[.bashrc .ssh pod-was-here ]\n",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the pod's log %q lacks %q", log, want)
		}
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)

	// A volume mounted at /root is the pod's home, not hidden under it.
	body := shPod("home on a volume", `echo pod > /root/on-volume`, nil)
	body["mounts"] = map[string]any{"persistent": map[string]any{"size": 10, "path": "/root"}}
	onVol := createPod(t, srv, body)
	if got, err := srv.WaitStatus(waitCtx(t), onVol.ID, StatusExited); err != nil || got.ExitCode != 0 {
		t.Fatalf("pod %+v, %v; log %q", got, err, srv.PodLog(onVol.ID))
	}
	if data, err := os.ReadFile(filepath.Join(srv.tmp, "pods", onVol.ID, "persistent", "on-volume")); string(data) != "pod\n" {
		t.Errorf("the volume at /root has %q, %v", data, err)
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+onVol.ID, nil, http.StatusNoContent)

	for _, p := range guarded {
		if now := hostTree(t, p); now != before[p] {
			t.Errorf("host %s changed:\n%s\nwas:\n%s", p, now, before[p])
		}
	}
}

// NewServer sets URL before its HTTP server can answer: the pod runner
// reads BaseURL in the goroutines of a request, and a request from another
// process is not ordered after NewServer for the race detector, so `go test
// -race` fails this test when the order is wrong.
func TestURLIsSetBeforeTheServerServes(t *testing.T) {
	requireRunner(t)
	curl := shtest.NeedTool(t, "curl")
	// Everything curl reads is written before the server exists: a write
	// of this process after NewServer would order it before the request
	// for the race detector, and hide the race.
	dir := t.TempDir()
	key := newKey()
	cfg := filepath.Join(dir, "curl.cfg")
	conf := "header = \"Authorization: Bearer " + key + "\"\nheader = \"Content-Type: application/json\"\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(shPod("url", `echo "api=$OVERBRAINER_API_URL"`, nil))
	if err != nil {
		t.Fatal(err)
	}
	bodyFile := filepath.Join(dir, "body.json")
	if err := os.WriteFile(bodyFile, body, 0o600); err != nil {
		t.Fatal(err)
	}

	srv := newTestServer(t, WithPodRunner(), WithExitedOnEnd(), WithAPIKey(key))
	out, err := exec.Command(curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}",
		"-K", cfg, "--data-binary", "@"+bodyFile, srv.BaseURL()+"/pods").Output()
	if err != nil || string(out) != "201" {
		t.Fatalf("curl: %v, status %q", err, out)
	}
	pods := srv.Pods()
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1", len(pods))
	}
	id := pods[0].ID
	if _, err := srv.WaitStatus(waitCtx(t), id, StatusExited); err != nil {
		t.Fatal(err)
	}
	if log, want := srv.PodLog(id), "api="+srv.BaseURL()+"\n"; log != want {
		t.Errorf("the pod's log %q, want %q", log, want)
	}
	if srv.BaseURL() != srv.URL+"/v2" || !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Errorf("URL %q, BaseURL %q", srv.URL, srv.BaseURL())
	}
	mustCall(t, srv, key, "DELETE", "/v2/pods/"+id, nil, http.StatusNoContent)
}

// A running pod's port is its command's to listen on (the fake let go of
// its hold before the command ran), and stays the fake's until the pod ends.
func TestPodRunnerCommandListensOnItsPort(t *testing.T) {
	requireRunner(t)
	shtest.NeedTool(t, "busybox")
	srv := newTestServer(t, WithPodRunner(), WithExitedOnEnd())
	// An echo server on the pod's port, for one connection.
	p := createPod(t, srv, shPod("listener", `exec busybox nc -l -p "$OVERBRAINER_SSH_PORT" -e cat`, nil))
	running, err := srv.WaitStatus(waitCtx(t), p.ID, StatusRunning)
	if err != nil {
		t.Fatal(err)
	}
	port := running.SSHPort
	if !portReserved(port) {
		t.Errorf("running pod's port %d is not reserved", port)
	}
	echo := func() error {
		conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte("ping\n")); err != nil {
			return err
		}
		buf := make([]byte, 5)
		if _, err := io.ReadFull(conn, buf); err != nil {
			return err
		}
		if string(buf) != "ping\n" {
			return fmt.Errorf("echo %q", buf)
		}
		return nil
	}
	deadline := time.Now().Add(time.Minute)
	for err := echo(); err != nil; err = echo() {
		if now, _ := srv.Pod(p.ID); now.Status != StatusRunning || time.Now().After(deadline) {
			t.Fatalf("the pod's command never answered on port %d: %v; log %q", port, err, srv.PodLog(p.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	exited, err := srv.WaitStatus(waitCtx(t), p.ID, StatusExited)
	if err != nil {
		t.Fatal(err)
	}
	if exited.SSHPort != 0 || portReserved(port) {
		t.Errorf("exited pod shows port %d; %d reserved: %v", exited.SSHPort, port, portReserved(port))
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)
}

// Two DELETEs of one pod at once (two sweepers that judged it together):
// one ends it, the other finds it gone, as a serial API answers them. The
// fake holds the first in its kill until the second has come.
func TestTwoDeletesAtOnceEndThePodOnce(t *testing.T) {
	requireRunner(t)
	srv := newTestServer(t, WithPodRunner())
	p := createPod(t, srv, shPod("twice", `echo ready; exec sleep 1000`, nil))
	waitLog(t, srv, p.ID, "ready\n")
	second := make(chan struct{})
	calls := 0
	var mu sync.Mutex
	var statuses <-chan int
	srv.terminating = func(first bool) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n != 1 {
			close(second)
			return
		}
		mu.Lock()
		statuses = callInBackground(srv, "DELETE", "/pods/"+p.ID, "")
		mu.Unlock()
		select {
		case <-second:
		case <-time.After(time.Minute):
		}
	}
	status, _, raw := call(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil)
	mu.Lock()
	ch := statuses
	mu.Unlock()
	other := <-ch
	if ok := []int{status, other}; !(slices.Contains(ok, http.StatusNoContent) && slices.Contains(ok, http.StatusNotFound)) {
		t.Errorf("two DELETEs at once answered %d (%s) and %d: want one 204 and one 404", status, raw, other)
	}
	if got, _ := srv.Pod(p.ID); got.Status != StatusTerminated || got.Billing {
		t.Errorf("pod %s, billing=%v", got.Status, got.Billing)
	}
}

// callInBackground makes an API call on its own goroutine and sends its
// status, or -1 when it got none. Not call: t.Fatal must stay on the
// test's goroutine.
func callInBackground(srv *Server, method, path, body string) <-chan int {
	status := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(method, srv.BaseURL()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+srv.APIKey())
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- -1
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	return status
}

// TestTerminatedMeansItsDeleteIsLogged: whoever sees a pod TERMINATED
// finds the DELETE that ended it logged with its status. The pod's files,
// many of them, make the fake's clean-up between the two slow enough for
// a reader that polls to land there.
func TestTerminatedMeansItsDeleteIsLogged(t *testing.T) {
	requireRunner(t)
	srv := newTestServer(t, WithPodRunner())
	p := createPod(t, srv, shPod("logged", `echo ready; exec sleep 1000`, nil))
	waitLog(t, srv, p.ID, "ready\n")
	dir := filepath.Join(srv.tmp, "pods", p.ID, "many")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The reader stops at its first sight of TERMINATED and says whether
	// the DELETE had its status then; stop ends it on a failed DELETE.
	stop := make(chan struct{})
	defer close(stop)
	logged := make(chan bool, 1)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if got, _ := srv.Pod(p.ID); got.Status != StatusTerminated {
				continue
			}
			ok := true
			for _, r := range srv.Requests() {
				ok = ok && !(r.Method == "DELETE" && r.Status == 0)
			}
			logged <- ok
			return
		}
	}()
	status, _, raw := call(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil)
	if status != http.StatusNoContent {
		t.Fatalf("DELETE answered %d: %s", status, raw)
	}
	if !<-logged {
		t.Error("the pod was TERMINATED while its DELETE had no status logged")
	}
}
