package watchdog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// fakeProc is a process table for the watchdog to read (OVERBRAINER_PROC),
// with the pod's sshd (pid sshdPID, named by OVERBRAINER_SSHD_PIDFILE).
type fakeProc struct {
	t   *testing.T
	dir string
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
	writeAtomic(f.t, filepath.Join(d, "stat"), fmt.Sprintf("%d (sshd) S %d %d %d 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 777 1000 10\n", pid, ppid, pid, pid))
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
