package bootstrap_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// viaEntrypoint runs job_env_via with the entrypoint script ep (written to
// a file) under shell, then the shell lines after, and returns
// job_env_via's status, the file it wrote (nil when none) and the output.
func viaEntrypoint(t *testing.T, shell, ep string, env map[string]string, after ...string) (status string, file []byte, output string) {
	t.Helper()
	dir := t.TempDir()
	epFile := filepath.Join(dir, "entrypoint.sh")
	if err := os.WriteFile(epFile, []byte(ep), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "job.env.tmp")
	argv := shellArgv(t, shell)
	cmd := exec.Command(argv[0], append(argv[1:], "-c", bootstrap.Functions()+`
umask 077
job_env_via "$1" "$2"
echo "status=$?"
`+strings.Join(after, "\n"), "sh", epFile, out)...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", shell, err, buf.String())
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("%s: job_env_via still runs after 2 minutes:\n%s", shell, buf.String())
	}
	output = buf.String()
	i := strings.LastIndex(output, "status=")
	if i < 0 {
		t.Fatalf("%s: no status:\n%s", shell, output)
	}
	status = strings.TrimSpace(output[i+len("status="):])
	file, err := os.ReadFile(out)
	if err != nil {
		file = nil
	}
	if info, err := os.Stat(out); err == nil && info.Mode().Perm() != 0o600 {
		t.Errorf("%s: %s has mode %v, want 0600", shell, out, info.Mode().Perm())
	}
	for _, left := range []string{".pid", ".status"} {
		if _, err := os.Stat(out + left); err == nil {
			t.Errorf("%s: %s%s left behind", shell, out, left)
		}
	}
	return status, file, output
}

// The job's environment goes through the image's entrypoint when it ends
// in exec "$@": what it exports reaches the job, its banner the container's
// output, and it never sees the pod's key.
func TestJobEnvGoesThroughTheImageEntrypoint(t *testing.T) {
	shtest.ForShells(t, shtest.Names, func(t *testing.T, sh shtest.Shell) {
		saw := filepath.Join(t.TempDir(), "saw")
		ep := `#!/bin/sh
echo "== CUDA banner =="
echo "key=${RUNPOD_API_KEY:-none}" > ` + shellQuote(saw) + `
IMAGE_SETUP="done it's"
export IMAGE_SETUP
exec "$@"
`
		status, file, out := viaEntrypoint(t, sh.Name, ep, map[string]string{
			"PATH": shtest.SystemPath, "RUNPOD_API_KEY": "rpa_SECRET_POD_KEY", "KEPT": "yes",
		})
		if status != "0" {
			t.Fatalf("status %s, output:\n%s", status, out)
		}
		env := string(file)
		for _, want := range []string{`export IMAGE_SETUP='done it'\''s'` + "\n", "export KEPT='yes'\n"} {
			if !strings.Contains(env, want) {
				t.Errorf("the job env lacks %q:\n%s", want, env)
			}
		}
		if strings.Contains(env, "RUNPOD_API_KEY") || strings.Contains(env, "CUDA banner") {
			t.Errorf("the job env holds the key or the banner:\n%s", env)
		}
		if !strings.Contains(out, "== CUDA banner ==") {
			t.Errorf("the banner is not on the output:\n%s", out)
		}
		if got := readString(saw); got != "key=none\n" {
			t.Errorf("the entrypoint saw %q", got)
		}
	})
}

// An entrypoint that does not run its arguments leaves no file, whether it
// ends, fails or hangs; one that hangs is killed at the time limit.
func TestJobEnvSurvivesAnEntrypointThatIgnoresItsArguments(t *testing.T) {
	t.Parallel()
	shtest.ForShells(t, shtest.Names, func(t *testing.T, sh shtest.Shell) {
		marker := strconv.FormatInt(time.Now().UnixNano()%1e9+1e9, 10)
		for name, ep := range map[string]string{
			"ends":  "#!/bin/sh\necho 'starting my own server'\n",
			"fails": "#!/bin/sh\nexit 5\n",
			"hangs": "#!/bin/sh\nexec sleep " + marker + "\n",
		} {
			status, file, out := viaEntrypoint(t, sh.Name, ep, map[string]string{
				"PATH": shtest.SystemPath, "OVERBRAINER_IMAGE_ENTRYPOINT_TIMEOUT": "1",
			})
			if status != "1" || file != nil {
				t.Errorf("%s: status %s, file %q; output:\n%s", name, status, file, out)
			}
		}
		if pids := procsWithArgs("sleep\x00" + marker + "\x00"); len(pids) > 0 {
			t.Errorf("the hung entrypoint still runs: %v", pids)
		}
	})
}

// A hung entrypoint is killed, and job_env_via returns once the subshell
// that ran it wrote its status, which it then removes: killed as well, that
// subshell could write it later (under yash, $! of a redirected background
// subshell names a process above it, which is all a kill of $! ends). Here
// sh, which starts the entrypoint, takes a second to end once its child is
// killed, and the status is looked for two seconds after the return. It
// failed on main under yash.
func TestHungEntrypointsStatusIsWaitedFor(t *testing.T) {
	t.Parallel()
	shtest.ForShells(t, shtest.Names, func(t *testing.T, sh shtest.Shell) {
		realSh, err := exec.LookPath("sh")
		if err != nil {
			t.Fatal(err)
		}
		bin := t.TempDir()
		slow := fmt.Sprintf("#!%s\n%q \"$@\"\nstatus=$?\nsleep 1\nexit $status\n", realSh, realSh)
		if err := os.WriteFile(filepath.Join(bin, "sh"), []byte(slow), 0o755); err != nil {
			t.Fatal(err)
		}
		status, file, out := viaEntrypoint(t, sh.Name, "#!/bin/sh\nexec sleep 600\n", map[string]string{
			"PATH": bin + ":" + shtest.SystemPath, "OVERBRAINER_IMAGE_ENTRYPOINT_TIMEOUT": "1",
		}, "sleep 2")
		if status != "1" || file != nil {
			t.Errorf("status %s, file %q; output:\n%s", status, file, out)
		}
	})
}

// procsWithArgs lists the processes whose command line is args.
func procsWithArgs(args string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == args {
			pids = append(pids, pid)
		}
	}
	return pids
}
