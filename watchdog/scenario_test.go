package watchdog_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Every test here runs the shipped script (watchdog.Script) under each shell
// against a real curl and the fake API, and reads what it did from the fake's
// request log and from watchdog.log.

func TestProbeReady(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.start()
		if v := p.verdict(); v != "ready" {
			t.Fatalf("verdict %q, want ready", v)
		}
		reqs := p.api.Requests()
		if len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].Path != "/pods/"+podID {
			t.Fatalf("requests %+v, want one GET /pods/%s", reqs, podID)
		}
		if reqs[0].Auth != "Bearer "+apiKey {
			t.Errorf("Authorization %q", reqs[0].Auth)
		}
		if ua := reqs[0].Header.Get("User-Agent"); !strings.HasPrefix(ua, "overbrainer-watchdog/") {
			t.Errorf("User-Agent %q", ua)
		}
		// The verdict stays ready; the log says the delete right is unproven.
		evs, i := p.waitEvent(watchdog.KindProbe, "result", "ready")
		if r := evs[i].DeleteRight(); r != watchdog.UnprovenDeleteRight {
			t.Errorf("probe delete_right %q, want %q", r, watchdog.UnprovenDeleteRight)
		}
		// The verdict replaces its temporary file.
		if _, err := os.Stat(filepath.Join(p.dir, ".pod/watchdog.tmp")); err == nil {
			t.Error(".pod/watchdog.tmp left behind")
		}
	})
}

// Transient answers (no answer, 408, 429, 5xx) are retried up to PROBE_TRIES.
func TestProbeRetriesTransientAnswers(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_PROBE_TRIES", "5")
		p.api.Queue("GET", "/pods/"+podID,
			shtest.Answer{Status: 503}, shtest.Answer{Status: 408}, shtest.Answer{Status: 429}, shtest.Answer{Drop: true})
		p.start()
		if v := p.verdict(); v != "ready" {
			t.Fatalf("verdict %q, want ready", v)
		}
		if n := p.api.Count("GET", "/pods/"+podID); n != 5 {
			t.Errorf("%d probes, want 5", n)
		}
	})
}

func TestProbeFailedVerdicts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		setup  func(p *pod)
		want   string
		probes int
	}{
		{"http_401", func(p *pod) { p.api.SetDefault("GET", "", shtest.Answer{Status: 401}) }, "failed http_401", 1},
		{"http_404", func(p *pod) { p.api.SetDefault("GET", "", shtest.Answer{Status: 404}) }, "failed http_404", 1},
		{"http_503", func(p *pod) { p.api.SetDefault("GET", "", shtest.Answer{Status: 503}) }, "failed http_503", 3},
		{"unreachable", func(p *pod) { p.api.SetDefault("GET", "", shtest.Answer{Drop: true}) }, "failed unreachable", 3},
		{"missing_key", func(p *pod) { p.setEnv("RUNPOD_API_KEY", "") }, "failed missing_key", 0},
		{"missing_pod_id", func(p *pod) { p.setEnv("RUNPOD_POD_ID", "") }, "failed missing_key", 0},
		{"no_curl", func(p *pod) { p.setEnv("PATH", pathWithout(p.t, p.bin.Dir, "curl")) }, "failed no_curl", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				c.setup(p)
				p.start()
				if v := p.verdict(); v != c.want {
					t.Fatalf("verdict %q, want %q\nlog:\n%s", v, c.want, p.logText())
				}
				if n := p.api.Count("GET", ""); n != c.probes {
					t.Errorf("%d probes, want %d", n, c.probes)
				}
				p.waitEvent(watchdog.KindProbe, "result", "failed", "reason", strings.TrimPrefix(c.want, "failed "))
			})
		})
	}
}

// pathWithout builds a PATH of first, then a directory linking every command
// the watchdog may run except the one left out.
func pathWithout(t *testing.T, first, without string) string {
	dir := t.TempDir()
	for _, c := range []string{"date", "stat", "mv", "rm", "mkdir", "timeout", "du", "cat", "sleep", "printf", "echo", "kill", "test", "["} {
		if c == without {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			if err := os.Symlink(p, filepath.Join(dir, c)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return first + ":" + dir
}

// A failed bootstrap: the verdict says so and the pod is deleted at once,
// kept and with a job recorded or not.
func TestBootstrapFailed(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_BOOT_FAILED", "1", "OVERBRAINER_KEEP_POD", "1", "OVERBRAINER_INTERVAL", "3600")
		p.write(watchdog.BootstrapFailed, "claim belongs to run r-other\nsecond line\n")
		p.startJob()
		p.start()
		if v := p.verdict(); v != "failed bootstrap: claim belongs to run r-other" {
			t.Errorf("verdict %q", v)
		}
		evs := p.deleted(watchdog.DeleteBootstrapFailed)
		p.none(evs, 0, "test_tick")
		if i := find(evs, -1, watchdog.KindProbe, "result", "failed", "reason", "bootstrap", "key", "ready"); i < 0 {
			t.Errorf("no probe event for the failed bootstrap\n%s", p.logText())
		}
	})
}

func TestNeverStarted(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_BOOT_GRACE", "2")
		p.start()
		p.deleted(watchdog.DeleteNeverStarted)
	})
}

// Keep mode guards nothing before the job exists.
func TestKeepBeforeJobStarted(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_KEEP_POD", "1", "OVERBRAINER_BOOT_GRACE", "2")
		p.start()
		p.deleted(watchdog.DeleteNeverStarted)
	})
}

