package watchdog_test

import (
	"path/filepath"
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

// stallJob is what a job writes: a first progress line, then output (shell,
// with $t the clock's true time) between every two ticks.
type stallJob struct{ progress, output string }

// printsForever reports one step, then prints forever without another:
// a job wedged in a retry loop.
var printsForever = stallJob{"step=1 total=5000 loss=2.3\n", `echo "NCCL timeout, retrying" >> job.log`}

// A job that prints forever without progress is asked for a snapshot once
// it has not moved for the stall limit, then deleted as stalled once the
// snapshot had its wait: its output does not count once it reports
// progress.
func TestStallEndsAJobThatPrintsWithoutProgress(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p, n := stallPod(t, sh, printsForever)
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

// A job whose progress moves is never stalled, however long it runs.
func TestStallProgressHoldsTheJob(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p, _ := stallPod(t, sh, stallJob{output: `echo "step=$t total=5000" >> progress`})
		p.start()
		_, i := p.waitEvent(watchdog.KindJobStarted)
		// 60 fake seconds: twice the stall limit plus its snapshot wait.
		evs := p.waitTicks(i, 40)
		p.none(evs, 0, watchdog.KindSnapshotRequested)
		p.none(evs, 0, watchdog.KindDeleteReason)
	})
}

// With MIN_GPU_UTIL, a GPU at least that busy holds a job whose progress
// does not move; one less busy does not.
func TestStallGPUBusyHoldsTheJob(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		t.Run("busy", func(t *testing.T) {
			p, _ := stallPod(t, sh, printsForever)
			p.bin.Stub("nvidia-smi", `echo 3; echo 85`)
			p.setEnv("OVERBRAINER_MIN_GPU_UTIL", "50")
			p.start()
			_, i := p.waitEvent(watchdog.KindJobStarted)
			evs := p.waitTicks(i, 40)
			p.none(evs, 0, watchdog.KindSnapshotRequested)
			p.none(evs, 0, watchdog.KindDeleteReason)
		})
		t.Run("idle", func(t *testing.T) {
			p, _ := stallPod(t, sh, printsForever)
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
		p.start()
		_, i := p.waitEvent(watchdog.KindJobStarted)
		evs := p.waitTicks(i, 40)
		p.none(evs, 0, watchdog.KindSnapshotRequested)
		p.none(evs, 0, watchdog.KindDeleteReason)
	})
}
