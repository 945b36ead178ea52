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

// fakeProc is a process table for the watchdog to read (OVERBRAINER_PROC),
// with the pod's sshd (pid sshdPID, named by OVERBRAINER_SSHD_PIDFILE).
type fakeProc struct {
	t       *testing.T
	dir     string
	ticking []string // shell lines that make processes busy at each tick
}

const sshdPID = 100

func (p *pod) fakeProc() *fakeProc {
	p.t.Helper()
	f := &fakeProc{t: p.t, dir: p.t.TempDir()}
	pidFile := filepath.Join(p.t.TempDir(), "sshd.pid")
	writeAtomic(p.t, pidFile, strconv.Itoa(sshdPID)+"\n")
	f.add(1, 0, "/sbin/docker-init")
	f.add(sshdPID, 1, "sshd: /usr/sbin/sshd -f /etc/overbrainer/sshd_config [listener] 0 of 10-100 startups")
	p.setEnv("OVERBRAINER_PROC", f.dir, "OVERBRAINER_SSHD_PIDFILE", pidFile)
	return f
}

// add makes process pid, child of ppid, titled as sshd titles itself (a
// command line padded with NULs).
func (f *fakeProc) add(pid, ppid int, title string) {
	f.t.Helper()
	d := filepath.Join(f.dir, strconv.Itoa(pid))
	if err := os.MkdirAll(d, 0o755); err != nil {
		f.t.Fatal(err)
	}
	writeAtomic(f.t, filepath.Join(d, "cmdline"), title+"\x00\x00\x00")
	writeAtomic(f.t, filepath.Join(d, "stat"), statLine(pid, ppid, pid, "5")+"\n")
}

// statLine is process pid's /proc/PID/stat line, child of ppid in process
// group pgrp, with utime as given (a number, or $t for the fake clock's
// true time in a tick's shell) and stime, cutime and cstime 6, 7 and 8.
func statLine(pid, ppid, pgrp int, utime string) string {
	return fmt.Sprintf("%d (a b) c) S %d %d %d 0 -1 4194560 1 2 3 4 %s 6 7 8 20 0 1 0 777 1000 10", pid, ppid, pgrp, pgrp, utime)
}

// busy makes the process pid (added already) use CPU at every tick of the
// fake clock c, its utime the clock's true time, until the returned
// function is called; pgrp is its process group.
func (f *fakeProc) busy(c *podClock, pid, ppid, pgrp int) (idle func()) {
	f.t.Helper()
	stop := filepath.Join(f.dir, fmt.Sprintf(".idle-%d", pid))
	f.ticking = append(f.ticking, fmt.Sprintf("[ -f %q ] || echo %q > %q", stop, statLine(pid, ppid, pgrp, "$t"),
		filepath.Join(f.dir, strconv.Itoa(pid), "stat")))
	c.onTick(strings.Join(f.ticking, "\n"))
	return func() { writeAtomic(f.t, stop, "") }
}

