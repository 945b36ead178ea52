package jobctl

import (
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

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
		st, _, err := parseHeader("ob1 7 - 1 "+field+" 0 1 - - - - 0", "")
		want.PID, want.ExitCode, want.Alive, want.PodNow, want.DuKiB = 7, -1, true, 1, -1
		if err != nil || !cmp.Equal(want, st) {
			t.Errorf("%s: %+v %v, want %+v", field, st, err, want)
		}
		if st.Lost() != (field == watchdog.CancelContainerRestarted) || !st.Ended() != (field == "0") {
			t.Errorf("%s: Lost %v Ended %v", field, st.Lost(), st.Ended())
		}
	}
	for _, bad := range []string{"Restarted", "a-b", "2x", "-"} {
		if _, _, err := parseHeader("ob1 7 - 0 "+bad+" 0 1 - - - - 0", ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A lost job with an exit code ended by that code.
	st, _, err := parseHeader("ob1 7 0 0 container_restarted 0 1 - - - - 0", "")
	if err != nil || st.Lost() {
		t.Errorf("%+v %v", st, err)
	}
}
