package watchdog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// stallPod is a pod on the fake clock whose job stalls after 20 s without
// movement and is deleted 10 s after its snapshot was asked. Its job is a
// process group that does nothing; what it writes, the clock's ticks write
// for it: job j's first progress line before the watchdog starts, and then
// its output at each tick, as a job that prints steadily writes between two
// ticks. (A job of its own, in a loop on a real `sleep 0.01`, cost a
// hundred processes a second per test, and moved at the machine's pace,
// not the clock's.)
func stallPod(t *testing.T, sh shtest.Shell, j stallJob) (*pod, int64) {
	p := newPod(t, sh)
	c := p.fakeClock(fakeT0)
	p.setEnv("OVERBRAINER_STALL_AFTER", "20", "OVERBRAINER_SNAPSHOT_WAIT", "10")
	if j.progress != "" {
		writeAtomic(t, filepath.Join(p.dir, "progress"), j.progress)
	}
	p.startJob()
	c.onTick(`cd "$OVERBRAINER_RUN_DIR" && ` + j.output)
	return p, c.Now()
}

// held starts the watchdog and checks that, for 40 ticks after the job
// started (60 fake seconds: twice the stall limit plus its snapshot
// wait), it neither asked for a snapshot nor deleted the pod.
func (p *pod) held() {
	p.t.Helper()
	p.start()
	_, i := p.waitEvent(watchdog.KindJobStarted)
	evs := p.waitTicks(i, 40)
	p.none(evs, 0, watchdog.KindSnapshotRequested)
	p.none(evs, 0, watchdog.KindDeleteReason)
}

// stallJob is what a job writes: a first progress line, then output (shell,
// with $t the clock's true time) between every two ticks.
type stallJob struct{ progress, output string }

// printsForever reports one step, then prints forever without another:
// an evaluation after the last step, or a job printing as it retries.
var printsForever = stallJob{"step=1 total=5000 loss=2.3\n", `echo "eval batch done" >> job.log`}

// stuck reports one step, then does nothing: no output, no file under its
// outputs, no CPU (its process group is a sleep).
var stuck = stallJob{"step=1 total=5000 loss=2.3\n", `:`}

// A stuck job is asked for a snapshot once it has not moved for the stall
// limit, then deleted as stalled once the snapshot had its wait.
func TestStallEndsAStuckJob(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p, n := stallPod(t, sh, stuck)
		p.start()
		evs := p.deleted(watchdog.DeleteStalled)
		started := find(evs, -1, watchdog.KindJobStarted)
		r := find(evs, -1, watchdog.KindSnapshotRequested, "reason", string(watchdog.ReasonStall))
		d := find(evs, -1, watchdog.KindDeleteReason)
		if started < 0 || r < 0 || r > d {
			t.Fatalf("want job_started, then a stall snapshot, then the delete\n%s", p.logText())
		}
		if got := p.read(watchdog.SnapshotRequest); got != "stall\n" {
			t.Errorf("snapshot.request = %q, want stall", got)
		}
		at, asked, del := evs[started].Time.Unix(), evs[r].Time.Unix(), evs[d].Time.Unix()
		if asked < at+20 || asked > at+20+3 {
			t.Errorf("stall snapshot asked at %+d s after the job started, want 20 to 23 (start %d)", asked-at, n)
		}
		if del < asked+10 {
			t.Errorf("deleted %d s after the snapshot was asked, before the snapshot wait of 10", del-asked)
		}
	})
}

// A job whose output grows after its last progress line (an evaluation,
// a save that logs) is moving: output always counts.
func TestStallOutputAfterProgressHoldsTheJob(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p, _ := stallPod(t, sh, printsForever)
		p.held()
	})
}

// A silent job that writes a file under its outputs (a checkpoint, an
// eval that logs to its own file) is moving, and the watchdog notes when
// it saw it move in .pod/moved for a client.
func TestStallOutputsFileHoldsTheJob(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p, _ := stallPod(t, sh, stallJob{"step=1 total=5000\n", `echo "$t" > outputs/eval/metrics.txt`})
		if err := os.MkdirAll(filepath.Join(p.dir, "outputs", "eval"), 0o755); err != nil {
			t.Fatal(err)
		}
		p.held()
		if got := p.read(watchdog.Moved); got == "" || got == "\n" {
			t.Errorf("%s = %q, want the time the watchdog last saw the job move", watchdog.Moved, got)
		}
	})
}

