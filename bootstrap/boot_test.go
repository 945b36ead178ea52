package bootstrap_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

const bootTimeout = 90 * time.Second

// world is what one boot test sets up on the host: keys, the fake API, a
// workdir, a stub directory first on PATH, and a TMPDIR.
type world struct {
	t       *testing.T
	host    key // the run's host key; its public half is the claim
	client  key
	api     *shtest.FakeAPI
	apiKey  string
	podID   string
	workdir string
	runDir  string
	bin     *shtest.Bin
	tmpdir  string
	port    int
	argvLog string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{
		t:       t,
		host:    newKey(t, "overbrainer-host-r1"),
		client:  newKey(t, "overbrainer-client-r1"),
		api:     shtest.NewFakeAPI(t),
		apiKey:  "rpa_POD_SCOPED_" + strconv.FormatInt(time.Now().UnixNano(), 36),
		podID:   "pod" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
		workdir: filepath.Join(t.TempDir(), "workspace"),
		bin:     shtest.NewBin(t),
		tmpdir:  t.TempDir(),
		port:    freePort(t),
	}
	w.runDir = filepath.Join(w.workdir, "r1")
	if err := os.MkdirAll(w.workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The host's package managers must never run: these stubs fail and
	// record how they were called.
	for _, pm := range []string{"apt-get", "apk"} {
		w.bin.Stub(pm, w.record(pm)+"\nexit 1")
	}
	return w
}

// record returns a stub line that appends the stub's arguments and whether
// its environment held the API key to STUBS/name.calls.
func (w *world) record(name string) string {
	return fmt.Sprintf(`echo "$*" >> %s; env | grep -q %s && echo "SAW THE API KEY" >> %s`,
		shellQuote(w.calls(name)), shellQuote("^RUNPOD_API_KEY="), shellQuote(w.calls(name)))
}

func (w *world) calls(name string) string { return filepath.Join(w.bin.Dir, name+".calls") }

// env is the container's environment: podenv's, with the host key secret
// resolved as Runpod does at boot, the variables Runpod adds, and short
// intervals for the watchdog.
func (w *world) env() map[string]string {
	w.t.Helper()
	env, err := podenv.Settings{
		RunID:         "r1",
		Workdir:       w.workdir,
		Rules:         podenv.Rules{BootGrace: time.Hour},
		APIURL:        w.api.URL(),
		AuthorizedKey: w.client.line,
		// The claim's comment differs from the key's: only type and base64
		// are compared.
		Claim: w.host.line + "-claim",
	}.Env()
	if err != nil {
		w.t.Fatal(err)
	}
	if env[podenv.HostKeyEnv] != podenv.HostKeyPlaceholder("r1") {
		w.t.Fatalf("podenv sends %s=%q", podenv.HostKeyEnv, env[podenv.HostKeyEnv])
	}
	env[podenv.HostKeyEnv] = w.host.b64
	env["RUNPOD_POD_ID"] = w.podID
	env["RUNPOD_API_KEY"] = w.apiKey
	env["PATH"] = w.bin.Dir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	env["HOME"] = "/root"
	env["TMPDIR"] = w.tmpdir
	env["OVERBRAINER_PROBE_TRIES"] = "1"
	env["OVERBRAINER_PROBE_WAIT"] = "1"
	env["OVERBRAINER_INTERVAL"] = "1"
	env["OVERBRAINER_SSH_PORT"] = strconv.Itoa(w.port)
	env["OVERBRAINER_SSH_LISTEN"] = "127.0.0.1"
	env["HF_TOKEN"] = "hf_" + w.apiKey
	env["HOSTILE"] = "it's $(echo \"no\") `x`\nline two\\"
	return env
}

// wrapCommands puts a directory on PATH, after the stubs, where every
// program of the system directories is a wrapper that logs its command line
// to w.argvLog (and to w.argvLog+".key" when its environment holds
// RUNPOD_API_KEY) and execs the real one. A secret passed to any program
// that the scripts find through PATH then shows up in the log, however short
// the program lived.
func (w *world) wrapCommands(env map[string]string) {
	w.t.Helper()
	dir := w.t.TempDir()
	w.argvLog = filepath.Join(w.t.TempDir(), "argv.log")
	seen := map[string]bool{}
	sysPath := shtest.SystemPath
	for _, d := range filepath.SplitList(sysPath) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			name := e.Name()
			info, err := os.Stat(filepath.Join(d, name))
			if seen[name] || err != nil || !info.Mode().IsRegular() || info.Mode()&0o111 == 0 {
				continue
			}
			seen[name] = true
			body := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' %[1]s\" $*\" >> %[2]s\n"+
				"[ -z \"${RUNPOD_API_KEY+set}\" ] || printf '%%s\\n' %[1]s\" $*\" >> %[3]s\n"+
				"exec %[4]s \"$@\"\n",
				shellQuote(name), shellQuote(w.argvLog), shellQuote(w.argvLog+".key"), shellQuote(filepath.Join(d, name)))
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
				w.t.Fatal(err)
			}
		}
	}
	env["PATH"] = w.bin.Dir + ":" + dir + ":" + sysPath
}

