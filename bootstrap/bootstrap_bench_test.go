package bootstrap_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// BenchmarkCommandSize reports the size of the pod's start command as the
// create call sends it, as entrypoint and cmd (bootstrap.Entrypoint and
// bootstrap.Cmd; see "The start command" in runpod's package doc):
// cmd-bytes is its words together, the size bounded by
// bootstrap.MaxCommandBytes (24 KiB); json-bytes is the two JSON-encoded
// as the create body's members, their share of the body Runpod refuses
// past runpod.MaxCreatePodBody (100 KiB). The loop times that encoding.
// watchdog-bytes is the watchdog alone, the payload the command has to
// carry (the baseline), as package watchdog embeds it: with the comment
// lines the command leaves out.
//
//	go test -run '^$' -bench CommandSize -benchtime 1x ./bootstrap
func BenchmarkCommandSize(b *testing.B) {
	type startCommand struct {
		Entrypoint []string `json:"entrypoint"`
		Cmd        []string `json:"cmd"`
	}
	var js []byte
	for b.Loop() {
		var err error
		if js, err = json.Marshal(startCommand{bootstrap.Entrypoint(), bootstrap.Cmd()}); err != nil {
			b.Fatal(err)
		}
	}
	words := 0
	for _, w := range bootstrap.Command() {
		words += len(w)
	}
	b.ReportMetric(float64(words), "cmd-bytes")
	b.ReportMetric(float64(len(js)-len("{}")), "json-bytes")
	b.ReportMetric(float64(len(bootstrap.Script())), "script-bytes")
	b.ReportMetric(float64(len(watchdog.Script())), "watchdog-bytes")
	// No check against bootstrap.MaxCommandBytes here: a failed benchmark
	// prints no numbers, and the summary compares them with the goal.
}

// BenchmarkBootToReady boots the pod's command (bash -c, as on a pod) in a
// private mount and PID namespace, as the boot tests do, against a fake API,
// and reports the seconds from the start of unshare to:
//
//   - s/sshd: the bootstrap saying sshd listens;
//   - s/ready: the watchdog's `ready` verdict in .pod/watchdog;
//   - s/login: a first command run over SSH with the client key.
//
// The baseline sub-benchmark does the least a pod must do to get there, in
// the same namespace: decode the host key, start the same sshd, probe the
// API once with curl, write the verdict. Needs root, unshare and sshd.
//
//	go test -run '^$' -bench BootToReady -benchtime 1x -count 5 ./bootstrap
func BenchmarkBootToReady(b *testing.B) {
	if os.Geteuid() != 0 {
		benchNeed(b, "BootToReady runs as root (private namespaces)")
	}
	for _, tool := range []string{"unshare", "curl", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			benchNeed(b, tool+" is not installed")
		}
	}
	if _, err := os.Stat(sshdPath); err != nil {
		benchNeed(b, sshdPath+" is not installed")
	}
	for _, name := range []string{"bootstrap", "baseline"} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sshd, ready, login := bootOnce(b, name == "baseline")
				b.ReportMetric(sshd.Seconds(), "s/sshd")
				b.ReportMetric(ready.Seconds(), "s/ready")
				b.ReportMetric(login.Seconds(), "s/login")
			}
		})
	}
}

func benchNeed(b *testing.B, msg string) {
	b.Helper()
	if shtest.Required() {
		b.Fatalf("%s (required: REQUIRE_SHELLS=1)", msg)
	}
	b.Skip(msg)
}

// benchBaseline is the baseline pod's command: the host key, sshd with the
// bootstrap's own options, one probe, the verdict.
const benchBaseline = `set -e
umask 077
printf '%s\n' "$BENCH_HOST_KEY" | base64 -d > /etc/overbrainer/host_key
mkdir -p /run/sshd /root/.ssh
printf '%s\n' "$OVERBRAINER_AUTHORIZED_KEY" > /root/.ssh/authorized_keys
cat > /etc/overbrainer/sshd_config <<EOF
Port $OVERBRAINER_SSH_PORT
ListenAddress 127.0.0.1
HostKey /etc/overbrainer/host_key
PidFile /etc/overbrainer/sshd.pid
AuthorizedKeysFile /root/.ssh/authorized_keys
AuthenticationMethods publickey
PasswordAuthentication no
PermitRootLogin prohibit-password
UsePAM no
UseDNS no
EOF
/usr/sbin/sshd -f /etc/overbrainer/sshd_config
until [ -s /etc/overbrainer/sshd.pid ]; do sleep 0.1; done
echo "baseline: sshd listening" >&2
printf 'Authorization: Bearer %s\n' "$RUNPOD_API_KEY" | curl -s -o /dev/null -H @- "$OVERBRAINER_API_URL/pods/$RUNPOD_POD_ID"
mkdir -p "$OVERBRAINER_RUN_DIR/.pod"
printf 'ready\n' > "$OVERBRAINER_RUN_DIR/.pod/watchdog"
exec sleep 3600
`