// session adds an authenticated SSH session, as sshd runs one: for root
// (the only user the pod's sshd lets in) the connection's own process,
// retitled once logged in; for another user a child of it (root true or
// false); and returns a function that ends it.
func (f *fakeProc) session(pid int, root bool, title string) (end func()) {
	pids := []int{pid}
	if root {
		f.add(pid, sshdPID, title)
	} else {
		f.add(pid, sshdPID, "sshd: someone [priv]")
		f.add(pid+1, pid, title)
		pids = []int{pid + 1, pid}
	}
	return func() {
		for _, pid := range pids {
			if err := os.RemoveAll(filepath.Join(f.dir, strconv.Itoa(pid))); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

// A kept pod whose job ended is deleted (kept_idle) once it went unused
// for KEEP_IDLE: counted from the job's end, from the latest touch of the
// lease, and never held by what is not a logged-in session of the pod's
// own sshd. On a fake clock with ten-minute ticks, at the very second.
func TestKeptIdleBound(t *testing.T) {
	t.Parallel()
	const t0 = fakeT0
	cases := []struct {
		name  string
		setup func(p *pod, f *fakeProc)
		at    int64
	}{
		{"from_the_job_end", nil, t0 + 1201},
		{"from_the_lease", func(p *pod, f *fakeProc) { p.lease(t0 + 903) }, t0 + 903 + 1201},
		// A lease LEASE_TTL (900) or more in the future holds nothing.
		{"far_future_lease", func(p *pod, f *fakeProc) { p.lease(t0 + 1201 + 900) }, t0 + 1201},
		// Connections not logged in (whatever user name they asked
		// for), a session of another sshd, a process titled like a
		// session outside sshd: none holds the pod.
		{"no_session", func(p *pod, f *fakeProc) {
			f.add(200, sshdPID, "sshd: root@notty [priv]")
			f.add(201, 200, "sshd: root@notty [net]")
			f.add(202, sshdPID, "sshd: unknown [preauth]")
			f.add(203, sshdPID, "sshd: root@notty x")
			f.add(204, 201, "sshd: root@notty")
			f.add(300, 1, "sshd: root [priv]")
			f.add(301, 300, "sshd: root@notty")
			f.add(400, 1, "sshd: root@pts/0")
		}, t0 + 1201},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				p.fakeClock(t0)
				f := p.fakeProc()
				p.startTimed([]string{"OVERBRAINER_INTERVAL", "600", "OVERBRAINER_KEEP_POD", "1", "OVERBRAINER_KEEP_IDLE", "1201"}, true,
					func(p *pod) {
						p.write(watchdog.ExitCode, "0\n")
						if c.setup != nil {
							c.setup(p, f)
						}
					})
				evs := p.deleted(watchdog.DeleteKeptIdle)
				i := find(evs, -1, watchdog.KindDeleteReason)
				if got := evs[i].Time.Unix(); got != c.at {
					t.Errorf("deleted at t0%+d, want t0%+d\nlog:\n%s", got-t0, c.at-t0, p.logText())
				}
				p.none(evs, 0, watchdog.KindKeptHeld)
			})
		})
	}
}

// An open SSH session holds a kept pod past its idle bound, for as long as
// it stays open (here 2.5 bounds), whether a shell with a terminal or a
// command without; the bound then counts from the first tick that found
// it closed.
func TestKeptIdleHeldByOpenSession(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, title string
		root        bool
	}{
		{"command", "sshd: root@notty", true},
		{"terminal", "sshd: root@pts/12", true},
		{"openssh_9.8", "sshd-session: root@pts/3", true},
		{"privsep_child", "sshd: root@notty", false},
		// Another user's session holds it too, as a child of its
		// connection's privileged process.
		{"user_command", "sshd: alice@notty", false},
		{"user_terminal", "sshd-session: bob@pts/0", false},
	} {
		tc := c
		t.Run(tc.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				const t0, idle = fakeT0, 601
				p := newPod(t, sh)
				c := p.fakeClock(t0)
				f := p.fakeProc()
				end := f.session(500, tc.root, tc.title)
				p.startTimed([]string{"OVERBRAINER_INTERVAL", "60", "OVERBRAINER_KEEP_POD", "1", "OVERBRAINER_KEEP_IDLE", strconv.Itoa(idle)}, true,
					func(p *pod) { p.write(watchdog.ExitCode, "0\n") })
				evs, i := p.waitEvent(watchdog.KindKeptHeld, "sessions", "1")
				if got := evs[i].Time.Unix(); got != t0+idle {
					t.Errorf("held at t0%+d, want at the bound, t0%+d", got-t0, idle)
				}
				shtest.Eventually(t, wait, func() bool { return c.Now() >= t0+idle*5/2 || p.proc.Exited() }, "2.5 idle bounds")
				// The fake clock runs on while the session closes: the
				// close falls between the two readings.
				before := c.Now()
				end()
				after := c.Now()
				evs = p.deleted(watchdog.DeleteKeptIdle)
				i = find(evs, -1, watchdog.KindDeleteReason)
				if got := evs[i].Time.Unix(); got < before+idle || got > after+idle+60 {
					t.Errorf("deleted at t0%+d, want within a tick after the session closed (between t0%+d and t0%+d) plus the bound (%d s)\nlog:\n%s",
						got-t0, before-t0, after-t0, idle, p.logText())
				}
			})
		})
	}
}

// --keep-idle 0: a kept pod whose job ended stays however long nobody uses
// it (here 30 hours of fake clock).
func TestKeptUnboundedNeverDeleted(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		const t0 = fakeT0
		p := newPod(t, sh)
		c := p.fakeClock(t0)
		p.fakeProc()
		p.startTimed([]string{"OVERBRAINER_INTERVAL", "3600", "OVERBRAINER_KEEP_POD", "1", "OVERBRAINER_KEEP_IDLE", "0",
			"OVERBRAINER_BOOT_GRACE", "1", "OVERBRAINER_RETRIEVE_GRACE", "1"}, true,
			func(p *pod) { p.write(watchdog.ExitCode, "0\n") })
		p.waitEvent(watchdog.KindJobEnded)
		shtest.Eventually(t, wait, func() bool { return c.Now() >= t0+30*3600 || p.proc.Exited() }, "30 h of fake clock")
		p.none(p.events(), 0, watchdog.KindDeleteReason)
		if p.proc.Exited() || p.api.Count("DELETE", "") != 0 {
			t.Fatalf("the unbounded kept pod was deleted\nlog:\n%s", p.logText())
		}
	})
}

