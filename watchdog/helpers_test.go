package watchdog_test

import (
	"bytes"
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

// Scenario subtests mostly wait for the watchdog's one-second ticks; run many
// at once unless -parallel says otherwise.
func TestMain(m *testing.M) { shtest.Main(m, 16) }

const (
	podID  = "pod-7f3a9c"
	apiKey = "rpa_S3CRET_0b9e7c1d2a4f6e8d0c1b2a3f4e5d6c7b"
)

// wait bounds every poll: generous, since it is spent only when something
// is wrong, and a 2-core machine kept busy (the load check, .ci/load) ran a
// fake clock's 80 ticks in more than 90 s. WATCHDOG_TEST_WAIT (a Go
// duration) overrides it, e.g. for mutation runs.
var wait = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("WATCHDOG_TEST_WAIT")); err == nil {
		return d
	}
	return 5 * time.Minute
}()

// pod is one watchdog under test: its run directory, fake API, stubs and env.
type pod struct {
	t    *testing.T
	sh   shtest.Shell
	api  *shtest.FakeAPI
	bin  *shtest.Bin
	dir  string
	env  map[string]string
	df   string // file holding the df stub's data line
	proc *shtest.Proc
	// deletes is how many DELETE calls deleted expects (1 unless the test
	// makes the API fail).
	deletes int
}

// newPod prepares a watchdog with short test settings: a one-second interval,
// no wait between probes, generous graces (each test shortens the one it
// checks), a curl timeout of a minute (the fake API answers at once, or
// after the hang a test sets, and no test waits for curl to give up; at
// nice 19 on a busy machine a DELETE's curl did not end within 5 s, and
// the watchdog went on to its fallback, which the test did not expect), a
// df stub showing a half-full disk, and a sleep stub that also writes a
// `test_tick` line into the watchdog log, so tests can count ticks in the
// same, ordered file instead of timing them.
func newPod(t *testing.T, sh shtest.Shell) *pod {
	t.Helper()
	p := &pod{t: t, sh: sh, api: shtest.NewFakeAPI(t), bin: shtest.NewBin(t), dir: t.TempDir(), deletes: 1}
	if err := os.MkdirAll(filepath.Join(p.dir, watchdog.PodDir), 0o755); err != nil {
		t.Fatal(err)
	}
	realSleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	p.bin.Stub("sleep", fmt.Sprintf(
		`printf '%%s test_tick sleep=%%s\n' "$(date +%%s)" "$1" >> "$OVERBRAINER_RUN_DIR/.pod/watchdog.log" 2>/dev/null
exec %q "$@"`, realSleep))
	p.df = filepath.Join(p.bin.Dir, ".df")
	p.setDisk(50, 50)
	dfStub := p.bin.Stub("df", fmt.Sprintf(`echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'; cat %q`, p.df))
	p.env = map[string]string{
		"OVERBRAINER_RUN_DIR":        p.dir,
		"RUNPOD_POD_ID":              podID,
		"RUNPOD_API_KEY":             apiKey,
		"OVERBRAINER_API_URL":        p.api.URL(),
		"OVERBRAINER_INTERVAL":       "1",
		"OVERBRAINER_PROBE_TRIES":    "3",
		"OVERBRAINER_PROBE_WAIT":     "0",
		"OVERBRAINER_CURL_TIMEOUT":   "60",
		"OVERBRAINER_BOOT_GRACE":     "3600",
		"OVERBRAINER_RETRIEVE_GRACE": "3600",
		"OVERBRAINER_DF":             dfStub,
	}
	return p
}

// setDisk makes the df stub report used and available KiB.
func (p *pod) setDisk(used, avail int) {
	p.t.Helper()
	writeAtomic(p.t, p.df, fmt.Sprintf("/dev/vda1 %d %d %d %d%% /\n", used+avail, used, avail, used*100/(used+avail)))
}

// onVolume gives the pod a network volume of 1 GB, measured by a du stub
// that runs body.
func (p *pod) onVolume(body string) {
	p.t.Helper()
	du := p.bin.Stub("du", body)
	p.setEnv("OVERBRAINER_VOLUME_DIR", p.t.TempDir(), "OVERBRAINER_VOLUME_GB", "1", "OVERBRAINER_DU", du)
}