func noSecretIn(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds a secret (%.8s...)", what, s)
		}
	}
}

// checkArgvLog fails the test if a secret reached a program's command line,
// and makes sure the log did see the programs in want.
func (w *world) checkArgvLog(secrets []string, want ...string) {
	w.t.Helper()
	log := "\n" + readString(w.argvLog)
	noSecretIn(w.t, "a command line", log, secrets)
	for _, want := range want {
		if !strings.Contains(log, "\n"+want) {
			w.t.Errorf("the command line log lacks %q:%s", want, log)
		}
	}
}

// bootPrograms are command lines every boot runs through PATH, some of them
// with a secret on stdin.
var bootPrograms = []string{"base64 -d\n", "ssh-keygen -y -P  -f /etc/overbrainer/ssh_host_ed25519_key.tmp\n", "awk \n", "curl "}

// sshConfig authenticates with signer and pins the server's host key.
func sshConfig(signer ssh.Signer, hostKey ssh.PublicKey, auth ...ssh.AuthMethod) *ssh.ClientConfig {
	if auth == nil {
		auth = []ssh.AuthMethod{ssh.PublicKeys(signer)}
	}
	return &ssh.ClientConfig{
		User:            "root",
		Auth:            auth,
		HostKeyCallback: ssh.FixedHostKey(hostKey),
		Timeout:         30 * time.Second,
	}
}

func (w *world) dial(cfg *ssh.ClientConfig) (*ssh.Client, error) {
	return ssh.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(w.port)), cfg)
}

// run runs cmd over SSH as the run's client, pinning the claim.
func (w *world) run(cmd string) string {
	w.t.Helper()
	c, err := w.dial(sshConfig(w.client.signer, w.host.pub))
	if err != nil {
		w.t.Fatalf("ssh: %v", err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		w.t.Fatal(err)
	}
	defer s.Close()
	var stderr bytes.Buffer
	s.Stderr = &stderr
	out, err := s.Output(cmd)
	if err != nil {
		w.t.Fatalf("ssh %q: %v\n%s", cmd, err, stderr.String())
	}
	return string(out)
}

// treeHash fingerprints every file, link and mode under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", path, info.Mode())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			fmt.Fprintln(h, target)
		case info.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// cmdlineScanner watches every process's command line on the host while a
// boot runs, for any of the secrets.
type cmdlineScanner struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	hits []string
	runs int
}

func scanCmdlines(secrets []string) *cmdlineScanner {
	s := &cmdlineScanner{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				if err != nil || len(b) == 0 {
					continue
				}
				for _, secret := range secrets {
					if bytes.Contains(b, []byte(secret)) {
						s.mu.Lock()
						s.hits = append(s.hits, fmt.Sprintf("pid %s: %.60q", e.Name(), b))
						s.mu.Unlock()
					}
				}
			}
			s.mu.Lock()
			s.runs++
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *cmdlineScanner) finish() (hits []string, runs int) {
	close(s.stop)
	<-s.done
	return s.hits, s.runs
}

func (w *world) verdictAt(path string) string {
	return readString(filepath.Join(path, watchdog.VerdictFile))
}

