package guard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/podssh"
)

// ShellOptions says what Run.Shell runs: podssh's.
type ShellOptions = podssh.ShellOptions

// shellConn is a connection that can open a shell: a real one.
type shellConn interface {
	Shell(ctx context.Context, o podssh.ShellOptions) error
}

// Shell opens a session on the run's pod over its pinned connection: the
// login shell, or opts.Command, as root. With opts.Term it has a PTY
// (podssh.AttachTerminal sets one up from this program's terminal and
// follows its size); without, the streams stay apart, for a program that
// has no terminal. It returns when the remote side exits: a non-zero exit
// is a *podssh.CommandError with its status. A session is not the job's
// progress: it does not renew the lease. On a kept pod (Spec.Keep) whose
// job ended it counts as use while it is open: the pod's watchdog counts
// its logged-in SSH connections and holds the idle bound (Spec.KeepIdle).
func (r *Run) Shell(ctx context.Context, opts ShellOptions) error {
	if err := r.liveConn(ctx); err != nil {
		return err
	}
	sc, ok := r.conn.(shellConn)
	if !ok {
		return errors.New("guard: this connection cannot open a shell")
	}
	return sc.Shell(ctx, opts)
}

// SSHConfig is what WriteSSHConfig wrote: files for OpenSSH's ssh.
type SSHConfig struct {
	// File is the ssh_config, Alias its Host.
	File, Alias string
	// Command is the line that opens a shell on the pod with them.
	Command string
}

// File names WriteSSHConfig writes into its directory.
const (
	SSHConfigFile  = "ssh_config"
	KnownHostsFile = "known_hosts"
	SSHKeyFile     = "id_ed25519"
)

// WriteSSHConfig writes an ssh_config, a known_hosts and the client's key
// into dir (each 0600), so that "ssh -F DIR/ssh_config overbrainer-RUN"
// reaches the pod with OpenSSH as Shell does: the run's host key is the
// only one known for the alias, StrictHostKeyChecking refuses any other
// (never trusting on first use), and nothing else is tried. The address is
// the pod's as the last look saw it: a pod that restarts may publish
// another port, and the files must be written again.
func (r *Run) WriteSSHConfig(ctx context.Context, dir string) (SSHConfig, error) {
	if r.addr == "" {
		if err := r.waitRunning(ctx); err != nil {
			return SSHConfig{}, err
		}
	}
	host, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		return SSHConfig{}, fmt.Errorf("guard: pod address %q: %w", r.addr, err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return SSHConfig{}, err
	}
	if strings.ContainsAny(dir, "\"\n\\") {
		return SSHConfig{}, fmt.Errorf("guard: %q cannot be named in an ssh_config", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return SSHConfig{}, fmt.Errorf("guard: %w", err)
	}
	alias := r.rec.PodName
	file := filepath.Join(dir, SSHConfigFile)
	config := fmt.Sprintf(`# Written by overbrainer for run %s: ssh -F %s %s
Host %s
  HostName %s
  Port %s
  User root
  IdentityFile "%s"
  IdentitiesOnly yes
  IdentityAgent none
  HostKeyAlias %s
  UserKnownHostsFile "%s"
  GlobalKnownHostsFile none
  StrictHostKeyChecking yes
  UpdateHostKeys no
  CheckHostIP no
  HostKeyAlgorithms %s
  PasswordAuthentication no
  KbdInteractiveAuthentication no
`, r.rec.ID, file, alias, alias, host, port, filepath.Join(dir, SSHKeyFile), alias, filepath.Join(dir, KnownHostsFile), r.host.Type())
	known := alias + " " + string(ssh.MarshalAuthorizedKey(r.host))
	for name, b := range map[string]string{SSHKeyFile: string(r.rec.ClientKey), KnownHostsFile: known, SSHConfigFile: config} {
		if err := writePrivate(filepath.Join(dir, name), []byte(b)); err != nil {
			return SSHConfig{}, err
		}
	}
	return SSHConfig{File: file, Alias: alias, Command: "ssh -F " + podssh.Quote(file) + " " + alias}, nil
}