func (p *pod) setEnv(kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		p.env[kv[i]] = kv[i+1]
	}
}

func (p *pod) start() {
	p.t.Helper()
	p.proc = shtest.Start(p.t, p.sh, watchdog.Script(), shtest.Opts{Dir: p.dir, Env: p.env, Bin: p.bin})
}

func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".test-tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// write writes a control file, name relative to the run directory.
func (p *pod) write(name, content string) {
	p.t.Helper()
	writeAtomic(p.t, filepath.Join(p.dir, name), content)
}

func (p *pod) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(p.dir, name))
	return string(b)
}

// lease writes .pod/lease with the given mtime (Unix seconds).
func (p *pod) lease(mtime int64) {
	p.t.Helper()
	p.write(watchdog.Lease, "")
	tm := time.Unix(mtime, 0)
	if err := os.Chtimes(filepath.Join(p.dir, watchdog.Lease), tm, tm); err != nil {
		p.t.Fatal(err)
	}
}

func now() int64 { return time.Now().Unix() }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// events parses the log's complete lines; every line must parse.
func (p *pod) events() []watchdog.Event {
	p.t.Helper()
	b, _ := os.ReadFile(filepath.Join(p.dir, watchdog.Log))
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	evs, err := watchdog.ParseLog(bytes.NewReader(b))
	if err != nil {
		p.t.Fatalf("watchdog.log does not parse: %v\n%s", err, b)
	}
	return evs
}

func (p *pod) logText() string { return p.read(watchdog.Log) }

// match reports whether e is of kind and has every field in kv.
func match(e watchdog.Event, kind string, kv ...string) bool {
	if e.Kind != kind {
		return false
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if e.Fields[kv[i]] != kv[i+1] {
			return false
		}
	}
	return true
}

// find returns the index of the first event after index from that matches.
func find(evs []watchdog.Event, from int, kind string, kv ...string) int {
	for i := from + 1; i < len(evs); i++ {
		if match(evs[i], kind, kv...) {
			return i
		}
	}
	return -1
}

// waitEvent waits for an event of kind with the given fields and returns all
// events so far and its index.
func (p *pod) waitEvent(kind string, kv ...string) ([]watchdog.Event, int) {
	p.t.Helper()
	var evs []watchdog.Event
	i := -1
	shtest.Eventually(p.t, wait, func() bool {
		evs = p.events()
		i = find(evs, -1, kind, kv...)
		return i >= 0 || (p.proc != nil && p.proc.Exited())
	}, "event %s %v", kind, kv)
	if i < 0 {
		p.t.Fatalf("watchdog exited (code %d) without event %s %v\nlog:\n%s\nstderr:\n%s",
			p.proc.ExitCode(), kind, kv, p.logText(), p.proc.Stderr())
	}
	return evs, i
}

// waitTicks waits until n more test ticks are logged after event index after.
func (p *pod) waitTicks(after, n int) []watchdog.Event {
	p.t.Helper()
	var evs []watchdog.Event
	shtest.Eventually(p.t, wait, func() bool {
		evs = p.events()
		c := 0
		for _, e := range evs[after+1:] {
			if e.Kind == "test_tick" {
				c++
			}
		}
		return c >= n || p.proc.Exited()
	}, "%d ticks", n)
	if p.proc.Exited() {
		p.t.Fatalf("watchdog exited (code %d) while waiting for ticks\nlog:\n%s\nstderr:\n%s", p.proc.ExitCode(), p.logText(), p.proc.Stderr())
	}
	return evs
}

// none fails the test if any event from index from on matches.
func (p *pod) none(evs []watchdog.Event, from int, kind string, kv ...string) {
	p.t.Helper()
	if i := find(evs, from-1, kind, kv...); i >= 0 {
		p.t.Fatalf("unexpected event %v\nlog:\n%s", evs[i], p.logText())
	}
}

// verdict waits for .pod/watchdog.
func (p *pod) verdict() string {
	p.t.Helper()
	return strings.TrimSuffix(shtest.WaitFile(p.t, filepath.Join(p.dir, watchdog.VerdictFile), wait), "\n")
}