// guardBusy makes the guard's own processes busy at every tick of c:
// init, a connection to sshd being authenticated (two processes), and a
// straggler of p's job (in its process group), left by the ended job.
func (f *fakeProc) guardBusy(p *pod, c *podClock) {
	f.t.Helper()
	job, err := strconv.Atoi(strings.TrimSpace(p.read(watchdog.JobPID)))
	if err != nil {
		f.t.Fatal(err)
	}
	f.add(200, sshdPID, "sshd: unknown [preauth]")
	f.busy(c, 200, sshdPID, 200)
	f.add(201, 200, "sshd: unknown [net]")
	f.busy(c, 201, 200, 200)
	f.busy(c, 1, 0, 1)
	f.add(300, 1, "python train.py")
	f.busy(c, 300, 1, job)
}

// A process outside the guard's own that uses CPU holds a kept pod past
// its idle bound, for as long as it keeps using it (a loop left running
// with nohup or in tmux after its SSH session ended, gone to init), and
// the bound then counts from the tick that found it idle. The guard's own
// processes hold nothing, however busy (guardBusy): alone, they let the
// pod go at its bound.
func TestKeptIdleHeldByBusyProcess(t *testing.T) {
	t.Parallel()
	for _, loop := range []bool{true, false} {
		t.Run(map[bool]string{true: "user_loop", false: "guards_own"}[loop], func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				const t0, idle = fakeT0, 601
				p := newPod(t, sh)
				c := p.fakeClock(t0)
				f := p.fakeProc()
				var stop func()
				p.startTimed([]string{"OVERBRAINER_INTERVAL", "60", "OVERBRAINER_KEEP_POD", "1", "OVERBRAINER_KEEP_IDLE", strconv.Itoa(idle)}, true,
					func(p *pod) {
						f.guardBusy(p, c)
						if loop {
							f.add(700, 1, "sh -c while :; do :; done")
							stop = f.busy(c, 700, 1, 700)
						}
						p.write(watchdog.ExitCode, "0\n")
					})
				if !loop {
					evs := p.deleted(watchdog.DeleteKeptIdle)
					if got := evs[find(evs, -1, watchdog.KindDeleteReason)].Time.Unix(); got != t0+idle {
						t.Errorf("deleted at t0%+d, want t0%+d\nlog:\n%s", got-t0, idle, p.logText())
					}
					p.none(evs, 0, watchdog.KindKeptHeld)
					return
				}
				evs, i := p.waitEvent(watchdog.KindKeptHeld, "procs", "1")
				if got := evs[i].Time.Unix(); got < t0+idle || got > t0+idle+60 {
					t.Errorf("held at t0%+d, want at the bound, t0%+d, or a tick after", got-t0, idle)
				}
				if evs[i].Fields["sessions"] != "0" || evs[i].Fields["gpu"] != "0" {
					t.Errorf("held by %v, want by the process alone", evs[i].Fields)
				}
				shtest.Eventually(t, wait, func() bool { return c.Now() >= t0+idle*5/2 || p.proc.Exited() }, "2.5 idle bounds")
				before := c.Now()
				stop()
				after := c.Now()
				evs = p.deleted(watchdog.DeleteKeptIdle)
				i = find(evs, -1, watchdog.KindDeleteReason)
				// The tick after the loop's last use may still see that use.
				if got := evs[i].Time.Unix(); got < before+idle || got > after+idle+2*60 {
					t.Errorf("deleted at t0%+d, want the bound (%d s) after the loop went idle (between t0%+d and t0%+d plus a tick)\nlog:\n%s",
						got-t0, idle, before-t0, after-t0, p.logText())
				}
			})
		})
	}
}