// Once job.pid exists, keep mode holds off every rule (cost cap and deadline
// passed, stale lease, job ended, results retrieved), but a full disk still
// asks for a snapshot.
func TestKeepAfterJobStarted(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := now()
		p.setEnv("OVERBRAINER_KEEP_POD", "1", "OVERBRAINER_BOOT_GRACE", "1", "OVERBRAINER_RETRIEVE_GRACE", "1",
			"OVERBRAINER_DEADLINE", itoa(n-100))
		p.write(watchdog.CostCapAt, itoa(n-10))
		p.write(watchdog.SnapshotAt, itoa(n-20))
		p.startJob()
		p.start()
		p.waitEvent(watchdog.KindJobStarted)
		p.write(watchdog.ExitCode, "0\n")
		p.write(watchdog.Retrieved, "")
		_, i := p.waitEvent(watchdog.KindRetrieved)
		evs := p.waitTicks(i, 3)
		p.none(evs, 0, watchdog.KindDeleteReason)
		p.none(evs, 0, watchdog.KindSnapshotRequested)
		if p.api.Count("DELETE", "") != 0 || p.api.Count("POST", "") != 0 {
			t.Fatalf("kept pod deleted: %+v", p.api.Requests())
		}
	})
}

func TestKeepStillRequestsDiskSnapshot(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_KEEP_POD", "1")
		p.startJob()
		p.setDisk(98, 2)
		p.start()
		p.waitEvent(watchdog.KindSnapshotRequested, "reason", "disk", "adopted", "0")
		if got := p.read(watchdog.SnapshotRequest); got != "disk\n" {
			t.Errorf("snapshot.request %q", got)
		}
	})
}

// The cost cap deletes the pod even while the client's lease is fresh, after
// asking for a snapshot SNAPSHOT_LEAD before it.
func TestCostCapWhateverTheLease(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := p.fakeClock(fakeT0).Now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n+3600), "OVERBRAINER_SNAPSHOT_LEAD", "1")
		p.lease(n)
		p.write(watchdog.CostCapAt, itoa(n+2))
		p.startJob()
		p.start()
		evs := p.deleted(watchdog.DeleteCostCap)
		if find(evs, -1, watchdog.KindSnapshotRequested, "reason", "cost") < 0 {
			t.Errorf("no cost snapshot before the cap\n%s", p.logText())
		}
	})
}

func TestDeadlineWithStaleLease(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n+1))
		p.lease(n - 2000)
		p.start()
		p.deleted(watchdog.DeleteDeadline)
	})
}

// A fresh lease holds the deadline off until it is LEASE_TTL old.
func TestDeadlineHeldByFreshLease(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := p.fakeClock(fakeT0).Now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n-5), "OVERBRAINER_LEASE_TTL", "3")
		p.lease(n)
		p.start()
		evs := p.deleted(watchdog.DeleteDeadline)
		h := find(evs, -1, watchdog.KindDeadlineHeld, "until", itoa(n+3))
		d := find(evs, -1, watchdog.KindDeleteReason)
		if h < 0 || h > d {
			t.Fatalf("no deadline_held until=%d before the delete\n%s", n+3, p.logText())
		}
		if evs[d].Time.Unix() < n+3 {
			t.Errorf("deleted at %d, before the lease went stale at %d", evs[d].Time.Unix(), n+3)
		}
	})
}

// A lease touched in the future does not count as fresh: the pod's clock went
// back, or the mtime is bogus.
func TestLeaseInTheFutureIsStale(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n-5), "OVERBRAINER_LEASE_TTL", "900")
		p.lease(n + 100000)
		p.start()
		evs := p.deleted(watchdog.DeleteDeadline)
		p.none(evs, 0, watchdog.KindDeadlineHeld)
	})
}

// snapshot_at asks for a cost snapshot and logs the minutes left to the cap.
func TestSnapshotAt(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := p.fakeClock(fakeT0).Now()
		p.setEnv("OVERBRAINER_SNAPSHOT_LEAD", "60")
		p.write(watchdog.SnapshotAt, itoa(n+1)+"\n")
		p.write(watchdog.CostCapAt, itoa(n+7200)+"\n")
		p.startJob()
		p.start()
		evs, i := p.waitEvent(watchdog.KindSnapshotRequested, "reason", "cost", "adopted", "0")
		if got := evs[i].Fields["cap_in_min"]; got != "120" {
			t.Errorf("cap_in_min=%s, want 120", got)
		}
		if evs[i].Time.Unix() < n+1 {
			t.Errorf("requested at %d, before snapshot_at %d", evs[i].Time.Unix(), n+1)
		}
		if got := p.read(watchdog.SnapshotRequest); got != "cost\n" {
			t.Errorf("snapshot.request %q, want cost", got)
		}
	})
}

// When the cost cap minus SNAPSHOT_LEAD comes before snapshot_at, the cost
// snapshot is asked for then.
func TestCostSnapshotLeadBeforeCap(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := p.fakeClock(fakeT0).Now()
		p.setEnv("OVERBRAINER_SNAPSHOT_LEAD", "600")
		p.write(watchdog.SnapshotAt, itoa(n+5000))
		p.write(watchdog.CostCapAt, itoa(n+602))
		p.startJob()
		p.start()
		evs, i := p.waitEvent(watchdog.KindSnapshotRequested, "reason", "cost")
		if got := evs[i].Fields["cap_in_min"]; got != "10" {
			t.Errorf("cap_in_min=%s, want 10", got)
		}
	})
}

