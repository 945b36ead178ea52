package podssh

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// sshd is a real OpenSSH server on 127.0.0.1 for one test, with the given
// host key and one authorized client key.
type sshd struct {
	addr string
	log  *shtest.SyncBuffer
}

func startSSHD(t *testing.T, host *Key, authorized string) *sshd {
	t.Helper()
	bin := shtest.NeedSSHD(t)
	if os.Geteuid() != 0 {
		if shtest.Required() {
			t.Fatal("REQUIRE_SHELLS=1 but not root: sshd needs root to log a user in")
		}
		t.Skip("sshd needs root to log a user in")
	}
	dir := t.TempDir()
	pemBytes, err := host.PrivatePEM("test host")
	if err != nil {
		t.Fatal(err)
	}
	hostFile := filepath.Join(dir, "host_key")
	authFile := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(hostFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(authFile, []byte(authorized+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Not a port from net.Listen(":0"): another socket may take it
	// before sshd binds it (see shtest.FreePort).
	port := shtest.FreePort(t)
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile none
LogLevel VERBOSE
`, port, hostFile, authFile)
	cfgFile := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var log shtest.SyncBuffer
	cmd := exec.Command(bin, "-D", "-e", "-f", cfgFile)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sshd log:\n%s", log.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &sshd{addr: addr, log: &log}
}

// keys returns a fresh client key and host key.
func keys(t *testing.T) (client, host *Key) {
	t.Helper()
	client, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	host, err = NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return client, host
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}