// A GPU at least MIN_GPU_UTIL busy holds a kept pod past its idle bound
// (a job started by hand on it, its processes not seen using CPU here),
// and once it is not, the pod goes a bound later.
func TestKeptIdleHeldByBusyGPU(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		const t0, idle = fakeT0, 601
		p := newPod(t, sh)
		c := p.fakeClock(t0)
		p.fakeProc()
		calm := filepath.Join(p.t.TempDir(), "calm")
		p.bin.Stub("nvidia-smi", fmt.Sprintf(`if [ -f %q ]; then echo 3; else echo 3; echo 85; fi`, calm))
		p.startTimed([]string{"OVERBRAINER_INTERVAL", "60", "OVERBRAINER_KEEP_POD", "1", "OVERBRAINER_KEEP_IDLE", strconv.Itoa(idle),
			"OVERBRAINER_MIN_GPU_UTIL", "50"}, true,
			func(p *pod) { p.write(watchdog.ExitCode, "0\n") })
		evs, i := p.waitEvent(watchdog.KindKeptHeld, "gpu", "1")
		if got := evs[i].Time.Unix(); got != t0+idle {
			t.Errorf("held at t0%+d, want at the bound, t0%+d", got-t0, idle)
		}
		shtest.Eventually(t, wait, func() bool { return c.Now() >= t0+idle*2 || p.proc.Exited() }, "2 idle bounds")
		before := c.Now()
		writeAtomic(t, calm, "")
		after := c.Now()
		evs = p.deleted(watchdog.DeleteKeptIdle)
		if got := evs[find(evs, -1, watchdog.KindDeleteReason)].Time.Unix(); got < before+idle || got > after+idle+60 {
			t.Errorf("deleted at t0%+d, want the bound (%d s) after the GPU went calm (between t0%+d and t0%+d plus a tick)\nlog:\n%s",
				got-t0, idle, before-t0, after-t0, p.logText())
		}
	})
}

// An idle kept pod with a pod volume is stopped, not deleted: a stop keeps
// the volume's data (billed as storage until it is removed), and a failed
// stop is tried again, never replaced by a delete. One with only a
// network volume (which outlives a delete) or none is deleted.
func TestKeptIdleStopsAPodVolume(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		env  []string
		stop bool
	}{
		{"pod_volume", []string{"OVERBRAINER_POD_VOLUME_GB", "20"}, true},
		{"network_volume", []string{"OVERBRAINER_VOLUME_DIR", "/workspace", "OVERBRAINER_VOLUME_GB", "50"}, false},
		{"no_volume", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				const t0, idle = fakeT0, 1201
				p := newPod(t, sh)
				p.fakeClock(t0)
				p.fakeProc()
				p.api.Queue("POST", "/pods/"+podID+"/action", shtest.Answer{Status: 500})
				p.startTimed(append([]string{"OVERBRAINER_INTERVAL", "600", "OVERBRAINER_KEEP_POD", "1", "OVERBRAINER_KEEP_IDLE", strconv.Itoa(idle)}, c.env...), true,
					func(p *pod) { p.write(watchdog.ExitCode, "0\n") })
				if !c.stop {
					p.deleted(watchdog.DeleteKeptIdle)
					if n := p.api.Count("POST", ""); n != 0 {
						t.Errorf("%d POST calls, want none", n)
					}
					return
				}
				p.exit()
				evs := p.events()
				i := find(evs, -1, watchdog.KindDeleteReason, "reason", string(watchdog.DeleteKeptIdle), "action", "stop")
				if i < 0 || evs[i].Time.Unix() != t0+idle {
					t.Fatalf("no stop for kept_idle at t0%+d\nlog:\n%s", idle, p.logText())
				}
				if find(evs, i, watchdog.KindDeleteFailed) < 0 || find(evs, i, watchdog.KindStopped, "method", "stop", "reason", string(watchdog.DeleteKeptIdle)) < 0 {
					t.Errorf("want a failed stop, then `stopped method=stop reason=kept_idle`\nlog:\n%s", p.logText())
				}
				p.none(evs, 0, watchdog.KindDeleted)
				stops := 0
				for _, r := range p.api.Requests() {
					switch {
					case r.Method == "DELETE":
						t.Errorf("DELETE %s: a kept pod with a pod volume is stopped, never deleted", r.Path)
					case r.Method == "POST" && r.Path == "/pods/"+podID+"/action" && strings.Contains(r.Body, `"stop"`) && r.Auth == "Bearer "+apiKey:
						stops++
					case r.Method == "POST":
						t.Errorf("POST %s %s", r.Path, r.Body)
					}
				}
				if stops != 2 {
					t.Errorf("%d stop calls, want 2 (a failed one, then one that worked)", stops)
				}
			})
		})
	}
}
