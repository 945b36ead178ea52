package bootstrap_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// staleSleep is the command line of the unrelated process group that the
// restart tests start in the new container.
const staleSleep = "sleep\x007777\x00"

// groupOf returns the process group, as the pod's PID namespace numbers it,
// of the pod's process whose command line is cmdline, or "" when there is
// none.
func (p *pod) groupOf(cmdline string) string {
	for _, pid := range p.nsProcs() {
		if readString(fmt.Sprintf("/proc/%d/cmdline", pid)) != cmdline {
			continue
		}
		for _, line := range strings.Split(readString(fmt.Sprintf("/proc/%d/status", pid)), "\n") {
			if v, ok := strings.CutPrefix(line, "NSpgid:"); ok {
				f := strings.Fields(v)
				if len(f) > 0 {
					return f[len(f)-1]
				}
			}
		}
	}
	return ""
}

// The pod's container restarted: the run directory on the volume still
// holds the old container's job.pid, without exit_code or cancelled, and in
// the new container that number names a live, unrelated process group. The
// bootstrap marks the job lost (cancelled: container_restarted) before sshd
// serves, so the watchdog reads it as ended at its first tick, never alive,
// and the abandoned rule counts from there.
func TestRestartMarksTheOldJobLost(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	for _, shell := range shtest.Names {
		t.Run(shell, func(t *testing.T) {
			argv := shellArgv(t, shell)
			t.Parallel()
			w := newWorld(t)
			env := w.env()
			// A grace of 4 s for a check of at least 2 between the two
			// log lines: the grace counts from the tick's clock reading,
			// which job_ended's stamp may trail by a second (it did in
			// CI), while a grace counted from an earlier end would hold
			// in the same tick.
			env["OVERBRAINER_RETRIEVE_GRACE"] = "4"
			env["OVERBRAINER_LEASE_TTL"] = "3600"
			// What the old container left: the claim, a lease a client
			// holds (so that the pod stays until the test looked), and the
			// job's job.pid, written in the new container's namespace by
			// the process group it names, a sleep of its own session.
			mkdir(t, filepath.Join(w.runDir, watchdog.PodDir))
			writeFile(t, filepath.Join(w.runDir, ".pod/claim"), w.host.line+"\n")
			lease := filepath.Join(w.runDir, watchdog.Lease)
			writeFile(t, lease, "")
			// The old watchdog's pid, which a wake would signal.
			writeFile(t, filepath.Join(w.runDir, watchdog.PID), "4243\n")
			// ssh-keygen runs after the claim and before sshd: it records
			// what the run directory holds then.
			seen := filepath.Join(t.TempDir(), "seen")
			env["OVERBRAINER_SSH_KEYGEN"] = w.bin.Stub("ssh-keygen-probe", fmt.Sprintf(
				"{ [ -e %[1]s ] && echo watchdog.pid; cat %[2]s; } >> %[3]s 2>&1\nexec ssh-keygen \"$@\"",
				shellQuote(filepath.Join(w.runDir, watchdog.PID)), shellQuote(filepath.Join(w.runDir, watchdog.Cancelled)), shellQuote(seen)))
			jobPID := filepath.Join(w.runDir, watchdog.JobPID)
			setup := []string{
				"setsid sleep 7777 </dev/null >/dev/null 2>&1 &",
				"echo $! > " + shellQuote(jobPID),
			}
			p := startPod(t, podSpec{shell: argv, env: env, workdir: w.workdir, setup: setup})

			var evs []watchdog.Event
			held := -1
			shtest.Eventually(t, bootTimeout, func() bool {
				b, _ := os.ReadFile(filepath.Join(w.runDir, watchdog.Log))
				evs, _ = watchdog.ParseLog(bytes.NewReader(b))
				held = index(evs, -1, watchdog.KindAbandonedHeld)
				return held >= 0 || p.exited()
			}, "no abandoned_held; output:\n%s", p.stderr)
			if p.exited() {
				t.Fatalf("the pod's command ended:\n%s\nlog:\n%s", p.stderr, readString(filepath.Join(w.runDir, watchdog.Log)))
			}
			// The number in job.pid names a live group of this container:
			// without the marker it would pass for the job.
			if got, want := p.groupOf(staleSleep), strings.TrimSpace(readString(jobPID)); got == "" || got != want {
				t.Fatalf("job.pid %q, the stale group is %q: the test did not set the trap", want, got)
			}
			if got := readString(filepath.Join(w.runDir, watchdog.Cancelled)); got != watchdog.CancelContainerRestarted+"\n" {
				t.Errorf("cancelled = %q, want %q", got, watchdog.CancelContainerRestarted+"\n")
			}
			if got, want := readString(seen), watchdog.CancelContainerRestarted+"\n"; got != want {
				t.Errorf("before sshd, the run directory showed %q, want only the cancelled marker (%q)", got, want)
			}
			out := p.stderr.String()
			lost, sshd := strings.Index(out, "job lost:"), strings.Index(out, "sshd listening")
			if lost < 0 || sshd < lost || !strings.Contains(out, "resuming the run") {
				t.Errorf("the bootstrap did not say, before sshd served, that the job was lost:\n%s", out)
			}

			start := index(evs, -1, watchdog.KindStart)
			started := index(evs, start, watchdog.KindJobStarted)
			ended := index(evs, started, watchdog.KindJobEnded)
			if start < 0 || started < 0 || ended < 0 || ended > held {
				t.Fatalf("want start, job_started, job_ended, abandoned_held:\n%s", readString(filepath.Join(w.runDir, watchdog.Log)))
			}
			if f := evs[ended].Fields; f["by"] != "cancelled" || f["reason"] != watchdog.CancelContainerRestarted {
				t.Errorf("job_ended %v, want by=cancelled reason=%s", f, watchdog.CancelContainerRestarted)
			}
			if evs[held].Time.Unix() < evs[ended].Time.Unix()+2 {
				t.Errorf("the retrieve grace did not count from the end seen by this container's watchdog:\n%s",
					readString(filepath.Join(w.runDir, watchdog.Log)))
			}

			// The client lets go: the pod goes as abandoned.
			old := time.Now().Add(-3 * time.Hour)
			if err := os.Chtimes(lease, old, old); err != nil {
				t.Fatal(err)
			}
			p.waitExit(bootTimeout)
			b, _ := os.ReadFile(filepath.Join(w.runDir, watchdog.Log))
			evs, _ = watchdog.ParseLog(bytes.NewReader(b))
			if d := index(evs, held, watchdog.KindDeleteReason); d < 0 || evs[d].Fields["reason"] != string(watchdog.DeleteAbandoned) {
				t.Errorf("no delete_reason reason=abandoned after the hold:\n%s", b)
			}
			if n := apiCount(w.api, "DELETE", "/pods/"+w.podID, w.apiKey); n != 1 {
				t.Errorf("%d DELETEs, want 1", n)
			}
		})
	}
}

