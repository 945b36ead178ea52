package jobctl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// TestMain runs the parallel tests 8 at a time, not GOMAXPROCS: the
// scripts mostly wait on their jobs and peers, and at 2 at a time the
// package took 57 s of wall time for 100 s of tests.
func TestMain(m *testing.M) { shtest.Main(m, 8) }

func forEachShell(t *testing.T, f func(t *testing.T, shell []string)) {
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) { f(t, sh.Argv) })
}

// runScript runs what podssh.Command would run on the pod, under shell
// instead of sh: the command line's script and arguments.
func runScript(t testing.TB, shell []string, env []string, stdin string, script string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(shell[0], append(append(shell[1:], "-c", script, "sh"), args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), errb.String(), err
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("%v did not return: it waits for the detached job?", shell)
	}
	return "", "", nil
}

// procStat returns the process group and session of a process.
func procStat(t *testing.T, pid int) (pgrp, session int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	pgrp, _ = strconv.Atoi(f[2])
	session, _ = strconv.Atoi(f[3])
	return pgrp, session
}

// cmdlinesContaining lists the processes whose command line holds s.
func cmdlinesContaining(s string) []string {
	var hits []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(s)) {
			hits = append(hits, p)
		}
	}
	return hits
}

func waitFile(t *testing.T, p string) string {
	t.Helper()
	return shtest.WaitFile(t, p, 60*time.Second)
}