// exit waits for the watchdog to exit and checks it exited 0.
func (p *pod) exit() {
	p.t.Helper()
	if code := p.proc.Wait(p.t, wait); code != 0 {
		p.t.Fatalf("watchdog exit code %d\nlog:\n%s\nstderr:\n%s", code, p.logText(), p.proc.Stderr())
	}
}

// deleted waits for the watchdog to delete the pod for reason, and checks
// the DELETE call, its key and the log.
func (p *pod) deleted(reason watchdog.DeleteReason) []watchdog.Event {
	p.t.Helper()
	p.exit()
	evs := p.events()
	i := find(evs, -1, watchdog.KindDeleteReason)
	if i < 0 || evs[i].Fields["reason"] != string(reason) {
		p.t.Fatalf("delete reason: want %s\nlog:\n%s", reason, p.logText())
	}
	if find(evs, i, watchdog.KindDeleted, "method", "delete") < 0 {
		p.t.Fatalf("no `deleted method=delete`\nlog:\n%s", p.logText())
	}
	// ended_by holds the rule and the tick's time, at most the second of
	// the delete_reason line's.
	var why string
	var at int64
	got := p.read(watchdog.EndedByFile)
	if _, err := fmt.Sscanf(got, "reason=%s at=%d\n", &why, &at); err != nil || why != string(reason) ||
		at > evs[i].Time.Unix() || at < evs[i].Time.Unix()-2 || !strings.HasSuffix(got, "\n") {
		p.t.Errorf("%s = %q, want reason=%s at=%d", watchdog.EndedByFile, got, reason, evs[i].Time.Unix())
	}
	n := 0
	for _, r := range p.api.Requests() {
		if r.Method == "DELETE" {
			n++
			if r.Path != "/pods/"+podID || r.Auth != "Bearer "+apiKey {
				p.t.Errorf("DELETE %s with Authorization %q", r.Path, r.Auth)
			}
		}
	}
	if n != p.deletes {
		p.t.Errorf("%d DELETE calls, want %d", n, p.deletes)
	}
	return evs
}

// startJob starts a job process group (a sleep), records it in job.pid and
// returns a function that kills it and waits until it is reaped, so that the
// group no longer exists.
func (p *pod) startJob() (kill func()) {
	p.t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	kill = func() { _ = cmd.Process.Kill(); <-done }
	p.t.Cleanup(kill)
	p.write(watchdog.JobPID, strconv.Itoa(cmd.Process.Pid)+"\n")
	return kill
}

// fakeT0 is where the fake clock starts for tests whose rules fall due
// seconds after the watchdog starts: on the real clock, a busy machine that
// starts the watchdog a few seconds late finds them past already, and the
// test sees another order of events than the one it checks.
const fakeT0 = 1_800_000_000

// podClock is a fake clock for the watchdog, kept in files: the true time
// in hundredths of a second, which `date +%s` prints in whole seconds plus
// a step offset (the wall clock), and `sleep N`, after logging a test_tick
// line, moves on by N seconds plus the work time (the hundredths a tick
// takes, 0 unless set), with a fake uptime (OVERBRAINER_UPTIME) that
// follows it, as time passing does. A step moves the wall clock alone, as a
// clock set by hand or by NTP does: stepAt makes the sleep that reaches a
// given time apply it, so that each file keeps one writer and the step
// lands at a known tick. onTick gives the sleep a command to run at every
// tick, as a job's output would come between two ticks.
//
// The sleep rewrites the files in place, with the shell's own redirections:
// an mv per file cost two processes a tick, a quarter of the processes the
// package starts. Their other readers are not hurt: the watchdog waits for
// the sleep before it reads them, the sleep ignores the signals that would
// end it half-way through a write (a wake's TERM) until it is done, and
// Now reads again a file it finds empty.
type podClock struct {
	t                               *testing.T
	file, off, up, step, work, tick string
	boot                            int64 // the true time of uptime 0, in hundredths
}