// TestBootServesSSH boots the real command with bash in a private mount and
// PID namespace, as a pod would, and uses the real sshd it starts. It is
// the one boot test that is not parallel: its scan of /proc for secrets
// runs while no other test's boot does.
func TestBootServesSSH(t *testing.T) {
	needNamespaces(t)
	before := treeHash(t, "/etc/ssh")
	w := newWorld(t)
	env := w.env()
	env["OVERBRAINER_BOOT_TIMEOUT"] = "600"
	w.wrapCommands(env)
	scan := scanCmdlines(append(w.host.secrets(w.apiKey), env["HF_TOKEN"]))
	p := startPod(t, podSpec{shell: []string{"bash"}, env: env, workdir: w.workdir, tmpfsWorkdir: true})

	shtest.Eventually(t, bootTimeout, func() bool {
		return w.verdictAt(p.path(w.runDir)) == "ready\n" || p.exited()
	}, "no ready verdict; output:\n%s", p.stderr)
	hits, runs := scan.finish()
	if p.exited() {
		t.Fatalf("the pod's command ended:\n%s", p.stderr)
	}
	if len(hits) > 0 {
		t.Errorf("a secret was on a command line (%d scans):\n%s", runs, strings.Join(hits, "\n"))
	}
	w.checkArgvLog(append(w.host.secrets(w.apiKey), env["HF_TOKEN"]), bootPrograms...)
	noSecretIn(t, "the pod's output", p.stderr.String(), w.host.secrets(w.apiKey))
	// sshd (its config check too) and the boot guard's sleeps, which
	// outlive the guard, never see the pod's key; the bootstrap's own
	// children (curl, its waits) may: it waits for them.
	log := "\n" + readString(w.argvLog)
	for _, want := range []string{"\nsshd -t ", "\nsshd -f ", "\nsleep 1\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("the command line log lacks %q (not run through PATH?):%s", want[1:], log)
		}
	}
	for _, line := range strings.Split(readString(w.argvLog+".key"), "\n") {
		if strings.HasPrefix(line, "sshd ") || line == "sleep 1" {
			t.Errorf("%q ran with the API key in its environment", line)
		}
	}
	if apiCount(w.api, "GET", "/pods/"+w.podID, w.apiKey) == 0 {
		t.Error("the watchdog never probed the API with the pod's key")
	}
	if _, err := os.Stat(w.runDir); !os.IsNotExist(err) {
		t.Error("the run directory leaked out of the pod's tmpfs")
	}

	t.Run("client key, pinned claim", func(t *testing.T) {
		out := w.run(". " + podenv.JobEnv + " && env -0")
		got := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		for k, v := range env {
			switch k {
			case "RUNPOD_API_KEY", podenv.HostKeyEnv, "HF_TOKEN":
				if _, ok := got[k]; ok {
					t.Errorf("the job sees %s", k)
				}
			default:
				if got[k] != v {
					t.Errorf("the job sees %s=%q, want %q", k, got[k], v)
				}
			}
		}
	})
	t.Run("another host key is refused", func(t *testing.T) {
		other := newKey(t, "other")
		_, err := w.dial(sshConfig(w.client.signer, other.pub))
		if err == nil || !strings.Contains(err.Error(), "host key mismatch") {
			t.Errorf("pinning another host key: err = %v, want a host key mismatch", err)
		}
	})
	t.Run("keys only", func(t *testing.T) {
		other := newKey(t, "intruder")
		if _, err := w.dial(sshConfig(other.signer, w.host.pub)); err == nil {
			t.Error("another client key logged in")
		}
		_, err := w.dial(sshConfig(nil, w.host.pub, ssh.Password(""), ssh.Password("root"),
			ssh.KeyboardInteractive(func(string, string, []string, []bool) ([]string, error) { return nil, nil })))
		if err == nil || strings.Contains(err.Error(), "password") || strings.Contains(err.Error(), "keyboard-interactive") {
			t.Errorf("password/keyboard-interactive: err = %v, want only publickey offered", err)
		}
		if out := w.run("/usr/sbin/sshd -t -f /etc/overbrainer/sshd_config && echo ok"); out != "ok\n" {
			t.Errorf("sshd -t: %q", out)
		}
		cfg := readString(p.path("/etc/overbrainer/sshd_config"))
		for _, want := range []string{"PasswordAuthentication no", "PermitRootLogin prohibit-password", "AuthenticationMethods publickey", "ListenAddress 127.0.0.1"} {
			if !strings.Contains(cfg, want+"\n") {
				t.Errorf("sshd_config lacks %q", want)
			}
		}
	})
	t.Run("files", func(t *testing.T) {
		for path, mode := range map[string]fs.FileMode{
			podenv.JobEnv:                               0o600,
			"/etc/overbrainer/ssh_host_ed25519_key":     0o600,
			"/root/.ssh/authorized_keys":                0o600,
			w.runDir + "/" + watchdog.PodDir + "/claim": 0o644,
		} {
			info, err := os.Stat(p.path(path))
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			if info.Mode().Perm() != mode {
				t.Errorf("%s has mode %v, want %v", path, info.Mode().Perm(), mode)
			}
		}
		if got := readString(p.path("/etc/overbrainer/ssh_host_ed25519_key")); got != string(w.host.pem) {
			t.Error("the installed host key is not the run's")
		}
		if got := readString(p.path("/root/.ssh/authorized_keys")); got != w.client.line+"\n" {
			t.Errorf("authorized_keys = %q", got)
		}
		if got := readString(p.path(w.runDir + "/.pod/claim")); got != env["OVERBRAINER_CLAIM"]+"\n" {
			t.Errorf(".pod/claim = %q", got)
		}
		// No secret in any other file the bootstrap or the watchdog wrote.
		secrets := append(w.host.secrets(w.apiKey), "hf_"+w.apiKey)
		for _, dir := range []string{w.runDir, "/etc/overbrainer", "/root/.ssh", w.tmpdir} {
			root := p.path(dir)
			_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() || path == p.path("/etc/overbrainer/ssh_host_ed25519_key") {
					return nil
				}
				b, _ := os.ReadFile(path)
				for _, s := range secrets {
					if bytes.Contains(b, []byte(s)) {
						t.Errorf("%s holds a secret", strings.TrimPrefix(path, root))
					}
				}
				return nil
			})
		}
	})
	t.Run("processes", func(t *testing.T) {
		// The guard ended with the bootstrap: no forked bootstrap shell is
		// left, only the watchdog in its place.
		shtest.Eventually(t, bootTimeout, func() bool {
			for _, pid := range p.nsProcs() {
				if strings.HasPrefix(readString(fmt.Sprintf("/proc/%d/cmdline", pid)), "bash\x00-c\x00") {
					return false
				}
			}
			return true
		}, "the bootstrap's guard still runs")
		sawSSHD := false
		for _, pid := range p.nsProcs() {
			cmdline := readString(fmt.Sprintf("/proc/%d/cmdline", pid))
			environ := readString(fmt.Sprintf("/proc/%d/environ", pid))
			if strings.Contains(environ, w.host.b64) {
				t.Errorf("%.40q has the host key in its environment", cmdline)
			}
			if strings.HasPrefix(cmdline, "sshd") || strings.HasPrefix(cmdline, sshdPath) {
				sawSSHD = true
				if strings.Contains(environ, w.apiKey) {
					t.Errorf("%.40q has the API key in its environment", cmdline)
				}
			}
		}
		if !sawSSHD {
			t.Error("no sshd in the pod")
		}
	})

	p.stop()
	if after := treeHash(t, "/etc/ssh"); after != before {
		t.Error("the host's /etc/ssh changed")
	}
}