// newRun makes a run directory with a command.sh, and a job env file.
func newRun(t testing.TB, command string) (runDir, jobEnv string) {
	t.Helper()
	runDir = filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(filepath.Join(runDir, ".pod"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, CommandFile), []byte(command), 0o600); err != nil {
		t.Fatal(err)
	}
	jobEnv = filepath.Join(t.TempDir(), "job.env")
	// The bootstrap's file; some lines lack export, as set -a handles.
	env := "export FROM_ENV='from the job env'\nPLAIN=plain\n"
	if err := os.WriteFile(jobEnv, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	return runDir, jobEnv
}

const testCommand = `echo "job $$ in $(pwd)"
echo "FROM_ENV=$FROM_ENV PLAIN=$PLAIN"
printf '%s' "${HF_TOKEN-unset}" > "$OVERBRAINER_OUTPUTS/token"
printf '%s' "${MULTI-unset}" > "$OVERBRAINER_OUTPUTS/multi"
echo "PLAIN_SECRET=$PLAIN CACHE=${CACHE_DIR-unset} FROM_DEFAULT=$FROM_ENV INPUT=${OVERBRAINER_JOB_INPUT-unset}"
echo "request at $OVERBRAINER_SNAPSHOT_REQUEST"
while [ ! -f "$OVERBRAINER_SNAPSHOT_REQUEST" ]; do sleep 0.05; done
echo "done"
exit 5
`

func startAndFinish(t *testing.T, shell, env []string) {
	runDir, jobEnv := newRun(t, testCommand)
	hups := fakeWatchdog(t, runDir)
	token := "hf_test" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// A secret of many lines and quotes stays one value; a secret wins
	// over job.env's variable of its name, a default does not.
	multi := "{\n  \"key\": \"it's $HOME `id`\"\n}\n"
	in, err := JobInput(map[string]string{"CACHE_DIR": "/vol/cache", "FROM_ENV": "the default"},
		map[string]string{"HF_TOKEN": token, "MULTI": multi, "PLAIN": "the secret"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := readAll(in)
	out, stderr, err := runScript(t, shell, env, b, startProgram(), runDir, jobEnv)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, stderr)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("start printed %q", out)
	}
	if got := strings.TrimSpace(waitFile(t, filepath.Join(runDir, "job.pid"))); got != strconv.Itoa(pid) {
		t.Fatalf("job.pid %q, start printed %d", got, pid)
	}
	// The job leads a process group of its own, which the watchdog's
	// group_signal can reach.
	if pgrp, _ := procStat(t, pid); pgrp != pid {
		t.Fatalf("job %d is in process group %d", pid, pgrp)
	}
	if hits := cmdlinesContaining(token); len(hits) > 0 {
		t.Fatalf("the HF token is on a command line: %v", hits)
	}
	// The job's start woke the watchdog; it is seen before the job may
	// end, as two HUPs pending at once are one.
	waitHups(t, hups, 1, "the job's start")
	if err := os.WriteFile(filepath.Join(runDir, "snapshot.request"), []byte("stop"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := waitFile(t, filepath.Join(runDir, "exit_code")); code != "5\n" {
		t.Fatalf("exit_code %q", code)
	}
	// And its end woke it again.
	waitHups(t, hups, 2, "the job's start and end")
	if got := waitFile(t, filepath.Join(runDir, OutputsDir, "token")); got != token {
		t.Fatalf("the job saw HF_TOKEN %q", got)
	}
	if got := waitFile(t, filepath.Join(runDir, OutputsDir, "multi")); got != multi {
		t.Fatalf("the job saw MULTI %q, want %q", got, multi)
	}
	log := waitFile(t, filepath.Join(runDir, JobLog))
	for _, want := range []string{
		fmt.Sprintf(" in %s/job\n", runDir),
		"FROM_ENV=from the job env PLAIN=the secret\n",
		"PLAIN_SECRET=the secret CACHE=/vol/cache FROM_DEFAULT=from the job env INPUT=unset\n",
		"request at " + runDir + "/snapshot.request\n",
		"done\n",
	} {
		if !strings.Contains(log, want) {
			t.Fatalf("job.log lacks %q:\n%s", want, log)
		}
	}
	for _, f := range []string{"job.pid.tmp", "exit_code.tmp"} {
		if _, err := os.Stat(filepath.Join(runDir, f)); err == nil {
			t.Fatalf("%s left behind", f)
		}
	}

	// A second start is refused and changes nothing.
	_, stderr, err = runScript(t, shell, env, "\n", startProgram(), runDir, jobEnv)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != StartAlreadyStarted {
		t.Fatalf("second start: %v %s", err, stderr)
	}
}

// fakeWatchdog starts a process that notes each HUP (the wake-up) as a line
// of the file it returns, and writes its pid where the watchdog writes its
// own.
func fakeWatchdog(t *testing.T, runDir string) (hups string) {
	t.Helper()
	hups = filepath.Join(t.TempDir(), "hups")
	// It says when its trap is set: a HUP before that would end it.
	cmd := exec.Command("sh", "-c", `trap 'echo hup >> "$0"' HUP; : > "$0.ready"; while :; do sleep 0.05; done`, hups)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitFile(t, hups+".ready")
	pid := strconv.Itoa(cmd.Process.Pid) + "\n"
	if err := os.WriteFile(filepath.Join(runDir, watchdog.PID), []byte(pid), 0o644); err != nil {
		t.Fatal(err)
	}
	return hups
}

// waitHups waits until the fake watchdog noted n HUPs, the last sent after
// what. Signals do not queue: a test that counts HUPs waits for each
// before it causes the next.
func waitHups(t *testing.T, hups string, n int, what string) {
	t.Helper()
	want := strings.Repeat("hup\n", n)
	shtest.Eventually(t, time.Minute, func() bool {
		b, _ := os.ReadFile(hups)
		return string(b) == want
	}, "%s did not wake the watchdog (want %d HUPs in all)", what, n)
}

func readAll(r interface{ Read([]byte) (int, error) }) (string, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r)
	return b.String(), err
}

func TestStartUnderEveryShell(t *testing.T) {
	t.Parallel()
	shtest.NeedTool(t, "setsid")
	forEachShell(t, func(t *testing.T, shell []string) {
		startAndFinish(t, shell, nil)
	})
}

// The job's input (its secrets among it) is for the job alone: no process
// the job's top shell starts before the job's own command, such as the mv
// that records job.pid, holds it in its environment. The chaos suite's
// secret sampler once caught that mv with the HF token.
func TestJobInputReachesTheJobAlone(t *testing.T) {
	t.Parallel()
	shtest.NeedTool(t, "setsid")
	realMv, err := exec.LookPath("mv")
	if err != nil {
		t.Fatal(err)
	}
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, jobEnv := newRun(t, "echo ran\n")
		fakeWatchdog(t, runDir)
		// Every mv the start runs notes its environment, then moves.
		bin, envs := t.TempDir(), filepath.Join(t.TempDir(), "envs")
		wrapper := fmt.Sprintf("#!/bin/sh\n{ env; echo '-- end of one mv'; } >> %q\nexec %q \"$@\"\n", envs, realMv)
		if err := os.WriteFile(filepath.Join(bin, "mv"), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		token := "hf_alone" + strconv.FormatInt(time.Now().UnixNano(), 36)
		in, err := JobInput(nil, map[string]string{"HF_TOKEN": token})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := readAll(in)
		if _, stderr, err := runScript(t, shell, []string{"PATH=" + bin + ":" + os.Getenv("PATH")}, b, startProgram(), runDir, jobEnv); err != nil {
			t.Fatalf("start: %v\n%s", err, stderr)
		}
		waitFile(t, filepath.Join(runDir, "exit_code"))
		var before, job int
		for _, e := range strings.Split(strings.TrimSuffix(waitFile(t, envs), "-- end of one mv\n"), "-- end of one mv\n") {
			if strings.Contains(e, "OVERBRAINER_JOB_INPUT") {
				t.Errorf("an mv of the start holds the job's input (OVERBRAINER_JOB_INPUT)")
			}
			// The job's own processes have its variables, and its secrets.
			if strings.Contains(e, "OVERBRAINER_SNAPSHOT_REQUEST=") {
				job++
				continue
			}
			before++
			if strings.Contains(e, token) {
				t.Errorf("an mv run before the job holds its secret HF_TOKEN")
			}
		}
		if before == 0 || job == 0 {
			t.Fatalf("%d mv before the job and %d after its command, want both (job.pid, exit_code)", before, job)
		}
	})
}

// binWithout is a PATH directory with the system's commands but the named
// ones.
func binWithout(t *testing.T, names ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if slices.Contains(names, e.Name()) {
				continue
			}
			_ = os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(bin, e.Name()))
		}
	}
	return bin
}