// SNAPSHOT_LEAD before the deadline, the job is asked for a snapshot, but only
// once the lease is stale.
func TestDeadlineSnapshotWhileLeaseStale(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n+600), "OVERBRAINER_SNAPSHOT_LEAD", "900", "OVERBRAINER_LEASE_TTL", "3")
		p.lease(n)
		p.startJob()
		p.start()
		evs, i := p.waitEvent(watchdog.KindSnapshotRequested, "reason", "deadline")
		if evs[i].Time.Unix() < n+3 {
			t.Errorf("requested at %d while the lease was fresh (until %d)", evs[i].Time.Unix(), n+3)
		}
		if got := p.read(watchdog.SnapshotRequest); got != "deadline\n" {
			t.Errorf("snapshot.request %q", got)
		}
	})
}

// df of the run directory at DISK_ACT (97) percent asks for a snapshot; 96
// percent does not.
func TestDiskFullDf(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setDisk(96, 4)
		p.startJob()
		p.start()
		_, i := p.waitEvent(watchdog.KindJobStarted)
		evs := p.waitTicks(i, 2)
		p.none(evs, 0, watchdog.KindSnapshotRequested)
		p.setDisk(97, 3)
		p.waitEvent(watchdog.KindSnapshotRequested, "reason", "disk", "adopted", "0")
		if got := p.read(watchdog.SnapshotRequest); got != "disk\n" {
			t.Errorf("snapshot.request %q", got)
		}
	})
}

// On a network volume, the background du is weighed against VOLUME_USABLE
// percent of .pod/volume_gb (the client's, after a grow), or of
// OVERBRAINER_VOLUME_GB without it: here 900000 KiB is full for the env's
// 1 GB but not for the file's 2, and 1800000 KiB is for 2; so is 900000 KiB
// for the env's 1 GB when no file says otherwise.
func TestDiskFullVolume(t *testing.T) {
	t.Parallel()
	for _, file := range []bool{true, false} {
		t.Run(map[bool]string{true: "volume_gb", false: "env"}[file], func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				diskFullVolume(t, sh, file)
			})
		})
	}
}

func diskFullVolume(t *testing.T, sh shtest.Shell, file bool) {
	p := newPod(t, sh)
	vol := t.TempDir()
	calls := filepath.Join(p.bin.Dir, ".du-calls")
	used := filepath.Join(p.bin.Dir, ".du-used")
	writeAtomic(t, used, "900000\n")
	// 1 GB * 94% = 917968 KiB usable; 97% of it is 890429 KiB.
	du := p.bin.Stub("du", `echo "$*" >> `+calls+`; read -r kib < `+used+`; printf '%s\t%s\n' "$kib" "$3"`)
	p.setEnv("OVERBRAINER_VOLUME_DIR", vol, "OVERBRAINER_VOLUME_GB", "1", "OVERBRAINER_DU", du)
	if file {
		p.write(watchdog.VolumeGB, "2\n")
	}
	p.startJob()
	p.start()
	shtest.WaitFile(t, filepath.Join(p.dir, watchdog.Du), wait)
	if got := strings.Fields(p.read(watchdog.Du)); len(got) == 0 || got[0] != "900000" {
		t.Errorf(".pod/du = %q", got)
	}
	if file {
		_, i := p.waitEvent(watchdog.KindJobStarted)
		evs := p.waitTicks(i, 3)
		p.none(evs, 0, watchdog.KindSnapshotRequested)
		writeAtomic(t, used, "1800000\n")
	}
	p.waitEvent(watchdog.KindSnapshotRequested, "reason", "disk")
	b, _ := os.ReadFile(calls)
	if first := strings.SplitN(string(b), "\n", 2)[0]; first != "-sk -- "+vol {
		t.Errorf("du called as %q", first)
	}
}

// A du that hangs never delays the cost cap, and no second du starts while
// the first still runs.
func TestHungDuNeverBlocksCostCap(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		calls := filepath.Join(p.bin.Dir, ".du-calls")
		realSleep, _ := exec.LookPath("sleep")
		du := p.bin.Stub("du", `echo "$*" >> `+calls+`; exec `+realSleep+` 1000`)
		p.setEnv("OVERBRAINER_VOLUME_DIR", t.TempDir(), "OVERBRAINER_VOLUME_GB", "1", "OVERBRAINER_DU", du,
			"OVERBRAINER_SNAPSHOT_LEAD", "0")
		p.startJob()
		p.start()
		// The cap falls due once du hangs, not at a time a busy machine
		// may reach before the first du.
		shtest.WaitFile(t, calls, wait)
		_, i := p.waitEvent(watchdog.KindJobStarted)
		p.waitTicks(i, 2)
		p.write(watchdog.CostCapAt, itoa(now()))
		p.deleted(watchdog.DeleteCostCap)
		b, _ := os.ReadFile(calls)
		if n := strings.Count(string(b), "\n"); n != 1 {
			t.Errorf("du started %d times, want 1 (one at a time)", n)
		}
	})
}

// A snapshot.request already there (the client's stop) is adopted, never
// overwritten.
func TestSnapshotRequestAdopted(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.write(watchdog.SnapshotRequest, "stop\n")
		p.write(watchdog.SnapshotAt, itoa(now()))
		p.startJob()
		p.start()
		p.waitEvent(watchdog.KindSnapshotRequested, "reason", "cost", "adopted", "1")
		if got := p.read(watchdog.SnapshotRequest); got != "stop\n" {
			t.Errorf("snapshot.request %q, want the client's stop", got)
		}
	})
}

// deadline_due (a): after the watchdog asked for a snapshot, the deadline
// waits SNAPSHOT_WAIT for the job to stop.
func TestDeadlineWaitsForSnapshot(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		deadlineWaitsForSnapshot(t, newPod(t, sh))
	})
}