// A second pod of the same run resumes in the run directory; a pod of
// another run fails there with claimed_by_other_run, and the run's next pod
// clears that failure.
func TestClaimResumesTheRunAndRefusesAnother(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	w := newWorld(t)
	boot := func(env map[string]string) *pod {
		w.port = freePort(t)
		env["OVERBRAINER_SSH_PORT"] = strconv.Itoa(w.port)
		return startPod(t, podSpec{shell: []string{"bash"}, env: env, workdir: w.workdir})
	}
	ready := func(p *pod) {
		t.Helper()
		w.ready(p, func() string { return w.runDir })
	}

	first := boot(w.env())
	ready(first)
	first.stop()
	claim := readString(filepath.Join(w.runDir, ".pod/claim"))

	other := newKey(t, "another-run")
	env := w.env()
	env["OVERBRAINER_HOST_KEY"] = other.b64
	env["OVERBRAINER_CLAIM"] = other.line
	intruder := boot(env)
	intruder.waitExit(bootTimeout)
	if got := w.verdictAt(w.runDir); got != "failed bootstrap: claimed_by_other_run\n" {
		t.Errorf("verdict %q, want failed bootstrap: claimed_by_other_run\n%s", got, intruder.stderr)
	}
	if n := apiCount(w.api, "DELETE", "/pods/"+w.podID, w.apiKey); n == 0 {
		t.Error("the other run's pod was not deleted")
	}
	if got := readString(filepath.Join(w.runDir, ".pod/claim")); got != claim {
		t.Errorf("the claim changed to %q", got)
	}

	// The same pod boots again: the delete above did not take it.
	w.api.Revive("/pods/" + w.podID)
	again := boot(w.env())
	ready(again)
	if !strings.Contains(again.stderr.String(), "resuming") {
		t.Errorf("the second pod did not say it resumes:\n%s", again.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.runDir, watchdog.BootstrapFailed)); !os.IsNotExist(err) {
		t.Errorf("the other run's %s is still there", watchdog.BootstrapFailed)
	}
}

