package jobctl

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"

	"github.com/google/go-cmp/cmp"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// markLost runs the bootstrap's own record_lost_job on runDir under shell,
// as a restarted container's bootstrap does before sshd serves. Its fail
// (which would hand the pod to a watchdog) only reports here.
func markLost(t *testing.T, shell []string, runDir string) {
	t.Helper()
	script := shtest.BootstrapFunctions(t) + `
fail() { echo "fail $1" >&2; exit 9; }
RUN_DIR=$1
record_lost_job
`
	if out, stderr, err := runScript(t, shell, nil, "", script, runDir); err != nil {
		t.Fatalf("record_lost_job: %v %s %s", err, out, stderr)
	}
}

// After a restart of the pod's container, the old job's job.pid may name a
// live, unrelated group of the new container. Once the bootstrap marked the
// job lost, watch.sh shows it ended and not alive, and the State says lost.
func TestWatchSeesALostJob(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, _ := newRun(t, "")
		pgid := liveGroup(t)
		if err := os.WriteFile(filepath.Join(runDir, watchdog.JobPID), []byte(strconv.Itoa(pgid)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(runDir, JobLog), []byte("step 1\nstep 2\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		w := startWatch(t, shell, runDir)
		// The trap: unmarked, the stale number passes for a live job.
		st, _ := poll(t, w, 0, false, 100)
		if !st.Alive || st.Ended() || st.Lost() {
			t.Fatalf("the unrelated group should look alive before the mark: %+v", st)
		}

		markLost(t, shell, runDir)
		st, b := poll(t, w, 0, false, 100)
		want := State{PID: pgid, ExitCode: -1, Cancelled: true, CancelReason: watchdog.CancelContainerRestarted,
			LogSize: 14, PodNow: st.PodNow, DuKiB: -1}
		if diff := cmp.Diff(want, st); diff != "" || b != "step 1\nstep 2\n" {
			t.Fatalf("a lost job (-want +got):\n%s%q", diff, b)
		}
		if !st.Ended() || !st.Lost() {
			t.Fatalf("Ended %v Lost %v", st.Ended(), st.Lost())
		}
		if err := syscall.Kill(-pgid, 0); err != nil {
			t.Errorf("the unrelated group is gone: %v", err)
		}
		// The mark is made once: a second boot leaves it as it is.
		markLost(t, shell, runDir)
		if got, _ := os.ReadFile(filepath.Join(runDir, watchdog.Cancelled)); string(got) != watchdog.CancelContainerRestarted+"\n" {
			t.Fatalf("cancelled = %q", got)
		}
	})
}

// A job that ended by itself, or had no job.pid, is not marked.
func TestMarkLostLeavesOtherRunsAlone(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no job":     {},
		"exit code":  {watchdog.JobPID: "4242\n", watchdog.ExitCode: "0\n"},
		"cancelled":  {watchdog.JobPID: "4242\n", watchdog.Cancelled: "\n"},
		"pid is dir": {watchdog.JobPID + "/x": "1"},
	} {
		t.Run(name, func(t *testing.T) {
			runDir, _ := newRun(t, "")
			for f, body := range files {
				p := filepath.Join(runDir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			markLost(t, []string{"sh"}, runDir)
			got, err := os.ReadFile(filepath.Join(runDir, watchdog.Cancelled))
			if want, had := files[watchdog.Cancelled]; had {
				if string(got) != want {
					t.Errorf("cancelled = %q, want it untouched", got)
				}
			} else if err == nil {
				t.Errorf("marked cancelled: %q", got)
			}
		})
	}
}

// watch.sh's CANCELLED field: 0, 1 (a marker without a reason) or the
// reason word; anything else is refused.
func TestParseCancelled(t *testing.T) {
	for field, want := range map[string]State{
		"0":                   {},
		"1":                   {Cancelled: true},
		"container_restarted": {Cancelled: true, CancelReason: "container_restarted"},
	} {
		st, _, err := parseHeader("ob1 7 - 1 "+field+" 0 1 - - - - - - 0", "")
		want.PID, want.ExitCode, want.Alive, want.PodNow, want.DuKiB = 7, -1, true, 1, -1
		if err != nil || !cmp.Equal(want, st) {
			t.Errorf("%s: %+v %v, want %+v", field, st, err, want)
		}
		if st.Lost() != (field == watchdog.CancelContainerRestarted) || !st.Ended() != (field == "0") {
			t.Errorf("%s: Lost %v Ended %v", field, st.Lost(), st.Ended())
		}
	}
	for _, bad := range []string{"Restarted", "a-b", "2x", "-"} {
		if _, _, err := parseHeader("ob1 7 - 0 "+bad+" 0 1 - - - - - - 0", ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A lost job with an exit code ended by that code.
	st, _, err := parseHeader("ob1 7 0 0 container_restarted 0 1 - - - - - - 0", "")
	if err != nil || st.Lost() {
		t.Errorf("%+v %v", st, err)
	}
}

// A job lost with an earlier container starts again in its run directory
// with RestartCommand's restart mode, with its secrets on standard input
// as for a first start, from the outputs it left; a second restart, once
// the new job ended, is refused.
func TestRestartALostJob(t *testing.T) {
	t.Parallel()
	shtest.NeedTool(t, "setsid")
	forEachShell(t, func(t *testing.T, shell []string) {
		runDir, jobEnv := newRun(t, `n=$(cat "$OVERBRAINER_OUTPUTS/n" 2>/dev/null || echo 0)
echo "run $n"
echo $((n + 1)) > "$OVERBRAINER_OUTPUTS/n"
printf '%s' "$MY_SECRET" > "$OVERBRAINER_OUTPUTS/secret"
`)
		if err := os.MkdirAll(filepath.Join(runDir, OutputsDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(runDir, OutputsDir, "n"), []byte("1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		old := liveGroup(t)
		if err := os.WriteFile(filepath.Join(runDir, watchdog.JobPID), []byte(strconv.Itoa(old)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		markLost(t, shell, runDir)
		in, err := JobInput(nil, map[string]string{"MY_SECRET": "s3cret value"})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := readAll(in)
		restart := func() (string, string, error) {
			return runScript(t, shell, nil, b, startProgram(), runDir, jobEnv, "restart")
		}
		out, stderr, err := restart()
		if err != nil {
			t.Fatalf("restart: %v\n%s", err, stderr)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil || pid == old {
			t.Fatalf("restart printed %q (the lost job's group was %d)", out, old)
		}
		if code := waitFile(t, filepath.Join(runDir, watchdog.ExitCode)); code != "0\n" {
			t.Fatalf("exit_code %q", code)
		}
		if _, err := os.Stat(filepath.Join(runDir, watchdog.Cancelled)); err == nil {
			t.Error("the lost job's cancelled marker is still there")
		}
		if got := waitFile(t, filepath.Join(runDir, OutputsDir, "secret")); got != "s3cret value" {
			t.Errorf("the job saw MY_SECRET %q", got)
		}
		if log := waitFile(t, filepath.Join(runDir, JobLog)); !strings.Contains(log, "run 1\n") {
			t.Errorf("the job did not go on from its outputs:\n%s", log)
		}
		if err := syscall.Kill(-old, 0); err != nil {
			t.Errorf("the unrelated group in the lost job.pid is gone: %v", err)
		}
		_, stderr, err = restart()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != StartNoLostJob {
			t.Fatalf("a restart of a job that ended: %v %s", err, stderr)
		}
	})
}

// The restart mode starts nothing but a job lost with an earlier
// container: not in a run directory without a job, nor over a job that
// ended by itself or by a cancel, or whose results were collected.
func TestRestartStartsOnlyALostJob(t *testing.T) {
	t.Parallel()
	lost := watchdog.CancelContainerRestarted + "\n"
	for name, files := range map[string]map[string]string{
		"no job":    {},
		"running":   {watchdog.JobPID: "4242\n"},
		"exit code": {watchdog.JobPID: "4242\n", watchdog.ExitCode: "0\n", watchdog.Cancelled: lost},
		"cancelled": {watchdog.JobPID: "4242\n", watchdog.Cancelled: "\n"},
		"retrieved": {watchdog.JobPID: "4242\n", watchdog.Cancelled: lost, watchdog.Retrieved: ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runDir, jobEnv := newRun(t, "echo started > started\n")
			for f, body := range files {
				if err := os.WriteFile(filepath.Join(runDir, f), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, stderr, err := runScript(t, []string{"sh"}, nil, "", startProgram(), runDir, jobEnv, "restart")
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != StartNoLostJob {
				t.Fatalf("restart: %v %s", err, stderr)
			}
			for f, body := range files {
				if got, err := os.ReadFile(filepath.Join(runDir, f)); err != nil || string(got) != body {
					t.Errorf("%s = %q, %v; want it untouched", f, got, err)
				}
			}
			if _, err := os.Stat(filepath.Join(runDir, JobDir, "started")); err == nil {
				t.Error("a job was started")
			}
		})
	}
}
