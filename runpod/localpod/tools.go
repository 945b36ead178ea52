package localpod

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Tool is a program local pods need on this machine, and the Debian
// package that has it.
type Tool struct{ Name, Package string }

// Tools are the programs a local pod runs: the bootstrap, sshd, the
// watchdog's curl, the job's setsid and the transfers' tar.
var Tools = []Tool{
	{"bash", "bash"}, {"sshd", "openssh-server"}, {"curl", "curl"},
	{"setsid", "util-linux"}, {"tar", "tar"},
}

// toolCheck finds the pods' tools, and installs the missing ones.
type toolCheck struct {
	look func(name string) bool
	// install installs Debian packages; nil when it cannot.
	install func(pkgs []string) error
}

// systemTools looks on PATH (and /usr/sbin for sshd), and installs with
// apt-get when running as root on a Debian-like system, its output to out.
func systemTools(out io.Writer) toolCheck {
	tc := toolCheck{look: func(name string) bool {
		if _, err := exec.LookPath(name); err == nil {
			return true
		}
		_, err := os.Stat("/usr/sbin/" + name)
		return err == nil
	}}
	if _, err := exec.LookPath("apt-get"); err == nil && os.Geteuid() == 0 {
		tc.install = func(pkgs []string) error {
			for _, args := range [][]string{
				{"update", "-qq"},
				append([]string{"install", "-y", "-qq", "--no-install-recommends"}, pkgs...),
			} {
				cmd := exec.Command("apt-get", args...)
				cmd.Env = aptEnv()
				cmd.Stdout, cmd.Stderr = out, out
				if err := cmd.Run(); err != nil {
					return fmt.Errorf("apt-get %s: %w", args[0], err)
				}
			}
			return nil
		}
	}
	return tc
}

// aptEnv is apt-get's whole env: a fixed PATH and what apt needs to run
// unattended, never the caller's, which may hold the account key or a
// token (and whose proxy or apt settings are not ours to pass on).
func aptEnv() []string {
	return []string{
		"PATH=" + BasePath,
		"HOME=/root",
		"LANG=C.UTF-8",
		"DEBIAN_FRONTEND=noninteractive",
	}
}

// missing lists the tools not found and their packages.
func (tc toolCheck) missing() (names, pkgs []string) {
	for _, t := range Tools {
		if !tc.look(t.Name) {
			names = append(names, t.Name)
			pkgs = append(pkgs, t.Package)
		}
	}
	return names, pkgs
}

// EnsureTools says what stops this machine from running local pods, and
// installs the missing Tools when it can (as root, with apt-get), so that
// a fresh Debian machine runs local pods as it is. say tells what it
// installs; apt-get's own output goes to out.
func EnsureTools(say func(format string, args ...any), out io.Writer) error {
	if err := Check(); err != nil {
		return err
	}
	return systemTools(out).ensure(say)
}

func (tc toolCheck) ensure(say func(format string, args ...any)) error {
	names, pkgs := tc.missing()
	if len(names) == 0 {
		return nil
	}
	if tc.install != nil {
		say("the local pods need %s: installing %s with apt-get", strings.Join(names, ", "), strings.Join(pkgs, " "))
		if err := tc.install(pkgs); err != nil {
			return fmt.Errorf("installing %s: %w", strings.Join(pkgs, " "), err)
		}
		if names, pkgs = tc.missing(); len(names) == 0 {
			return nil
		}
	}
	return fmt.Errorf("the local pods need %s: apt-get install %s",
		strings.Join(names, ", "), strings.Join(pkgs, " "))
}
