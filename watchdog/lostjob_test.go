package watchdog_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A job of an earlier container (the pod's container restarted) whose
// job.pid names a live group of this one, an unrelated process, is read as
// ended at the first tick, because the bootstrap marked it cancelled with
// container_restarted; the abandoned rule counts from there and the group
// is never signalled.
func TestLostJobEndsAtOnce(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_RETRIEVE_GRACE", "2")
		p.startJob()
		p.write(watchdog.Cancelled, watchdog.CancelContainerRestarted+"\n")
		pgid := p.read(watchdog.JobPID)
		p.start()
		evs := p.deleted(watchdog.DeleteAbandoned)
		s := find(evs, -1, watchdog.KindStart)
		j := find(evs, -1, watchdog.KindJobStarted)
		e := find(evs, -1, watchdog.KindJobEnded, "by", "cancelled", "reason", watchdog.CancelContainerRestarted)
		d := find(evs, -1, watchdog.KindDeleteReason)
		if s < 0 || j < 0 || e < j || d < e {
			t.Fatalf("want start, job_started, job_ended by=cancelled reason=%s, then delete_reason\n%s",
				watchdog.CancelContainerRestarted, p.logText())
		}
		// Ended at the first tick: no pause in between.
		for k := j + 1; k < e; k++ {
			if evs[k].Kind == "test_tick" {
				t.Fatalf("the lost job was not ended at the first tick\n%s", p.logText())
			}
		}
		// The end counts from the tick's time, which the job_ended line,
		// stamped when written, may follow into the next second.
		if evs[d].Time.Unix() < evs[e].Time.Unix()+2-1 {
			t.Errorf("abandoned before the retrieve grace counted from the end\n%s", p.logText())
		}
		// The unrelated group lives on: the watchdog only ever tests it.
		n, err := strconv.Atoi(strings.TrimSpace(pgid))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(-n, 0); err != nil {
			t.Errorf("the group in job.pid is gone: %v", err)
		}
	})
}

// A cancelled marker without a word of [a-z_] ends the job without a
// reason field.
func TestCancelledWithoutReason(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{"empty": "", "not_a_word": "Restarted 12\n"} {
		t.Run(name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.setEnv("OVERBRAINER_RETRIEVE_GRACE", "1")
				p.startJob()
				p.write(watchdog.Cancelled, content)
				p.start()
				evs, i := p.waitEvent(watchdog.KindJobEnded, "by", "cancelled")
				if r, ok := evs[i].Fields["reason"]; ok {
					t.Errorf("reason=%q from %q", r, content)
				}
				p.deleted(watchdog.DeleteAbandoned)
			})
		})
	}
}

// A job that writes its exit code (or is cancelled) and goes right after the
// watchdog looked for those files, before it tested the group, ended by that
// file, not killed: the watchdog looks again once the group is gone. The
// group test itself plays the job here (a stub after the real group_signal),
// which makes the race deterministic.
func TestJobEndingDuringTheGroupTest(t *testing.T) {
	t.Parallel()
	for by, write := range map[string]string{
		"exit_code": `printf '0\n' > "$OVERBRAINER_RUN_DIR/exit_code.tmp" && mv -f "$OVERBRAINER_RUN_DIR/exit_code.tmp" "$OVERBRAINER_RUN_DIR/exit_code"`,
		"cancelled": `: > "$OVERBRAINER_RUN_DIR/cancelled"`,
	} {
		t.Run(by, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.setEnv("OVERBRAINER_RETRIEVE_GRACE", "1")
				// A number that names no group: without the second look,
				// the job would read as killed (group_gone).
				p.write(watchdog.JobPID, "4242\n")
				body, ok := strings.CutPrefix(watchdog.Script(), watchdog.GroupSignal())
				if !ok {
					t.Fatal("Script() does not start with GroupSignal()")
				}
				stub := `
group_signal() {
  [ "$1" = 0 ] && [ "$2" = 4242 ] || return 2
  printf '%s\n' "$(date +%s) test_group_signal" >> "$OVERBRAINER_RUN_DIR/.pod/watchdog.log"
  ` + write + `
  return 1
}
`
				p.proc = shtest.Start(t, sh, watchdog.GroupSignal()+stub+body, shtest.Opts{Dir: p.dir, Env: p.env, Bin: p.bin})
				evs, i := p.waitEvent(watchdog.KindJobEnded)
				if got := evs[i].Fields["by"]; got != by {
					t.Errorf("job_ended by=%s, want %s\n%s", got, by, p.logText())
				}
				if find(evs[:i], -1, "test_group_signal") < 0 {
					t.Errorf("the group was never tested: the race was not played\n%s", p.logText())
				}
				p.deleted(watchdog.DeleteAbandoned)
			})
		})
	}
}

// A lost job that the client starts again in its run directory (the
// start script's restart mode: the cancelled marker and job.pid replaced
// by the new job's) runs again for the watchdog: it logs `job_started
// again=1`, then the new job's end, and its rules act from that end.
func TestLostJobStartedAgain(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.startJob()
		p.write(watchdog.Cancelled, watchdog.CancelContainerRestarted+"\n")
		p.start()
		p.waitEvent(watchdog.KindJobEnded, "by", "cancelled", "reason", watchdog.CancelContainerRestarted)
		for _, name := range []string{watchdog.JobPID, watchdog.Cancelled} {
			if err := os.Remove(filepath.Join(p.dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		kill := p.startJob()
		_, again := p.waitEvent(watchdog.KindJobStarted, "again", "1")
		kill()
		evs, ended := p.waitEvent(watchdog.KindJobEnded, "by", "group_gone")
		if ended < again {
			t.Fatalf("the job started again ended before it started\n%s", p.logText())
		}
		p.none(evs, 0, watchdog.KindDeleteReason)
		p.write(watchdog.Retrieved, "")
		p.deleted(watchdog.DeleteRetrieved)
	})
}