// A silent job whose processes use at least a tenth of a core (a
// compile, a download, a save) is moving; one that uses less is stuck.
// The processes are a table the watchdog reads (OVERBRAINER_PROC) whose
// CPU time the clock's ticks move: busy, one of the job's group (in
// another session) and one of the job's session (in another group), at
// 8% of a core each, which only counted together reach the tenth; idle,
// one of the job's group at a twentieth of a core. Beside them one of
// another group and session burns a core, which does not count.
func TestStallCPUHoldsTheJob(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		for _, tc := range []struct {
			name  string
			ticks string // CPU ticks of each of the job's processes per fake second (100: a core)
		}{{"busy", "8"}, {"idle", "5"}} {
			t.Run(tc.name, func(t *testing.T) {
				p := newPod(t, sh)
				c := p.fakeClock(fakeT0)
				p.setEnv("OVERBRAINER_STALL_AFTER", "20", "OVERBRAINER_SNAPSHOT_WAIT", "10")
				writeAtomic(t, filepath.Join(p.dir, "progress"), "step=1 total=5000\n")
				p.startJob()
				pgid, err := strconv.Atoi(strings.TrimSpace(p.read(watchdog.JobPID)))
				if err != nil {
					t.Fatal(err)
				}
				proc := t.TempDir()
				p.setEnv("OVERBRAINER_PROC", proc)
				stat := func(pid, group, session int, cpu string) string {
					dir := filepath.Join(proc, strconv.Itoa(pid))
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					return fmt.Sprintf(`printf '%d (py thon) R 1 %d %d 0 -1 4194560 1 2 3 4 %%d 0 0 0 20 0 1 0 777 1000 10\n' %s > %q`,
						pid, group, session, cpu, filepath.Join(dir, "stat"))
				}
				// CPU time since the clock's start, in ticks: small numbers,
				// as mksh's 32 bits need.
				since := "(t - " + strconv.FormatInt(fakeT0*100, 10) + ")"
				job := "$((" + since + " * " + tc.ticks + " / 100))"
				tick := stat(pgid+1, pgid, pgid+1, job) + "; " + stat(pgid+2, pgid+2, pgid+2, "$(("+since+"))")
				if tc.name == "busy" {
					tick += "; " + stat(pgid+3, pgid+3, pgid, job)
				}
				c.onTick(tick)
				if tc.name == "idle" {
					p.start()
					p.deleted(watchdog.DeleteStalled)
					return
				}
				p.held()
			})
		}
	})
}

// With the rule at its default (off), a stuck job is never asked for a
// stall snapshot nor deleted, however long it stays stuck; the watchdog
// still looks, and notes the job's movement while it moves.
func TestStallOffByDefault(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		c := p.fakeClock(fakeT0)
		// Ticks of two minutes: the watch looks every three.
		p.setEnv("OVERBRAINER_INTERVAL", "120", "OVERBRAINER_SNAPSHOT_WAIT", "60")
		writeAtomic(t, filepath.Join(p.dir, "progress"), "step=1 total=5000\n")
		p.startJob()
		c.onTick(`cd "$OVERBRAINER_RUN_DIR" && [ $((t / 100)) -ge ` + strconv.FormatInt(fakeT0+600, 10) + ` ] || echo "step $t" >> job.log`)
		p.start()
		_, i := p.waitEvent(watchdog.KindJobStarted)
		// Two hours: four times the warning window.
		evs := p.waitTicks(i, 60)
		p.none(evs, 0, watchdog.KindSnapshotRequested)
		p.none(evs, 0, watchdog.KindDeleteReason)
		got, err := strconv.ParseInt(strings.TrimSpace(p.read(watchdog.Moved)), 10, 64)
		if err != nil || got < fakeT0 || got > fakeT0+600+300 {
			t.Errorf("%s = %d (%v), want the last look that saw the job print, in its first 10 minutes", watchdog.Moved, got, err)
		}
	})
}

// A job whose progress moves is never stalled, however long it runs.
func TestStallProgressHoldsTheJob(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p, _ := stallPod(t, sh, stallJob{output: `echo "step=$t total=5000" >> progress`})
		p.held()
	})
}

// With MIN_GPU_UTIL, a GPU at least that busy holds a job that does not
// move otherwise; one less busy does not.
func TestStallGPUBusyHoldsTheJob(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		t.Run("busy", func(t *testing.T) {
			p, _ := stallPod(t, sh, stuck)
			p.bin.Stub("nvidia-smi", `echo 3; echo 85`)
			p.setEnv("OVERBRAINER_MIN_GPU_UTIL", "50")
			p.held()
		})
		t.Run("idle", func(t *testing.T) {
			p, _ := stallPod(t, sh, stuck)
			p.bin.Stub("nvidia-smi", `echo 3; echo '[N/A]'; echo 49`)
			p.setEnv("OVERBRAINER_MIN_GPU_UTIL", "50")
			p.start()
			p.deleted(watchdog.DeleteStalled)
		})
	})
}

// A job that never reports progress moves by its output: one that keeps
// printing is not stalled.
func TestStallOutputHoldsAJobWithoutProgress(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p, _ := stallPod(t, sh, stallJob{output: `echo "epoch done" >> job.log`})
		p.held()
	})
}