// The snapshot wait counts from the moment the request is there for the
// job, not from the start of the tick that made it: on a busy pod the
// write may come seconds after the tick read its clock (here an mv of 3 s),
// and the job must still get its whole SNAPSHOT_WAIT.
func TestSnapshotWaitCountsFromTheRequest(t *testing.T) {
	t.Parallel()
	realMv, err := exec.LookPath("mv")
	if err != nil {
		t.Fatal(err)
	}
	realSleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.bin.Stub("mv", fmt.Sprintf(`case $* in *snapshot.request) %q 3 ;; esac
exec %q "$@"`, realSleep, realMv))
		deadlineWaitsForSnapshot(t, p)
	})
}

// deadlineWaitsForSnapshot runs p to a deadline with a SNAPSHOT_WAIT of
// 4 s and checks that the delete came that long after the snapshot
// request's log line, which is written once the request is there.
func deadlineWaitsForSnapshot(t *testing.T, p *pod) {
	t.Helper()
	n := now()
	p.setEnv("OVERBRAINER_DEADLINE", itoa(n+1), "OVERBRAINER_SNAPSHOT_LEAD", "60", "OVERBRAINER_SNAPSHOT_WAIT", "4")
	p.startJob()
	p.start()
	evs := p.deleted(watchdog.DeleteDeadline)
	r := find(evs, -1, watchdog.KindSnapshotRequested, "reason", "deadline")
	d := find(evs, -1, watchdog.KindDeleteReason)
	if r < 0 {
		t.Fatalf("no deadline snapshot\n%s", p.logText())
	}
	// Whole seconds on both lines: a wait of 4 s shows as 3 at least.
	if gap := evs[d].Time.Sub(evs[r].Time).Seconds(); gap < 3 {
		t.Errorf("deleted %vs after the snapshot request was written, want SNAPSHOT_WAIT (4s)\n%s", gap, p.logText())
	}
}

// deadline_due (b): once a snapshot ended the job, the deadline gives way to
// the retrieve grace, so the client can still collect the snapshot.
func TestDeadlineGivesWayToRetrieveGrace(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n+1), "OVERBRAINER_SNAPSHOT_LEAD", "60",
			"OVERBRAINER_SNAPSHOT_WAIT", "600", "OVERBRAINER_RETRIEVE_GRACE", "600")
		p.startJob()
		p.start()
		p.waitEvent(watchdog.KindSnapshotRequested, "reason", "deadline")
		p.write(watchdog.ExitCode, "0\n")
		_, i := p.waitEvent(watchdog.KindJobEnded, "by", "exit_code")
		evs := p.waitTicks(i, 2)
		p.none(evs, 0, watchdog.KindDeleteReason)
		p.write(watchdog.Retrieved, "")
		p.deleted(watchdog.DeleteRetrieved)
	})
}

// ... but no longer than RETRIEVE_GRACE after the deadline itself.
func TestDeadlineRetrieveGraceCappedAtDeadline(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		n := now()
		p.setEnv("OVERBRAINER_DEADLINE", itoa(n-100), "OVERBRAINER_SNAPSHOT_WAIT", "600", "OVERBRAINER_RETRIEVE_GRACE", "90")
		p.startJob()
		p.start()
		p.waitEvent(watchdog.KindSnapshotRequested, "reason", "deadline")
		p.write(watchdog.ExitCode, "0\n")
		evs := p.deleted(watchdog.DeleteDeadline)
		e := find(evs, -1, watchdog.KindJobEnded)
		d := find(evs, -1, watchdog.KindDeleteReason)
		if e < 0 || d < e {
			t.Fatalf("job_ended missing or after the delete\n%s", p.logText())
		}
		p.none(evs[:d], e, "test_tick")
	})
}

func TestRetrieved(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.startJob()
		p.start()
		p.waitEvent(watchdog.KindJobStarted)
		p.write(watchdog.Retrieved, "")
		p.deleted(watchdog.DeleteRetrieved)
	})
}

// An ended job whose results nobody retrieved within the retrieve grace, and
// whose lease nobody holds, is abandoned at the grace: no lease at all, a
// stale one, or one touched so far in the future (a bogus mtime, a clock
// stepped back) that it never counts as fresh.
func TestAbandoned(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		lease func(p *pod)
	}{
		{"no_lease", nil},
		{"stale_lease", func(p *pod) { p.lease(now() - 2000) }},
		{"lease_in_the_future", func(p *pod) { p.lease(now() + 100000) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.setEnv("OVERBRAINER_RETRIEVE_GRACE", "2", "OVERBRAINER_LEASE_TTL", "900")
				if c.lease != nil {
					c.lease(p)
				}
				p.startJob()
				p.write(watchdog.ExitCode, "1\n")
				p.start()
				evs := p.deleted(watchdog.DeleteAbandoned)
				e := find(evs, -1, watchdog.KindJobEnded, "by", "exit_code")
				d := find(evs, -1, watchdog.KindDeleteReason)
				if e < 0 || evs[d].Time.Unix() < evs[e].Time.Unix()+1 {
					t.Errorf("abandoned before the retrieve grace\n%s", p.logText())
				}
				p.none(evs, 0, watchdog.KindAbandonedHeld)
			})
		})
	}
}