// Without setsid the start uses busybox's, and without either it refuses
// to start a job that the watchdog could not watch as a group.
func TestStartWithoutSetsid(t *testing.T) {
	t.Parallel()
	shtest.NeedTool(t, "busybox")
	for _, shell := range []string{"dash", "bash"} {
		t.Run(shell, func(t *testing.T) {
			shtest.NeedTool(t, shell)
			bin := binWithout(t, "setsid")
			startAndFinish(t, []string{filepath.Join(bin, shell)}, []string{"PATH=" + bin})

			bin = binWithout(t, "setsid", "busybox")
			runDir, jobEnv := newRun(t, "echo never")
			_, stderr, err := runScript(t, []string{filepath.Join(bin, shell)}, []string{"PATH=" + bin}, "\n", startProgram(), runDir, jobEnv)
			if err == nil || !strings.Contains(stderr, "neither setsid nor busybox") {
				t.Fatalf("start without setsid: %v %q", err, stderr)
			}
			if _, err := os.Stat(filepath.Join(runDir, "job.pid")); err == nil {
				t.Fatal("a job started without a process group of its own")
			}
		})
	}
}

// A bad name is refused, named; a value never appears in an error.
func TestJobInputRefusesBadNames(t *testing.T) {
	const value = "s3cr3t-value"
	for _, name := range []string{"", "1X", "A-B", "A B", "PATH", "IFS", "OVERBRAINER_RUN_ID", "RUNPOD_API_KEY", "X=Y"} {
		_, err := JobInput(nil, map[string]string{name: value})
		if err == nil {
			t.Errorf("name %q accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), value) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	if _, err := JobInput(nil, map[string]string{"NUL": "a\x00" + value}); err == nil || strings.Contains(err.Error(), value) || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("a NUL in a value: %v", err)
	}
	if _, err := JobInput(nil, map[string]string{"BIG": strings.Repeat("x", MaxJobInput)}); err == nil {
		t.Error("a value past MaxJobInput was accepted")
	}
	if _, err := JobInput(nil, map[string]string{"wandb_key": value, "_X1": value}); err != nil {
		t.Error(err)
	}
}

func TestStartWithoutCommandFails(t *testing.T) {
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, jobEnv := newRun(t, "")
		os.Remove(filepath.Join(runDir, CommandFile))
		_, stderr, err := runScript(t, shell, nil, "\n", startProgram(), runDir, jobEnv)
		if err == nil || !strings.Contains(stderr, "no command.sh") {
			t.Fatalf("start without command.sh: %v %q", err, stderr)
		}
		if _, err := os.Stat(filepath.Join(runDir, "job.pid")); err == nil {
			t.Fatal("job.pid written")
		}
	})
}

// The job's Python writes its output unbuffered (PYTHONUNBUFFERED=1):
// block-buffered into job.log, a job printing a line a second showed
// nothing for minutes, and looked stalled. The pod's env (job.env) may
// say otherwise, and wins.
func TestStartMakesPythonUnbuffered(t *testing.T) {
	shtest.NeedTool(t, "setsid")
	// The session's own environment must not bring a value.
	t.Setenv("PYTHONUNBUFFERED", "")
	os.Unsetenv("PYTHONUNBUFFERED")
	forEachShell(t, func(t *testing.T, shell []string) {
		for _, tc := range []struct{ jobEnv, want string }{{"", "1"}, {"PYTHONUNBUFFERED=0\n", "0"}} {
			runDir, jobEnv := newRun(t, `printf '%s' "${PYTHONUNBUFFERED-unset}" > "$OVERBRAINER_OUTPUTS/py"`+"\n")
			if err := os.WriteFile(jobEnv, []byte(tc.jobEnv), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, stderr, err := runScript(t, shell, nil, "\n", startProgram(), runDir, jobEnv); err != nil {
				t.Fatalf("start: %v\n%s", err, stderr)
			}
			waitFile(t, filepath.Join(runDir, "exit_code"))
			if got, _ := os.ReadFile(filepath.Join(runDir, "outputs", "py")); string(got) != tc.want {
				t.Errorf("job.env %q: the job's PYTHONUNBUFFERED = %q, want %q", tc.jobEnv, got, tc.want)
			}
		}
	})
}
