package jobctl

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A user's session (launch ssh) starts in the run directory with the
// job's variables: job.env's and those start.sh sets, and runs the
// command with the user's shell; an interactive one (no command) reads
// its commands from its input.
func TestSessionIsInTheJobsSurroundings(t *testing.T) {
	forEachShell(t, func(t *testing.T, shell []string) {
		dir := t.TempDir()
		runDir := filepath.Join(dir, "run")
		jobEnv := filepath.Join(dir, "job.env")
		if err := os.Mkdir(runDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jobEnv, []byte("export OVERBRAINER_RUN_DIR='"+runDir+"'\nexport FROM_POD='it'\\''s'\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// The user's shell is the one under test (busybox's needs its
		// applet's name: sh stands in for it).
		user := shell[0]
		if len(shell) > 1 {
			user = "/bin/sh"
		}
		env := []string{"SHELL=" + user, "OVERBRAINER_OUTPUTS=", "HOME=" + dir}
		show := `printf '%s|%s|%s|%s|%s\n' "$(pwd)" "$OVERBRAINER_RUN_DIR" "$OVERBRAINER_OUTPUTS" "$OVERBRAINER_PROGRESS" "$FROM_POD"`
		want := runDir + "|" + runDir + "|" + runDir + "/outputs|" + runDir + "/progress|it's\n"
		out, stderr, err := runScript(t, shell, env, "", sessionScript, runDir, jobEnv, show+"; exit 3")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 || out != want {
			t.Errorf("session command: %q (%v, %s), want %q and exit 3", out, err, stderr, want)
		}
		out, stderr, err = runScript(t, shell, env, show+"\n", sessionScript, runDir, jobEnv)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("interactive session: %q (%v, %s), want %q", out, err, stderr, want)
		}
	})
}