// A client that keeps the lease fresh (as the launcher does while it
// downloads the results) holds the abandoned rule off past the retrieve
// grace; once the lease goes stale, the pod is deleted as abandoned.
func TestAbandonedHeldByFreshLease(t *testing.T) {
	t.Parallel()
	const ttl = 5
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_RETRIEVE_GRACE", "1", "OVERBRAINER_LEASE_TTL", itoa(ttl))
		p.startJob()
		p.write(watchdog.ExitCode, "0\n")
		lease := filepath.Join(p.dir, watchdog.Lease)
		p.lease(now())
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case <-stop:
					return
				case <-time.After(250 * time.Millisecond):
				}
				tm := time.Now()
				_ = os.Chtimes(lease, tm, tm)
			}
		}()
		defer func() {
			select {
			case <-stopped:
			default:
				close(stop)
				<-stopped
			}
		}()
		p.start()
		_, h := p.waitEvent(watchdog.KindAbandonedHeld)
		// Ticks go on (one a second) while the client holds the lease.
		evs := p.waitTicks(h, 4)
		p.none(evs, 0, watchdog.KindDeleteReason)
		close(stop)
		<-stopped
		fi, err := os.Stat(lease)
		if err != nil {
			t.Fatal(err)
		}
		staleAt := fi.ModTime().Unix() + ttl
		evs = p.deleted(watchdog.DeleteAbandoned)
		e := find(evs, -1, watchdog.KindJobEnded)
		h = find(evs, -1, watchdog.KindAbandonedHeld)
		d := find(evs, -1, watchdog.KindDeleteReason)
		if e < 0 || h < e || evs[h].Time.Unix() < evs[e].Time.Unix()+1 {
			t.Errorf("abandoned_held not after the retrieve grace\n%s", p.logText())
		}
		if until, err := strconv.ParseInt(evs[h].Fields["until"], 10, 64); err != nil || until > staleAt {
			t.Errorf("abandoned_held until=%q, want a time up to %d", evs[h].Fields["until"], staleAt)
		}
		if got := evs[d].Time.Unix(); got < staleAt {
			t.Errorf("deleted at %d, before the lease went stale at %d\n%s", got, staleAt, p.logText())
		}
		if n := strings.Count(p.logText(), " abandoned_held "); n != 1 {
			t.Errorf("%d abandoned_held lines, want 1 (when the hold starts)", n)
		}
	})
}

// The cost cap deletes the pod at once, even while a fresh lease holds the
// abandoned rule off.
func TestCostCapWhileAbandonedHeld(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_RETRIEVE_GRACE", "1", "OVERBRAINER_LEASE_TTL", "3600")
		p.lease(now())
		p.startJob()
		p.write(watchdog.ExitCode, "0\n")
		p.start()
		_, h := p.waitEvent(watchdog.KindAbandonedHeld)
		p.waitTicks(h, 1)
		p.write(watchdog.CostCapAt, itoa(now()))
		evs := p.deleted(watchdog.DeleteCostCap)
		if find(evs, -1, watchdog.KindAbandonedHeld) < 0 {
			t.Errorf("no abandoned_held before the cost cap\n%s", p.logText())
		}
	})
}

// The end of a job is seen from exit_code, cancelled, or its process group
// being gone.
func TestJobEnded(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"exit_code", "cancelled", "group_gone"} {
		t.Run(by, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.setEnv("OVERBRAINER_RETRIEVE_GRACE", "1")
				kill := p.startJob()
				p.start()
				_, i := p.waitEvent(watchdog.KindJobStarted)
				evs := p.waitTicks(i, 1)
				p.none(evs, 0, watchdog.KindJobEnded)
				switch by {
				case "exit_code":
					p.write(watchdog.ExitCode, "0\n")
				case "cancelled":
					p.write(watchdog.Cancelled, "")
				case "group_gone":
					kill()
				}
				p.waitEvent(watchdog.KindJobEnded, "by", by)
				p.deleted(watchdog.DeleteAbandoned)
			})
		})
	}
}

// DELETE, then the terminate action, then the stop action (which leaves the
// volume billing, and says so), then runpodctl; each counts once a GET shows
// the pod gone (404 or TERMINATED), or EXITED after the stop.
type call struct{ method, body string }

