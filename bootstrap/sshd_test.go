package bootstrap_test

import (
	"net"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// The pod's sshd, booted under every shell, forwards nothing, lets only
// root in, and bounds login attempts: its effective configuration says so,
// and a forwarding request of the client is refused.
func TestSSHDForwardsNothingAndBoundsLogins(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	for _, shell := range shtest.Names {
		t.Run(shell, func(t *testing.T) {
			argv := shellArgv(t, shell)
			t.Parallel()
			w := newWorld(t)
			p := startPod(t, podSpec{shell: argv, env: w.env(), workdir: w.workdir})
			w.ready(p, func() string { return w.runDir })
			eff := "\n" + w.run("/usr/sbin/sshd -T -f /etc/overbrainer/sshd_config") + "\n"
			for _, want := range []string{"disableforwarding yes", "allowusers root", "maxauthtries 3",
				"logingracetime 30", "maxstartups 10:30:60"} {
				if !strings.Contains(eff, "\n"+want+"\n") {
					t.Errorf("sshd -T lacks %q", want)
				}
			}
			target, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer target.Close()
			c, err := w.dial(sshConfig(w.client.signer, w.host.pub))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if conn, err := c.Dial("tcp", target.Addr().String()); err == nil {
				conn.Close()
				t.Error("sshd forwarded a TCP connection")
			}
		})
	}
}
