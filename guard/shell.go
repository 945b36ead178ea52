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

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
)

// shellConn is a connection that can open a shell: a real one.
type shellConn interface {
	Shell(ctx context.Context, o podssh.ShellOptions) error
}

// Shell opens the user's shell, or runs opts.Command with it, as root on
// the pod (a PTY if opts.Term), in the job's surroundings: the run
// directory, the job's variables ($OVERBRAINER_RUN_DIR,
// $OVERBRAINER_OUTPUTS, the pod's environment), never its secrets. A
// non-zero exit is a *podssh.CommandError. It renews no lease, but is use
// of a kept pod whose job ended.
func (r *Run) Shell(ctx context.Context, opts podssh.ShellOptions) error {
	if err := r.liveConn(ctx); err != nil {
		return err
	}
	sc, ok := r.conn.(shellConn)
	if !ok {
		return errors.New("guard: this connection cannot open a shell")
	}
	opts.Command = jobctl.SessionCommand(r.rec.RunDir, podenv.JobEnv, opts.Command)
	return sc.Shell(ctx, opts)
}

// SSHConfig is what WriteSSHConfig wrote: files for OpenSSH's ssh.
type SSHConfig struct {
	File, Alias string // the ssh_config, and its Host
	Command     string // the line that opens a shell on the pod with them
}

// The files WriteSSHConfig writes into its directory.
const (
	sshConfigFile  = "ssh_config"
	knownHostsFile = "known_hosts"
	sshKeyFile     = "id_ed25519"
)

// WriteSSHConfig writes an ssh_config, known_hosts and the client's key into
// dir (0600) that trust the run's host key alone; redo it if the port moves.
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
	file := filepath.Join(dir, sshConfigFile)
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
`, r.rec.ID, file, alias, alias, host, port, filepath.Join(dir, sshKeyFile), alias, filepath.Join(dir, knownHostsFile), r.host.Type())
	known := alias + " " + string(ssh.MarshalAuthorizedKey(r.host))
	for name, b := range map[string]string{sshKeyFile: string(r.rec.ClientKey), knownHostsFile: known, sshConfigFile: config} {
		if err := writePrivate(filepath.Join(dir, name), []byte(b)); err != nil {
			return SSHConfig{}, err
		}
	}
	return SSHConfig{File: file, Alias: alias, Command: "ssh -F " + podssh.Quote(file) + " " + alias}, nil
}