func TestDeleteFallbacks(t *testing.T) {
	t.Parallel()
	del := call{"DELETE", ""}
	term := call{"POST", `{"action":"terminate"}`}
	stop := call{"POST", `{"action":"stop"}`}
	terminated := shtest.Answer{Body: `{"id":"` + podID + `","name":"x","status":"TERMINATED","env":{"A":"B"}}`}
	cases := []struct {
		name      string
		delete    int
		actions   []int
		get       []shtest.Answer // queued GETs after the probe's
		runpodctl bool            // a runpodctl that works
		want      []call          // the calls but GETs
		final     string          // deleted method or "stopped"
	}{
		{"delete_204_get_404", 204, nil, nil, false, []call{del}, "delete"},
		{"delete_204_get_terminated", 204, nil, []shtest.Answer{terminated}, false, []call{del}, "delete"},
		// A pod that takes a moment to show deleted.
		{"delete_204_get_running_then_404", 204, nil, []shtest.Answer{{Body: `{"status": "RUNNING"}`}}, false, []call{del}, "delete"},
		{"terminate", 500, []int{204}, nil, false, []call{del, term}, "terminate"},
		{"stop", 500, []int{500, 200}, nil, false, []call{del, term, stop}, "stopped"},
		{"runpodctl", 500, []int{500, 503}, nil, true, []call{del, term, stop}, "runpodctl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.setEnv("OVERBRAINER_BOOT_GRACE", "1")
				p.api.Queue("DELETE", "/pods/"+podID, shtest.Answer{Status: c.delete})
				for _, s := range c.actions {
					p.api.Queue("POST", "/pods/"+podID+"/action", shtest.Answer{Status: s})
				}
				p.api.Queue("GET", "/pods/"+podID, append([]shtest.Answer{{}}, c.get...)...)
				ran := filepath.Join(p.bin.Dir, ".runpodctl-ran")
				if c.runpodctl {
					p.bin.Stub("runpodctl", `: > `+ran)
					p.api.Handle(func(r shtest.Request) (shtest.Answer, bool) {
						if _, err := os.Stat(ran); err == nil && r.Method == "GET" {
							return shtest.Answer{Status: 404}, true
						}
						return shtest.Answer{}, false
					})
				}
				p.start()
				p.exit()
				var got []call
				reqs := p.api.Requests()
				for _, r := range reqs[1:] {
					if r.Method != "GET" {
						got = append(got, call{r.Method, r.Body})
					}
					if r.Method == "POST" && r.Header.Get("Content-Type") != "application/json" {
						t.Errorf("POST Content-Type %q", r.Header.Get("Content-Type"))
					}
				}
				if strings.Join(fmtCalls(got), "|") != strings.Join(fmtCalls(c.want), "|") {
					t.Fatalf("calls %v, want %v", got, c.want)
				}
				if last := reqs[len(reqs)-1]; last.Method != "GET" || last.Path != "/pods/"+podID {
					t.Errorf("last call %s %s, want the GET that confirms", last.Method, last.Path)
				}
				evs := p.events()
				if c.final == "stopped" {
					if i := find(evs, -1, watchdog.KindStopped, "method", "stop"); i < 0 || !strings.Contains(evs[i].Fields["msg"], "billing") {
						t.Errorf("no stopped event saying the volume bills\n%s", p.logText())
					}
					p.none(evs, 0, watchdog.KindDeleted)
				} else if find(evs, -1, watchdog.KindDeleted, "method", c.final) < 0 {
					t.Errorf("no deleted method=%s\n%s", c.final, p.logText())
				}
				p.none(evs, 0, watchdog.KindDeleteFailed)
			})
		})
	}
}

// A delete that no GET confirms never ends the watchdog: a DELETE answered
// 404 while GET still shows the pod RUNNING (the API's 404 is also "not
// accessible to the caller"), every write refused (403), or a runpodctl
// that says it worked. Each tick tries every way again and logs
// delete_failed with what each answered.
func TestUnconfirmedDeleteKeepsTrying(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		delete    int
		runpodctl bool
		codes     string
	}{
		{"delete_404_get_running", 404, false, "DELETE:404/unconfirmed,terminate:403,stop:403,runpodctl:absent"},
		{"forbidden", 403, false, "DELETE:403,terminate:403,stop:403,runpodctl:absent"},
		{"runpodctl_says_deleted", 403, true, "DELETE:403,terminate:403,stop:403,runpodctl:0/unconfirmed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.setEnv("OVERBRAINER_BOOT_GRACE", "1")
				p.api.SetDefault("GET", "", shtest.Answer{Body: `{"id":"` + podID + `","status":"RUNNING","env":{}}`})
				p.api.SetDefault("DELETE", "", shtest.Answer{Status: c.delete})
				p.api.SetDefault("POST", "", shtest.Answer{Status: 403})
				rec := filepath.Join(p.bin.Dir, ".runpodctl")
				if c.runpodctl {
					p.bin.Stub("runpodctl", `{ echo "argv $*"; env; } >> `+rec)
				}
				p.start()
				var evs []watchdog.Event
				shtest.Eventually(t, wait, func() bool {
					evs = p.events()
					n := 0
					for _, e := range evs {
						if e.Kind == watchdog.KindDeleteFailed {
							n++
						}
					}
					return n >= 3 || p.proc.Exited()
				}, "three delete_failed lines")
				if p.proc.Exited() {
					t.Fatalf("the watchdog exited on an unconfirmed delete\n%s", p.logText())
				}
				p.none(evs, 0, watchdog.KindDeleted)
				p.none(evs, 0, watchdog.KindStopped)
				// Every try ends in its delete_failed, with the codes.
				tries, fails := 0, 0
				for _, e := range evs {
					switch e.Kind {
					case watchdog.KindDeleteReason:
						if tries != fails {
							t.Fatalf("a try without its delete_failed\n%s", p.logText())
						}
						tries++
					case watchdog.KindDeleteFailed:
						fails++
						if e.Fields["codes"] != c.codes {
							t.Errorf("codes=%s, want %s", e.Fields["codes"], c.codes)
						}
					}
				}
				if c.delete == 404 && find(evs, -1, watchdog.KindDeleteCheck, "method", "DELETE", "code", "200", "status", "RUNNING") < 0 {
					t.Errorf("no delete_check showing the pod RUNNING\n%s", p.logText())
				}
				if !c.runpodctl {
					return
				}
				b, _ := os.ReadFile(rec)
				env := string(b)
				for _, want := range []string{"argv pod delete " + podID + "\n", "RUNPOD_API_KEY=" + apiKey + "\n",
					"RUNPOD_API_URL=" + p.api.URL() + "\n", "RUNPOD_REST_V2_URL=" + p.api.URL() + "\n",
					"RUNPOD_GRAPHQL_URL=" + p.api.URL() + "/graphql\n", "APIURL=" + p.api.URL() + "/graphql\n"} {
					if !strings.Contains(env, want) {
						t.Errorf("runpodctl ran without %q:\n%s", want, env)
					}
				}
				if strings.Contains(env, "argv remove") {
					t.Errorf("runpodctl remove (GraphQL) was run:\n%s", env)
				}
			})
		})
	}
}