// bootOnce boots one pod and returns the times from its start to sshd
// listening, the ready verdict and a first SSH command.
func bootOnce(b *testing.B, baseline bool) (sshd, ready, login time.Duration) {
	b.Helper()
	api := shtest.NewFakeAPI(b)
	host := newKey(b, "overbrainer-host-bench")
	client := newKey(b, "overbrainer-client-bench")
	workdir := filepath.Join(b.TempDir(), "workspace")
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		b.Fatal(err)
	}
	runDir := filepath.Join(workdir, "bench")
	port := freePort(b)
	env, err := podenv.Settings{
		RunID: "bench", Workdir: workdir,
		Rules:         podenv.Rules{BootGrace: time.Hour},
		APIURL:        api.URL(),
		AuthorizedKey: client.line, Claim: host.line,
	}.Env()
	if err != nil {
		b.Fatal(err)
	}
	env[podenv.HostKeyEnv] = host.b64 // as Runpod resolves the secret at boot
	env["BENCH_HOST_KEY"] = host.b64
	env["RUNPOD_POD_ID"] = "benchpod"
	env["RUNPOD_API_KEY"] = "rpa_BENCH_pod_key"
	env["PATH"] = shtest.SystemPath
	env["HOME"] = "/root"
	env["TMPDIR"] = b.TempDir()
	env["OVERBRAINER_SSH_PORT"] = strconv.Itoa(port)
	env["OVERBRAINER_SSH_LISTEN"] = "127.0.0.1"

	script := bootstrap.Script()
	if baseline {
		script = benchBaseline
	}
	args := []string{"--mount", "--propagation", "private", "--pid", "--fork", "--kill-child",
		"--mount-proc", "sh", "-c", nsSetup + "exec \"$@\"\n", "nssetup", b.TempDir(), "bash", "-c", script}
	cmd := exec.Command("unshare", args...)
	cmd.Dir = "/"
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout = io.Discard
	var (
		mu      sync.Mutex
		sshdAt  time.Time
		output  strings.Builder
		verdict = filepath.Join(runDir, watchdog.VerdictFile)
	)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			if sshdAt.IsZero() && strings.Contains(sc.Text(), "sshd listening") {
				sshdAt = time.Now()
			}
			output.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
		_ = cmd.Wait()
		close(done)
	}()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Error("the pod's namespace did not end")
		}
	}()
	fail := func(format string, a ...any) {
		b.Helper()
		mu.Lock()
		defer mu.Unlock()
		b.Fatalf(format+"\npod output:\n%s", append(a, output.String())...)
	}

	deadline := start.Add(90 * time.Second)
	for {
		if v, _ := os.ReadFile(verdict); string(v) == "ready\n" {
			ready = time.Since(start)
			break
		} else if len(v) > 0 && !strings.HasPrefix("ready\n", string(v)) {
			fail("verdict %q", v)
		}
		select {
		case <-done:
			fail("the pod's command ended")
		default:
		}
		if time.Now().After(deadline) {
			fail("no ready verdict after 90 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cfg := &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(client.signer)},
		HostKeyCallback: ssh.FixedHostKey(host.pub), Timeout: 30 * time.Second}
	c, err := ssh.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cfg)
	if err != nil {
		fail("ssh: %v", err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		fail("ssh session: %v", err)
	}
	out, err := s.Output("echo up")
	if err != nil || string(out) != "up\n" {
		fail("ssh echo: %q %v", out, err)
	}
	login = time.Since(start)
	mu.Lock()
	if !sshdAt.IsZero() {
		sshd = sshdAt.Sub(start)
	}
	mu.Unlock()
	if sshd == 0 {
		fail("the pod never said sshd listens")
	}
	return sshd, ready, login
}
