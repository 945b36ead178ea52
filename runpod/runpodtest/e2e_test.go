//go:build linux

package runpodtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The whole pod path, end to end, with the real bootstrap and watchdog: the
// fake runs the pod's command, the bootstrap starts sshd and hands over to
// the watchdog, the test plays the client over SSH, and the watchdog's own
// DELETE, made with the pod's key, ends the pod and its bill.

const e2eWorkdir = "/workspace/overbrainer"

// e2eCtx bounds a whole end-to-end run: boot, SSH, the job and the
// watchdog's own DELETE. A pod takes seconds on an idle machine, but minutes
// on a loaded one (sshd, curl and the watchdog's ticks all wait for a CPU),
// so the bound is generous: it only stops a run that is really stuck.
func e2eCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

type e2eRun struct {
	t      *testing.T
	srv    *Server
	runID  string
	hostPK ssh.PublicKey
	client ssh.Signer
	podID  string
	ctx    context.Context // bounds the whole run (e2eCtx)
	// volumeDir is the host directory of the network volume mounted at
	// /workspace, when the run has one: the run's files outlive the pod
	// there.
	volumeDir string
}

func newKeyPair(t testing.TB) (ed25519.PrivateKey, ssh.Signer) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return priv, signer
}

func authorizedLine(pk ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk)))
}

type e2eOptions struct {
	onVolume  bool // the workdir lies on a network volume
	wrongHost bool // the host key secret is not the claimed one
	opts      []Option
	// image is the pod's image (default: one the fake does not know);
	// asCMD sends the bootstrap in args, as the image's CMD, instead of as
	// its entrypoint and cmd.
	image string
	asCMD bool
	env   map[string]string // added to the pod's env
}

// startRun makes a run's keys and secret as the client would (the secret
// through POST /v2/account/secrets), and creates its pod with the bootstrap as its
// entrypoint and cmd (bootstrap.Entrypoint, bootstrap.Cmd) and podenv's env.
func startRun(t *testing.T, o e2eOptions) *e2eRun {
	t.Helper()
	requireRunner(t)
	if p, err := exec.LookPath("runpodctl"); err == nil {
		t.Fatalf("%s is on PATH: the watchdog's last fallback would call the real Runpod", p)
	}
	for _, tool := range []string{"bash", "curl", "/usr/sbin/sshd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the pod needs %s: %v", tool, err)
		}
	}
	srv := newTestServer(t, append([]Option{WithPodRunner()}, o.opts...)...)
	r := &e2eRun{t: t, srv: srv, runID: "e2e-" + newID()[:8], ctx: e2eCtx(t)}

	hostPriv, hostSigner := newKeyPair(t)
	r.hostPK = hostSigner.PublicKey()
	_, r.client = newKeyPair(t)
	if o.wrongHost {
		hostPriv, _ = newKeyPair(t)
	}
	block, err := ssh.MarshalPrivateKey(hostPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, srv, srv.APIKey(), "POST", "/v2/account/secrets", map[string]any{
		"name":  podenv.HostKeySecretName(r.runID),
		"value": base64.StdEncoding.EncodeToString(pem.EncodeToMemory(block)),
	}, 201)

	env, err := podenv.Settings{
		RunID:   r.runID,
		Workdir: e2eWorkdir,
		Rules: podenv.Rules{
			Deadline:      time.Now().Add(time.Hour),
			BootGrace:     10 * time.Minute,
			RetrieveGrace: 10 * time.Minute,
		},
		APIURL:        "https://api.runpod.io/v2", // the fake points it back at itself
		AuthorizedKey: authorizedLine(r.client.PublicKey()),
		Claim:         authorizedLine(r.hostPK),
	}.Env()
	if err != nil {
		t.Fatal(err)
	}
	// A tick a second, so that the test is quick.
	env[podenv.IntervalEnv] = "1"
	env[podenv.ProbeWaitEnv] = "1"
	maps.Copy(env, o.env)

	body := map[string]any{
		"name":  "overbrainer-" + r.runID,
		"image": "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
		"gpu":   map[string]any{"id": gpu4090, "count": 1},
		"ports": []string{"22/tcp"},
		"env":   env,
	}
	if o.image != "" {
		body["image"] = o.image
	}
	if o.asCMD {
		body["args"] = runpod.QuoteArgs(bootstrap.Command())
	} else {
		body["entrypoint"], body["cmd"] = bootstrap.Entrypoint(), bootstrap.Cmd()
	}
	if o.onVolume {
		v := srv.AddNetworkVolume("vol-"+r.runID, 50)
		r.volumeDir = v.Dir
		body["mounts"] = map[string]any{"network": []any{map[string]any{"volumeId": v.ID, "path": "/workspace"}}}
	}
	created := time.Now()
	r.podID = createPod(t, srv, body).ID
	t.Cleanup(func() {
		if t.Failed() {
			p, _ := srv.Pod(r.podID)
			t.Logf("pod %s after %v: %s; its calls: %q", r.podID, time.Since(created).Round(time.Second), p.Status, r.podCalls())
			t.Logf("pod log:\n%s", srv.PodLog(r.podID))
			if r.volumeDir != "" {
				wlog, _ := os.ReadFile(r.hostFile(watchdog.Log))
				t.Logf("watchdog log:\n%s", wlog)
			}
		}
	})
	return r
}