// runpodctl is skipped, and says why, when the pod's API URL is not one it
// could be pointed at: it would call Runpod's own hosts instead.
func TestRunpodctlSkippedWithoutHTTPAPI(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		// curl takes a URL without a scheme for http; runpodctl must not.
		p.setEnv("OVERBRAINER_BOOT_GRACE", "1", "OVERBRAINER_API_URL", strings.TrimPrefix(p.api.URL(), "http://"))
		p.api.SetDefault("DELETE", "", shtest.Answer{Status: 500})
		p.api.SetDefault("POST", "", shtest.Answer{Status: 500})
		rec := filepath.Join(p.bin.Dir, ".runpodctl")
		p.bin.Stub("runpodctl", `echo "$*" >> `+rec)
		p.start()
		_, i := p.waitEvent(watchdog.KindDeleteFailed, "codes", "DELETE:500,terminate:500,stop:500,runpodctl:skipped")
		evs := p.events()
		if find(evs[:i], -1, watchdog.KindDeleteCode, "method", "runpodctl", "code", "skipped") < 0 {
			t.Errorf("no delete_code saying runpodctl was skipped\n%s", p.logText())
		}
		if _, err := os.Stat(rec); err == nil {
			t.Error("runpodctl ran")
		}
	})
}

func fmtCalls(cs []call) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.method+" "+c.body)
	}
	return out
}

// With the API down for several ticks, every way fails and the next tick
// tries again; once the API is back, the pod is deleted.
func TestAPIDownThenBack(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_BOOT_GRACE", "1")
		failing := 0
		p.api.Handle(func(r shtest.Request) (shtest.Answer, bool) {
			if r.Method == "GET" || failing >= 9 { // three ticks of three calls
				return shtest.Answer{}, false
			}
			failing++
			if failing%2 == 0 {
				return shtest.Answer{Drop: true}, true
			}
			return shtest.Answer{Status: 503}, true
		})
		p.deletes = 4
		p.start()
		evs := p.deleted(watchdog.DeleteNeverStarted)
		fails := 0
		for _, e := range evs {
			if e.Kind == watchdog.KindDeleteFailed {
				fails++
			}
		}
		if fails != 3 {
			t.Errorf("%d delete_failed events, want 3\n%s", fails, p.logText())
		}
	})
}

// TERM and INT are logged and end the watchdog with status 0 at once, even
// in the middle of a long sleep.
func TestSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		name := map[syscall.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGINT: "INT"}[sig]
		t.Run(name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.setEnv("OVERBRAINER_INTERVAL", "3600")
				p.start()
				p.waitEvent("test_tick")
				if err := p.proc.Signal(sig); err != nil {
					t.Fatal(err)
				}
				p.exit()
				p.waitEvent(watchdog.KindStopping, "signal", name)
				if p.api.Count("DELETE", "") != 0 {
					t.Error("a signal deleted the pod")
				}
			})
		})
	}
}

// Malformed control files never make the watchdog exit or misread the job.
func TestMalformedControlFiles(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_RETRIEVE_GRACE", "1", "OVERBRAINER_BOOT_GRACE", "1",
			"OVERBRAINER_VOLUME_DIR", t.TempDir(), "OVERBRAINER_DU", p.bin.Stub("du", `echo 'lots	x'`))
		p.write(watchdog.SnapshotAt, "abc\n")
		p.write(watchdog.CostCapAt, "99999999999999999999\n")
		p.write(watchdog.VolumeGB, "12GB\n")
		p.write(watchdog.Du, "-5\n")
		p.write(watchdog.JobPID, "")
		p.lease(now() + 5000)
		p.start()
		_, i := p.waitEvent(watchdog.KindJobStarted)
		evs := p.waitTicks(i, 3)
		p.write(watchdog.JobPID, "1\n")
		evs = p.waitTicks(len(evs)-1, 2)
		p.write(watchdog.JobPID, "0012x\n")
		evs = p.waitTicks(len(evs)-1, 2)
		p.none(evs, 0, watchdog.KindJobEnded)
		p.none(evs, 0, watchdog.KindSnapshotRequested)
		p.none(evs, 0, watchdog.KindDeleteReason)
		if p.proc.Exited() {
			t.Fatal("watchdog exited")
		}
		// A valid value still works.
		p.write(watchdog.CostCapAt, itoa(now()))
		p.deleted(watchdog.DeleteCostCap)
		if s := p.proc.Stderr(); s != "" {
			t.Errorf("stderr: %s", s)
		}
	})
}

// Malformed settings fall back to their defaults; a malformed deadline fails
// closed (it counts as passed).
func TestMalformedSettings(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_INTERVAL", "1m", "OVERBRAINER_PROBE_TRIES", "-3", "OVERBRAINER_BOOT_GRACE", "09",
			"OVERBRAINER_DEADLINE", "tomorrow")
		p.start()
		evs := p.deleted(watchdog.DeleteDeadline)
		for _, name := range []string{"OVERBRAINER_INTERVAL", "OVERBRAINER_PROBE_TRIES", "OVERBRAINER_DEADLINE"} {
			if find(evs, -1, watchdog.KindBadSetting, "name", name) < 0 {
				t.Errorf("no bad_setting for %s\n%s", name, p.logText())
			}
		}
		if i := find(evs, -1, watchdog.KindStart); i < 0 || evs[i].Fields["interval"] != "60" || evs[i].Fields["boot_grace"] != "9" {
			t.Errorf("start event %v", evs)
		}
	})
}

// The watchdog's own log on a full disk: every write fails, the rules still
// run.
func TestFullDiskForTheLog(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_BOOT_GRACE", "1")
		if err := os.Symlink("/dev/full", filepath.Join(p.dir, watchdog.Log)); err != nil {
			t.Fatal(err)
		}
		p.start()
		p.exit()
		if v := p.verdict(); v != "ready" {
			t.Errorf("verdict %q", v)
		}
		if p.api.Count("DELETE", "/pods/"+podID) != 1 {
			t.Errorf("requests %+v", p.api.Requests())
		}
	})
}