// failCase is one way the bootstrap fails after the watchdog is written.
type failCase struct {
	name, reason string
	env          func(w *world, env map[string]string)
	prep         func(t *testing.T, w *world) []string // host preparation; returns namespace setup lines
	fallback     bool                                  // the watchdog reports from $TMPDIR
	hangs        bool                                  // the bootstrap itself never ends
	check        func(t *testing.T, w *world)
}

func failCases() []failCase {
	set := func(name, value string) func(*world, map[string]string) {
		return func(_ *world, env map[string]string) { env[name] = value }
	}
	madeByStub := func(name string) func(t *testing.T, w *world) {
		return func(t *testing.T, w *world) {
			if !strings.Contains(readString(w.calls(name)), "update") && !strings.Contains(readString(w.calls(name)), "add") {
				t.Errorf("%s was not tried: %q", name, readString(w.calls(name)))
			}
			if strings.Contains(readString(w.calls(name)), "SAW THE API KEY") {
				t.Errorf("%s ran with the API key in its environment", name)
			}
		}
	}
	return []failCase{
		{name: "no run dir", reason: bootstrap.ReasonRunDirMissing, env: set("OVERBRAINER_RUN_DIR", ""), fallback: true},
		{name: "read-only run dir", reason: bootstrap.ReasonRunDirUnwritable, fallback: true,
			prep: func(_ *testing.T, w *world) []string {
				return []string{"mount -t tmpfs -o ro tmpfs " + shellQuote(w.workdir)}
			}},
		{name: "lost job unrecordable", reason: bootstrap.ReasonRunDirUnwritable,
			prep: func(t *testing.T, w *world) []string {
				// A resumed run whose old job needs the cancelled marker,
				// which cannot be written through a directory.
				mkdir(t, filepath.Join(w.runDir, ".pod"))
				writeFile(t, filepath.Join(w.runDir, ".pod/claim"), w.host.line+"\n")
				writeFile(t, filepath.Join(w.runDir, watchdog.JobPID), "4242\n")
				mkdir(t, filepath.Join(w.runDir, watchdog.Cancelled+".tmp"))
				return nil
			},
			check: func(t *testing.T, w *world) {
				if _, err := os.Stat(filepath.Join(w.runDir, watchdog.Cancelled)); !os.IsNotExist(err) {
					t.Errorf("cancelled exists (%v)", err)
				}
			}},
		{name: "no claim", reason: bootstrap.ReasonClaimMissing, env: set("OVERBRAINER_CLAIM", "")},
		{name: "claim not a key", reason: bootstrap.ReasonClaimMissing, env: set("OVERBRAINER_CLAIM", "AAAA ssh-ed25519")},
		{name: "claim unwritable", reason: bootstrap.ReasonClaimFailed,
			prep: func(t *testing.T, w *world) []string {
				mkdir(t, filepath.Join(w.runDir, ".pod/claim"))
				return nil
			}},
		{name: "other claim", reason: bootstrap.ReasonClaimedByOtherRun,
			prep: func(t *testing.T, w *world) []string {
				mkdir(t, filepath.Join(w.runDir, ".pod"))
				writeFile(t, filepath.Join(w.runDir, ".pod/claim"), newKey(t, "other").line+"\n")
				return nil
			}},
		{name: "empty host key", reason: bootstrap.ReasonHostKeyMissing, env: set("OVERBRAINER_HOST_KEY", "")},
		{name: "unresolved secret", reason: bootstrap.ReasonHostKeyMissing,
			env: set("OVERBRAINER_HOST_KEY", podenv.HostKeyPlaceholder("r1"))},
		{name: "host key not base64", reason: bootstrap.ReasonHostKeyInvalid, env: set("OVERBRAINER_HOST_KEY", "!!not*base64")},
		{name: "host key not a key", reason: bootstrap.ReasonHostKeyInvalid, env: set("OVERBRAINER_HOST_KEY", "aGVsbG8gd29ybGQK")},
		{name: "host key of another run", reason: bootstrap.ReasonHostKeyMismatch,
			env: func(w *world, env map[string]string) { env["OVERBRAINER_HOST_KEY"] = newKey(w.t, "other").b64 }},
		{name: "host key unwritable", reason: bootstrap.ReasonHostKeyFailed,
			prep: func(*testing.T, *world) []string { return []string{"mount -o remount,ro /etc/overbrainer"} }},
		{name: "no authorized key", reason: bootstrap.ReasonAuthorizedKeyInvalid, env: set("OVERBRAINER_AUTHORIZED_KEY", "")},
		{name: "two authorized keys", reason: bootstrap.ReasonAuthorizedKeyInvalid,
			env: func(w *world, env map[string]string) {
				env["OVERBRAINER_AUTHORIZED_KEY"] = w.client.line + "\n" + w.host.line
			}},
		{name: "authorized keys unwritable", reason: bootstrap.ReasonAuthorizedKeyFailed,
			prep: func(*testing.T, *world) []string { return []string{"mount -o remount,ro /root/.ssh"} }},
		{name: "job env unwritable", reason: bootstrap.ReasonJobEnvFailed,
			prep: func(*testing.T, *world) []string { return []string{"mkdir " + podenv.JobEnv + ".tmp"} }},
		{name: "no sshd", reason: bootstrap.ReasonNoSSHD,
			env: set("OVERBRAINER_SSHD", "/nonexistent/sshd"),
			check: func(t *testing.T, w *world) {
				madeByStub("apt-get")(t, w)
				madeByStub("apk")(t, w)
			}},
		{name: "no ssh-keygen", reason: bootstrap.ReasonNoSSHD,
			env: set("OVERBRAINER_SSH_KEYGEN", "/nonexistent/ssh-keygen"), check: madeByStub("apt-get")},
		{name: "bad port", reason: bootstrap.ReasonSSHDFailed, env: set("OVERBRAINER_SSH_PORT", "22x")},
		{name: "port taken", reason: bootstrap.ReasonSSHDFailed,
			prep: func(t *testing.T, w *world) []string {
				l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(w.port)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				return nil
			}},
		{name: "hung install", reason: bootstrap.ReasonBootstrapTimeout, hangs: true,
			env: func(w *world, env map[string]string) {
				env["OVERBRAINER_SSHD"] = "/nonexistent/sshd"
				env["OVERBRAINER_BOOT_TIMEOUT"] = "2"
				w.bin.Stub("apt-get", "exec sleep 600")
			}},
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every failure reason ends with its text in .pod/bootstrap_failed, the
// watchdog's `failed bootstrap: REASON` verdict and a DELETE of the pod.
func TestEveryFailureDeletesThePod(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	covered := map[string]bool{}
	for _, c := range failCases() {
		covered[c.reason] = true
	}
	for _, r := range bootstrap.Reasons() {
		if !covered[r] {
			t.Errorf("no test case fails with %s", r)
		}
	}
	for _, shell := range []string{"dash", "bash"} {
		t.Run(shell, func(t *testing.T) {
			argv := shellArgv(t, shell)
			for _, c := range failCases() {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					w := newWorld(t)
					env := w.env()
					if c.env != nil {
						c.env(w, env)
					}
					var setup []string
					if c.prep != nil {
						setup = c.prep(t, w)
					}
					p := startPod(t, podSpec{shell: argv, env: env, workdir: w.workdir, setup: setup})
					runDir := w.runDir
					if c.fallback {
						runDir = filepath.Join(w.tmpdir, "overbrainer-bootstrap")
					}
					shtest.Eventually(t, bootTimeout, func() bool {
						return apiCount(w.api, "DELETE", "/pods/"+w.podID, w.apiKey) > 0 || p.exited() && !c.hangs
					}, "no DELETE; output:\n%s", p.stderr)
					if !c.hangs {
						p.waitExit(bootTimeout)
						if code := p.cmd.ProcessState.ExitCode(); code != 0 {
							t.Errorf("the pod's command exited %d", code)
						}
					}
					if n := apiCount(w.api, "DELETE", "/pods/"+w.podID, w.apiKey); n != 1 {
						t.Errorf("%d DELETEs, want 1:\n%s", n, p.stderr)
					}
					if got := readString(filepath.Join(runDir, watchdog.BootstrapFailed)); got != c.reason+"\n" {
						t.Errorf("%s = %q, want %q", watchdog.BootstrapFailed, got, c.reason)
					}
					shtest.Eventually(t, bootTimeout, func() bool { return w.verdictAt(runDir) != "" }, "no verdict")
					if got, want := w.verdictAt(runDir), "failed bootstrap: "+c.reason+"\n"; got != want {
						t.Errorf("verdict %q, want %q", got, want)
					}
					if !strings.Contains(p.stderr.String(), "failed: "+c.reason) {
						t.Errorf("stderr does not say why:\n%s", p.stderr)
					}
					noSecretIn(t, "the pod's output", p.stderr.String(), w.host.secrets(w.apiKey))
					if c.check != nil {
						c.check(t, w)
					}
				})
			}
		})
	}
}