// hostFile is where a run file lies on the host, for a run on a volume.
func (r *e2eRun) hostFile(name string) string {
	return filepath.Join(r.volumeDir, strings.TrimPrefix(e2eWorkdir, "/workspace"), r.runID, name)
}

func (r *e2eRun) runDir() string { return path.Join(e2eWorkdir, r.runID) }

// dial connects to the pod's sshd as the client does: with the run's client
// key, trusting only the run's host key. It retries until sshd answers.
func (r *e2eRun) dial(ctx context.Context) *ssh.Client {
	r.t.Helper()
	pod, err := r.srv.WaitStatus(ctx, r.podID, StatusRunning)
	if err != nil {
		r.t.Fatal(err)
	}
	cfg := &ssh.ClientConfig{
		User:            "root",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(r.client)},
		HostKeyCallback: ssh.FixedHostKey(r.hostPK),
		Timeout:         10 * time.Second,
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pod.SSHPort))
	for {
		c, err := ssh.Dial("tcp", addr, cfg)
		if err == nil {
			return c
		}
		if strings.Contains(err.Error(), "host key mismatch") || strings.Contains(err.Error(), "unable to authenticate") {
			r.t.Fatalf("ssh %s: %v", addr, err)
		}
		select {
		case <-ctx.Done():
			r.t.Fatalf("sshd never answered on %s: %v", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// run runs a command on the pod over SSH and returns its output. A session
// has no deadline of its own: one stuck past the run's ctx closes the
// client, so that the test fails with a reason instead of hanging.
func (r *e2eRun) run(c *ssh.Client, cmd string) string {
	r.t.Helper()
	stop := context.AfterFunc(r.ctx, func() { c.Close() })
	defer stop()
	s, err := c.NewSession()
	if err != nil {
		r.t.Fatalf("ssh %q: %v (ctx: %v)", cmd, err, r.ctx.Err())
	}
	defer s.Close()
	var out, stderr bytes.Buffer
	s.Stdout, s.Stderr = &out, &stderr
	if err := s.Run(cmd); err != nil {
		r.t.Fatalf("ssh %q: %v (ctx: %v): %s", cmd, err, r.ctx.Err(), stderr.String())
	}
	return out.String()
}

// waitVerdict polls the watchdog's verdict over SSH.
func (r *e2eRun) waitVerdict(ctx context.Context, c *ssh.Client) string {
	r.t.Helper()
	file := path.Join(r.runDir(), watchdog.VerdictFile)
	for {
		if v := strings.TrimSpace(r.run(c, "cat "+file+" 2>/dev/null || :")); v != "" {
			return v
		}
		select {
		case <-ctx.Done():
			r.t.Fatalf("no verdict in %s", file)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// httpCode matches an HTTP status code as a word of its own, never the
// digits of a Unix time.
func httpCode(code string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^0-9])` + code + `([^0-9]|$)`)
}

// watchdogLog reads the watchdog log of a run on a volume.
func (r *e2eRun) watchdogLog() string {
	r.t.Helper()
	data, err := os.ReadFile(r.hostFile(watchdog.Log))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(data)
}

// podCalls lists the calls the pod's own key made, as "METHOD path status".
func (r *e2eRun) podCalls() []string {
	var out []string
	for _, req := range r.srv.Requests() {
		if req.Caller != r.podID {
			continue
		}
		if req.Header.Get("Authorization") != "Bearer "+r.srv.PodKey(r.podID) {
			r.t.Errorf("a call by the pod without its key: %+v", req)
		}
		out = append(out, fmt.Sprintf("%s %s %d", req.Method, strings.TrimPrefix(req.Path, "/v2/pods/"+r.podID), req.Status))
	}
	return out
}

// checkEnded checks that the pod was terminated by its own DELETE, that
// nothing of it runs, and that it billed exactly its running time at its
// rate, which never exceeds maxSeconds.
func (r *e2eRun) checkEnded(ctx context.Context, maxSeconds float64) Pod {
	r.t.Helper()
	p, err := r.srv.WaitStatus(ctx, r.podID, StatusTerminated)
	if err != nil {
		r.t.Fatal(err)
	}
	// A TERMINATED pod's DELETE has its answer logged (terminate).
	calls := r.podCalls()
	if len(calls) == 0 || calls[len(calls)-1] != "DELETE  204" {
		r.t.Errorf("the pod's calls %q: want its own DELETE, answered 204, last", calls)
	}
	if left := podProcs(r.t, r.podID); len(left) != 0 {
		r.t.Errorf("processes %v of the pod left running", left)
	}
	if billing := r.srv.Billing(); len(billing) != 0 {
		r.t.Errorf("pods still billing: %+v", billing)
	}
	b := p.Bill
	if b.RunSeconds <= 0 || b.RunSeconds > maxSeconds || b.StoppedSeconds != 0 {
		r.t.Errorf("billed %+v, want between 0 and %v running seconds, none stopped", b, maxSeconds)
	}
	if want := b.RunSeconds * p.CostPerHr / 3600; !near(b.USD, want) || p.CostPerHr != 0.69 {
		r.t.Errorf("billed $%v for %vs at $%v/h, want $%v", b.USD, b.RunSeconds, p.CostPerHr, want)
	}
	if got := p.EndedAt.Sub(p.StartedAt).Seconds(); got != b.RunSeconds {
		r.t.Errorf("billed %vs for a pod that ran %vs", b.RunSeconds, got)
	}
	return p
}

func TestE2ERetrievedJobEndsThePod(t *testing.T) {
	r := startRun(t, e2eOptions{})
	ctx := r.ctx
	begin := time.Now()
	c := r.dial(ctx)
	defer c.Close()
	if v := r.waitVerdict(ctx, c); v != "ready" {
		t.Fatalf("verdict %q", v)
	}
	// The job: its pid, a moment of work, its exit code.
	r.run(c, "cd "+r.runDir()+" && sh -c 'echo $$ > job.pid; sleep 1; echo 0 > exit_code'")
	if got := strings.TrimSpace(r.run(c, "cat "+path.Join(r.runDir(), watchdog.ExitCode))); got != "0" {
		t.Fatalf("exit_code %q", got)
	}
	// Nothing secret in the job's environment file.
	jobEnv := r.run(c, "cat "+podenv.JobEnv)
	if strings.Contains(jobEnv, r.srv.PodKey(r.podID)) || strings.Contains(jobEnv, "BEGIN OPENSSH") || strings.Contains(jobEnv, "RUNPOD_API_KEY") || strings.Contains(jobEnv, podenv.HostKeyEnv) {
		t.Errorf("%s holds a secret:\n%s", podenv.JobEnv, jobEnv)
	}
	if p, _ := r.srv.Pod(r.podID); p.Status != StatusRunning {
		t.Fatalf("the pod is %s before the results were retrieved", p.Status)
	}
	r.run(c, "touch "+path.Join(r.runDir(), watchdog.Retrieved))
	r.checkEnded(ctx, time.Since(begin).Seconds()+120)
	calls := r.podCalls()
	if calls[0] != "GET  200" {
		t.Errorf("the watchdog's first call %q, want its probe GET answered 200", calls[0])
	}
	if log := r.srv.PodLog(r.podID); strings.Contains(log, r.srv.PodKey(r.podID)) {
		t.Error("the pod key reached the pod log")
	}
}

func TestE2ECostCapEndsThePodWithoutTheClient(t *testing.T) {
	r := startRun(t, e2eOptions{})
	ctx := r.ctx
	c := r.dial(ctx)
	if v := r.waitVerdict(ctx, c); v != "ready" {
		t.Fatalf("verdict %q", v)
	}
	// A job that would run for ever, then a cost cap two seconds ahead, and
	// the client goes: no lease, no retrieval.
	r.run(c, "cd "+r.runDir()+" && (setsid sh -c 'echo $$ > job.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &)")
	capAt := time.Now().Add(2 * time.Second).Unix()
	r.run(c, fmt.Sprintf("echo %d > %s", capAt, path.Join(r.runDir(), watchdog.CostCapAt)))
	c.Close()
	p := r.checkEnded(ctx, float64(capAt-time.Now().Unix())+600)
	// The cap came while the job ran: the pod went at the first tick after
	// it, not before.
	if p.EndedAt.Unix() < capAt {
		t.Errorf("deleted at %v, before the cap %v", p.EndedAt.Unix(), capAt)
	}
}

func TestE2EFailedBootstrapDeletesItsPod(t *testing.T) {
	r := startRun(t, e2eOptions{onVolume: true, wrongHost: true})
	ctx := r.ctx
	p := r.checkEnded(ctx, 600)
	verdict, _ := os.ReadFile(r.hostFile(watchdog.VerdictFile))
	if !strings.HasPrefix(string(verdict), "failed bootstrap") {
		t.Errorf("verdict %q, want a failed bootstrap", verdict)
	}
	if reason, err := os.ReadFile(r.hostFile(watchdog.BootstrapFailed)); err != nil || len(reason) == 0 {
		t.Errorf("%s: %q %v", watchdog.BootstrapFailed, reason, err)
	}
	if wlog := r.watchdogLog(); !strings.Contains(wlog, "bootstrap_failed") {
		t.Errorf("the watchdog log gives no bootstrap_failed reason:\n%s", wlog)
	}
	if p.SSHPort != 0 {
		t.Errorf("a terminated pod still maps port %d", p.SSHPort)
	}
}

func TestE2EWatchdogOutlastsARefusingAPI(t *testing.T) {
	r := startRun(t, e2eOptions{onVolume: true})
	ctx := r.ctx
	begin := time.Now()
	c := r.dial(ctx)
	defer c.Close()
	if v := r.waitVerdict(ctx, c); v != "ready" {
		t.Fatalf("verdict %q", v)
	}
	r.run(c, "cd "+r.runDir()+" && sh -c 'echo $$ > job.pid; echo 0 > exit_code'")
	// For three ticks, the API refuses every way the watchdog has to end
	// the pod: DELETE, then the terminate and stop actions.
	r.srv.Fail("DELETE", "/v2/pods/*", Fault{Times: 3, Status: 503, Caller: r.podID})
	r.srv.Fail("POST", "/v2/pods/*/action", Fault{Times: 6, Status: 503, Caller: r.podID})
	r.run(c, "touch "+path.Join(r.runDir(), watchdog.Retrieved))
	r.checkEnded(ctx, time.Since(begin).Seconds()+600)

	var tail []string
	for _, call := range r.podCalls() {
		if !strings.HasPrefix(call, "GET ") {
			tail = append(tail, call)
		}
	}
	want := slices.Repeat([]string{"DELETE  503", "POST /action 503", "POST /action 503"}, 3)
	want = append(want, "DELETE  204")
	if !slices.Equal(tail, want) {
		t.Errorf("the watchdog's calls:\n  %s\nwant:\n  %s", strings.Join(tail, "\n  "), strings.Join(want, "\n  "))
	}
	// The watchdog's log says the same: nine refused calls, one a line
	// (the format is the watchdog's own, so only the codes of its
	// delete_code lines are counted: delete_failed repeats them). The
	// fourth DELETE ended it before it could log the answer, as on Runpod,
	// where the pod dies with its container.
	wlog := r.watchdogLog()
	var codes []string
	for _, line := range strings.Split(wlog, "\n") {
		if strings.Contains(line, string(watchdog.KindDeleteCode)) {
			codes = append(codes, line)
		}
	}
	if n := len(httpCode("503").FindAllString(strings.Join(codes, "\n"), -1)); n != 9 || httpCode("204").MatchString(wlog) {
		t.Errorf("the watchdog log shows %d refused calls (want 9) or a 204:\n%s", n, wlog)
	}
}