// fakeClock installs the clock's date and sleep stubs, starting at wall
// time start and an uptime of 1000.37 s (the hundredths exercise the
// watchdog's rounding).
func (p *pod) fakeClock(start int64) *podClock {
	p.t.Helper()
	c := &podClock{t: p.t, file: filepath.Join(p.bin.Dir, ".clock"), off: filepath.Join(p.bin.Dir, ".clock-offset"),
		up: filepath.Join(p.bin.Dir, ".uptime"), step: filepath.Join(p.bin.Dir, ".clock-step"),
		work: filepath.Join(p.bin.Dir, ".clock-work"), tick: filepath.Join(p.bin.Dir, ".clock-tick")}
	writeAtomic(p.t, c.file, itoa(start*100)+"\n")
	writeAtomic(p.t, c.off, "0\n")
	writeAtomic(p.t, c.up, "1000.37 1500.00\n")
	writeAtomic(p.t, c.work, "0\n")
	realDate, err := exec.LookPath("date")
	if err != nil {
		p.t.Fatal(err)
	}
	realSleep, err := exec.LookPath("sleep")
	if err != nil {
		p.t.Fatal(err)
	}
	p.bin.Stub("date", fmt.Sprintf(`if [ "$*" = "+%%s" ]; then read -r t < %[1]q && read -r o < %[2]q && echo $((t / 100 + o)); else exec %[3]q "$@"; fi`,
		c.file, c.off, realDate))
	c.boot = start*100 - 100037
	p.bin.Stub("sleep", fmt.Sprintf(`case $1 in ''|*[!0-9]*) exec %[6]q "$@";; esac
trap '' TERM INT HUP
read -r t < %[1]q && read -r o < %[2]q && read -r w < %[5]q || exit 1
printf '%%s test_tick sleep=%%s\n' $((t / 100 + o)) "$1" >> "$OVERBRAINER_RUN_DIR/.pod/watchdog.log"
t=$((t + $1 * 100 + w))
echo $t > %[1]q
u=$((t - %[7]d))
printf '%%d.%%02d 0.00\n' $((u / 100)) $((u %% 100)) > %[3]q
if read -r at d hook 2>/dev/null < %[4]q && [ $((t / 100)) -ge "$at" ]; then
  : > %[4]q
  echo $((o + d)) > %[2]q
  wall=$((t / 100 + o + d))
  eval "$hook"
fi
[ ! -f %[8]q ] || . %[8]q
trap - TERM INT HUP
exec %[6]q 0.01`, c.file, c.off, c.up, c.step, c.work, realSleep, c.boot, c.tick))
	p.setEnv("OVERBRAINER_UPTIME", c.up)
	return c
}

// stepAt makes the wall clock jump by delta seconds once the true time
// reaches at (seconds), after which the sleep stub runs hook (shell, with
// $wall the new wall time).
func (c *podClock) stepAt(at, delta int64, hook string) {
	c.t.Helper()
	writeAtomic(c.t, c.step, fmt.Sprintf("%d %d %s\n", at, delta, hook))
}

// takes sets the work time of each tick, in hundredths of a second.
func (c *podClock) takes(hundredths int) {
	c.t.Helper()
	writeAtomic(c.t, c.work, strconv.Itoa(hundredths)+"\n")
}

// late moves the clock on by hundredths of a second (fewer than 100),
// before the watchdog starts: its first date then falls late in its second.
func (c *podClock) late(hundredths int64) {
	c.t.Helper()
	t := c.Now()*100 + hundredths
	writeAtomic(c.t, c.file, itoa(t)+"\n")
	u := t - c.boot
	writeAtomic(c.t, c.up, fmt.Sprintf("%d.%02d 0.00\n", u/100, u%100))
}

// onTick makes every later tick's sleep run cmd (shell, with $t the true
// time in hundredths), before its real pause.
func (c *podClock) onTick(cmd string) {
	c.t.Helper()
	writeAtomic(c.t, c.tick, cmd+"\n")
}

// Now reads the wall time. A file the sleep is rewriting reads empty for a
// moment: it is read again.
func (c *podClock) Now() int64 {
	read := func(path string) (int64, bool) {
		b, _ := os.ReadFile(path)
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return v, err == nil
	}
	var now int64
	shtest.Eventually(c.t, wait, func() bool {
		t, okT := read(c.file)
		o, okO := read(c.off)
		now = t/100 + o
		return okT && okO
	}, "the fake clock readable: %s, %s", c.file, c.off)
	return now
}