// ready waits for the watchdog's ready verdict in runDir (as the pod sees
// it) and logs in over SSH.
func (w *world) ready(p *pod, runDir func() string) {
	w.t.Helper()
	shtest.Eventually(w.t, bootTimeout, func() bool { return w.verdictAt(runDir()) == "ready\n" || p.exited() },
		"no ready verdict:\n%s", p.stderr)
	if p.exited() {
		w.t.Fatalf("the pod's command ended:\n%s", p.stderr)
	}
	if out := w.run("echo up"); out != "up\n" {
		w.t.Fatalf("ssh: %q", out)
	}
}

// The bootstrap works under every shell, not only bash, and none of them
// puts a secret on a command line (posh and mksh have no built-in printf).
func TestBootsUnderEveryShell(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	for _, shell := range shtest.Names {
		t.Run(shell, func(t *testing.T) {
			argv := shellArgv(t, shell)
			t.Parallel()
			w := newWorld(t)
			env := w.env()
			w.wrapCommands(env)
			p := startPod(t, podSpec{shell: argv, env: env, workdir: w.workdir})
			w.ready(p, func() string { return w.runDir })
			w.checkArgvLog(append(w.host.secrets(w.apiKey), env["HF_TOKEN"]), bootPrograms...)
			// The bootstrap's own log, kept in the run directory, holds
			// the lines of its output, and no secret.
			log := readString(filepath.Join(w.runDir, bootstrap.Log))
			for _, want := range []string{"overbrainer bootstrap: claimed " + w.runDir + "\n",
				"overbrainer bootstrap: ready; handing the pod to the watchdog\n"} {
				if !strings.Contains(log, want) || !strings.Contains(p.stderr.String(), want) {
					t.Errorf("%q is not both in %s and on the output:\n%s", want, bootstrap.Log, log)
				}
			}
			noSecretIn(t, bootstrap.Log, log, append(w.host.secrets(w.apiKey), env["HF_TOKEN"]))
			// The watchdog it wrote is the one the command carries.
			if got, want := readString(filepath.Join(w.runDir, watchdog.PodDir, "watchdog.sh")), bootstrap.Compact(watchdog.Script()); got != want {
				t.Errorf("the pod's watchdog.sh is %d bytes, not the %d of the watchdog", len(got), len(want))
			}
		})
	}
}