// Without RUNPOD_POD_ID there is nothing to delete: the watchdog keeps trying
// (every tick logs the failure) and never calls the API on a wrong path.
func TestNoPodIDNeverCallsTheCollection(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("RUNPOD_POD_ID", "", "OVERBRAINER_BOOT_GRACE", "1")
		p.start()
		_, i := p.waitEvent(watchdog.KindDeleteFailed)
		p.waitTicks(i, 2)
		if n := len(p.api.Requests()); n != 0 {
			t.Errorf("%d API calls without a pod id: %+v", n, p.api.Requests())
		}
	})
}

// A cost cap written while the watchdog sleeps its full production interval
// is read at once when the client wakes the watchdog (WakeCommand), not at
// the next tick a minute later.
func TestWakeReadsAControlFileAtOnce(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_INTERVAL", "3600")
		p.startJob()
		p.start()
		_, started := p.waitEvent(watchdog.KindJobStarted)
		shtest.WaitFile(t, filepath.Join(p.dir, watchdog.PID), time.Minute)
		// The watchdog now sleeps for an hour: only the wake-up can make it
		// see the cap.
		p.waitTicks(started, 1)
		// The sleep stub logs its tick before it execs sleep; give the
		// watchdog the moment it needs to be waiting for it.
		time.Sleep(300 * time.Millisecond)
		p.write(watchdog.CostCapAt, itoa(now()))
		wake := exec.Command("sh", "-c", watchdog.WakeCommand())
		wake.Dir = p.dir
		if out, err := wake.CombinedOutput(); err != nil {
			t.Fatalf("WakeCommand: %v %s", err, out)
		}
		p.deleted(watchdog.DeleteCostCap)
	})
}

// WakeCommand never fails, with no watchdog to wake.
func TestWakeCommandWithoutWatchdog(t *testing.T) {
	t.Parallel()
	wake := exec.Command("sh", "-c", watchdog.WakeCommand())
	wake.Dir = t.TempDir()
	if out, err := wake.CombinedOutput(); err != nil {
		t.Fatalf("WakeCommand: %v %s", err, out)
	}
}

// waitInScript is a shell loop that waits until cond holds, a minute at
// most: a loaded machine may take a while to set a trap or run one.
func waitInScript(cond string) string {
	return "i=0; while ! " + cond + ` && [ "$i" -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done`
}

// WakeCommand signals only a plain pid above 1 read from a regular file:
// "-1" would signal every process, "0" the whole group, "1" the pod's init,
// a FIFO would hang the client's command. It runs in a PID namespace of its
// own and a session of its own, so that a failure cannot signal the
// machine's processes.
func TestWakeCommandRefusesABadPid(t *testing.T) {
	t.Parallel()
	unshare := shtest.NeedTool(t, "unshare")
	// The client's command runs in the pod's login shell: bash on Runpod's
	// images, whose kill takes "-1" where dash's refuses it.
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		wakeRefusesABadPid(t, unshare, sh.Argv)
	})
}

func wakeRefusesABadPid(t *testing.T, unshare string, shell []string) {
	inNamespace := func(dir, script string) *exec.Cmd {
		cmd := exec.Command(unshare, append(append([]string{"--pid", "--fork", "--kill-child"}, shell...), "-c", script)...)
		cmd.Dir = dir
		// A session of its own too: a process group (kill 0) reaches
		// past a PID namespace, to this test and its go command.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return cmd
	}
	for _, bad := range []string{"-1", "0", "1", "01", "-12", "12abc", "", "fifo"} {
		t.Run(strconv.Quote(bad), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, watchdog.PodDir), 0o755); err != nil {
				t.Fatal(err)
			}
			pidFile := filepath.Join(dir, watchdog.PID)
			if bad == "fifo" {
				if err := syscall.Mkfifo(pidFile, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(pidFile, []byte(bad+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// A sentinel in the namespace's process group notes any HUP
			// once its trap is set; a good pid (its own) is signalled, as
			// a control. A wrong HUP is looked for 0.3 s after the wake: a
			// slow machine could hide one, never invent one.
			script := `trap 'echo hup >> hups' HUP
( trap 'echo hup >> hups' HUP; : > ready; while :; do sleep 0.05; done ) &
sentinel=$!
` + waitInScript("[ -e ready ]") + `
` + watchdog.WakeCommand() + `
sleep 0.3
kill "$sentinel"
[ ! -s hups ] || { echo "HUP sent for pid file $(cat .pod/watchdog.pid)"; exit 1; }
`
			cmd := inNamespace(dir, script)
			done := make(chan error, 1)
			var out []byte
			go func() {
				var err error
				out, err = cmd.CombinedOutput()
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%v: %s", err, out)
				}
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatal("WakeCommand hung")
			}
		})
	}
	// The control: the same check with a plain process's pid in the file
	// does see the HUP.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, watchdog.PodDir), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `( trap 'echo hup >> hups; exit' HUP; : > ready; while :; do sleep 0.05; done ) &
echo $! > .pod/watchdog.pid
` + waitInScript("[ -e ready ]") + `
` + watchdog.WakeCommand() + `
` + waitInScript("[ -s hups ]") + `
[ -s hups ] || { echo "no HUP for pid $(cat .pod/watchdog.pid) within a minute"; exit 1; }
`
	cmd := inNamespace(dir, script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("control: %v: %s", err, out)
	}
}