// A job of the old container that wrote its exit code ended by itself: the
// bootstrap leaves it alone, and so it does a job already cancelled.
func TestRestartLeavesAnEndedJobAlone(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	for name, file := range map[string]string{"exit_code": watchdog.ExitCode, "cancelled": watchdog.Cancelled} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			env := w.env()
			mkdir(t, filepath.Join(w.runDir, watchdog.PodDir))
			writeFile(t, filepath.Join(w.runDir, ".pod/claim"), w.host.line+"\n")
			writeFile(t, filepath.Join(w.runDir, watchdog.JobPID), "4242\n")
			writeFile(t, filepath.Join(w.runDir, file), "3\n")
			p := startPod(t, podSpec{shell: []string{"bash"}, env: env, workdir: w.workdir})
			w.ready(p, func() string { return w.runDir })
			if got := readString(filepath.Join(w.runDir, file)); got != "3\n" {
				t.Errorf("%s = %q, want it untouched", file, got)
			}
			if name == "exit_code" {
				if _, err := os.Stat(filepath.Join(w.runDir, watchdog.Cancelled)); !os.IsNotExist(err) {
					t.Errorf("a job with an exit code was marked cancelled (%v)", err)
				}
			}
			if strings.Contains(p.stderr.String(), "job lost") {
				t.Errorf("an ended job was reported lost:\n%s", p.stderr)
			}
		})
	}
}

// index returns the index of the first event of kind after index from, or
// -1.
func index(evs []watchdog.Event, from int, kind string) int {
	for i := from + 1; i < len(evs); i++ {
		if evs[i].Kind == kind {
			return i
		}
	}
	return -1
}