// An image without sshd gets openssh-server from apt-get, or from apk when
// apt-get fails, and the package manager never sees the API key.
func TestInstallsOpenSSHWhenMissing(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	for pm, want := range map[string]string{
		"apt-get": "update -qq\ninstall -y -qq --no-install-recommends openssh-server\n",
		"apk":     "add --no-cache openssh-server openssh-keygen\n",
	} {
		t.Run(pm, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			env := w.env()
			target := filepath.Join(t.TempDir(), "sshd")
			env["OVERBRAINER_SSHD"] = target
			// The stub "installs" sshd by linking the real one in place.
			w.bin.Stub(pm, w.record(pm)+`
case "$*" in *openssh-server*) ln -s `+sshdPath+` `+shellQuote(target)+` ;; esac`)
			p := startPod(t, podSpec{shell: []string{"bash"}, env: env, workdir: w.workdir})
			w.ready(p, func() string { return w.runDir })
			if got := readString(w.calls(pm)); got != want {
				t.Errorf("%s was called with %q, want %q", pm, got, want)
			}
			if pm == "apk" && readString(w.calls("apt-get")) != "update -qq\n" {
				t.Errorf("apt-get was not tried first: %q", readString(w.calls("apt-get")))
			}
		})
	}
}

// When not even the watchdog can be written (the run directory and /tmp are
// full), the bootstrap deletes the pod itself, with runpodctl or else the
// API, then sleeps: the container neither exits nor restarts.
func TestNoWatchdogStillDeletesThePod(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	for _, shell := range []string{"dash", "bash"} {
		for _, runpodctlWorks := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/runpodctl_works=%v", shell, runpodctlWorks), func(t *testing.T) {
				argv := shellArgv(t, shell)
				t.Parallel()
				w := newWorld(t)
				env := w.env()
				w.wrapCommands(env)
				exit := "exit 1"
				if runpodctlWorks {
					exit = "exit 0"
				}
				// runpodctl authenticates with the pod's RUNPOD_API_KEY, so it
				// gets the environment as it is, and is pointed at the pod's
				// own API: its built-in hosts are Runpod's retired REST v1
				// or GraphQL, and under an emulator they are another machine.
				w.bin.Stub("runpodctl", `echo "$* api=$RUNPOD_API_URL rest=$RUNPOD_REST_V2_URL gql=$RUNPOD_GRAPHQL_URL" >> `+shellQuote(w.calls("runpodctl"))+"\n"+exit)
				full := []string{
					"mount -t tmpfs -o size=4k tmpfs " + shellQuote(w.workdir),
					"mount -t tmpfs -o size=4k tmpfs " + shellQuote(w.tmpdir),
				}
				p := startPod(t, podSpec{shell: argv, env: env, workdir: w.workdir, setup: full})
				shtest.Eventually(t, bootTimeout, func() bool {
					for _, pid := range p.nsProcs() {
						if strings.HasSuffix(readString(fmt.Sprintf("/proc/%d/cmdline", pid)), "sleep\x003600\x00") {
							return true
						}
					}
					return p.exited()
				}, "the bootstrap does not sleep:\n%s", p.stderr)
				if p.exited() {
					t.Fatalf("the pod's command ended:\n%s", p.stderr)
				}
				calls := readString(w.calls("runpodctl"))
				deletes := apiCount(w.api, "DELETE", "/pods/"+w.podID, w.apiKey)
				api := env[podenv.APIURLEnv]
				want := "pod delete " + w.podID + " api=" + api + " rest=" + api + " gql=" + api + "/graphql\n"
				if runpodctlWorks {
					if calls != want || deletes != 0 {
						t.Errorf("runpodctl calls %q (want %q), %d API DELETEs (want 0)", calls, want, deletes)
					}
				} else {
					// No `remove pod`: GraphQL, which a REST v2 API cannot
					// answer.
					if calls != want || deletes != 1 {
						t.Errorf("runpodctl calls %q (want %q), %d API DELETEs (want 1)", calls, want, deletes)
					}
				}
				if !strings.Contains(p.stderr.String(), "cannot write the watchdog") {
					t.Errorf("stderr does not say why:\n%s", p.stderr)
				}
				w.checkArgvLog([]string{w.apiKey})
			})
		}
	}
}
