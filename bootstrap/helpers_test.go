package bootstrap_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// TestMain runs the parallel tests 8 at a time, not GOMAXPROCS: a boot
// mostly waits on its processes and the fake API, and at 2 at a time the
// package took 130 s of wall time with the cores mostly idle.
func TestMain(m *testing.M) { shtest.Main(m, 8) }

// need skips the test when what it needs is missing, or fails it under
// REQUIRE_SHELLS=1 (CI), so that a missing tool is never a silent pass.
func need(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if shtest.Required() {
		t.Fatalf("%s (required: REQUIRE_SHELLS=1)", msg)
	}
	t.Skipf("skipped: %s", msg)
}

// shellArgv returns the argv prefix that runs the shtest shell name,
// skipping (or failing under REQUIRE_SHELLS) when it is not installed.
func shellArgv(t *testing.T, name string) []string {
	t.Helper()
	sh, ok := shtest.Lookup(name)
	if !ok {
		t.Fatalf("unknown shell %q", name)
	}
	shtest.Need(t, sh)
	return sh.Argv
}

// key is an ed25519 key in the forms the pod sees: the OpenSSH private key
// file, its base64 (the Runpod secret) and the public key line.
type key struct {
	pem    []byte
	b64    string
	pub    ssh.PublicKey
	line   string
	signer ssh.Signer
}

func newKey(t testing.TB, comment string) key {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := pem.EncodeToMemory(block)
	return key{
		pem:    pemBytes,
		b64:    base64.StdEncoding.EncodeToString(pemBytes),
		pub:    sshPub,
		line:   strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))) + " " + comment,
		signer: signer,
	}
}

// secrets returns strings that must never show up outside the host key
// file: the base64 of the key, each line of its PEM body, and the API key.
func (k key) secrets(apiKey string) []string {
	out := []string{k.b64, k.b64[:40], apiKey}
	for _, line := range strings.Split(string(k.pem), "\n") {
		if len(line) >= 20 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

// freePort returns a loopback port for a pod's sshd (see shtest.FreePort).
func freePort(t testing.TB) int { return shtest.FreePort(t) }

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

var (
	nsOnce sync.Once
	nsErr  error
)

// needNamespaces checks that this process may make a private mount and PID
// namespace, which every boot test runs in so that the host's /etc/ssh,
// /root/.ssh and /etc/overbrainer are never touched.
func needNamespaces(t *testing.T) {
	t.Helper()
	need(t, os.Geteuid() == 0, "boot tests run as root (they mount tmpfs in a private namespace)")
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) is not installed")
	nsOnce.Do(func() {
		out, err := exec.Command("unshare", "--mount", "--propagation", "private", "--pid", "--fork",
			"--mount-proc", "sh", "-c", "mount -t tmpfs tmpfs /mnt").CombinedOutput()
		if err != nil {
			nsErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	need(t, nsErr == nil, "cannot make a private mount namespace: %v", nsErr)
	_, err = os.Stat(sshdPath)
	need(t, err == nil, "%s is not installed", sshdPath)
}

const sshdPath = "/usr/sbin/sshd"

// podSpec describes one boot of the pod's command in a private namespace.
type podSpec struct {
	shell   []string          // the shell that runs the command, e.g. {"bash"}
	env     map[string]string // the container's environment
	workdir string            // OVERBRAINER_WORKDIR on the host
	// tmpfsWorkdir mounts an empty tmpfs over workdir inside the namespace
	// (then the test reads it through pod.path).
	tmpfsWorkdir bool
	setup        []string // shell lines run in the namespace after the mounts
}

// pod is a running boot: unshare, whose child is the namespace's init (the
// bootstrap, later the watchdog).
type pod struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *shtest.SyncBuffer
	done   chan struct{}
}

// nsSetup runs as the namespace's first process: it gives the pod empty
// tmpfs mounts over everything the bootstrap writes outside the run
// directory, then execs the pod's command. /etc is overlaid on a tmpfs so
// that making the /etc/overbrainer mount point leaves the host untouched.
const nsSetup = `set -e
scratch=$1; shift
mount -t tmpfs -o mode=700 tmpfs "$scratch"
mkdir "$scratch/up" "$scratch/work"
if ! mount -t overlay overlay -o "lowerdir=/etc,upperdir=$scratch/up,workdir=$scratch/work" /etc 2>/dev/null; then
  echo "nssetup: no overlayfs; /etc/overbrainer is created on the host" >&2
fi
mkdir -p /etc/overbrainer
mount -t tmpfs -o mode=755 tmpfs /etc/overbrainer
mount -t tmpfs -o mode=755 tmpfs /etc/ssh
mount -t tmpfs -o mode=700 tmpfs /root
mkdir /root/.ssh
mount -t tmpfs -o mode=700 tmpfs /root/.ssh
mount -t tmpfs -o mode=755 tmpfs /run
`

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func startPod(t *testing.T, spec podSpec) *pod {
	t.Helper()
	needNamespaces(t)
	script := nsSetup
	if spec.tmpfsWorkdir {
		script += "mount -t tmpfs -o mode=755 tmpfs " + shellQuote(spec.workdir) + "\n"
	}
	script += strings.Join(spec.setup, "\n") + "\nexec \"$@\"\n"
	scratch := t.TempDir()
	args := []string{"--mount", "--propagation", "private", "--pid", "--fork", "--kill-child",
		"--mount-proc", "sh", "-c", script, "nssetup", scratch}
	args = append(args, spec.shell...)
	args = append(args, "-c", bootstrap.Script())
	cmd := exec.Command("unshare", args...)
	cmd.Dir = "/"
	for k, v := range spec.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &pod{t: t, cmd: cmd, stderr: &shtest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout = p.stderr
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p
}

// stop kills the whole namespace: unshare's child dies with it
// (--kill-child), and with the namespace's init every process in it.
func (p *pod) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Errorf("the pod's namespace did not end")
	}
	if p.t.Failed() {
		p.t.Logf("pod output:\n%s", p.stderr.String())
	}
}

func (p *pod) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitExit waits for the pod's command to end by itself.
func (p *pod) waitExit(timeout time.Duration) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("the pod's command still runs after %s", timeout)
	}
}

// initPID returns the host pid of the namespace's init: unshare's child.
func (p *pod) initPID() int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && ppid(pid) == p.cmd.Process.Pid {
			return pid
		}
	}
	return 0
}

// nsProcs returns the host pids of the processes in the pod's PID namespace.
func (p *pod) nsProcs() []int {
	init := p.initPID()
	if init == 0 {
		return nil
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", init))
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if other, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && other == ns {
			pids = append(pids, pid)
		}
	}
	return pids
}

func ppid(pid int) int {
	status := readString(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// path returns where the host sees path as the pod's init sees it (through
// its mount namespace).
func (p *pod) path(path string) string {
	init := p.initPID()
	if init == 0 {
		return "/nonexistent-pod-init" + path
	}
	return fmt.Sprintf("/proc/%d/root%s", init, path)
}

// apiCount counts the requests method path that carried the bearer key.
func apiCount(api *shtest.FakeAPI, method, path, apiKey string) int {
	n := 0
	for _, r := range api.Requests() {
		if r.Method == method && r.Path == path && r.Auth == "Bearer "+apiKey {
			n++
		}
	}
	return n
}
