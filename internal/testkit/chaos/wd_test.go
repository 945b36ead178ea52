package chaos_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// podKey is the pod-scoped key every shell watchdog of this package holds.
const podKey = "rpa_CHAOS_podkey_5d1f0e9a7c3b2a4f6e8d0c1b"

// wd is one real watchdog run by a shell against a shtest.FakeAPI, as a pod
// would run it after a good bootstrap.
type wd struct {
	t      *testing.T
	sh     shtest.Shell
	api    *shtest.FakeAPI
	bin    *shtest.Bin
	id     string // RUNPOD_POD_ID
	dir    string // the run directory
	env    map[string]string
	script string
	proc   *shtest.Proc
}

// newWD prepares a watchdog with the production interval (60 s: every time
// rule must wake it on its own due time), one probe, and graces long enough
// that only the rule under test can fire. df shows a half-full disk.
func newWD(t *testing.T, sh shtest.Shell, api *shtest.FakeAPI, id string) *wd {
	t.Helper()
	w := &wd{t: t, sh: sh, api: api, bin: shtest.NewBin(t), id: id, dir: t.TempDir(), script: watchdog.Script()}
	if err := os.MkdirAll(filepath.Join(w.dir, watchdog.PodDir), 0o755); err != nil {
		t.Fatal(err)
	}
	df := w.bin.Stub("df", `echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'; echo '/dev/vda1 100 50 50 50% /'`)
	w.env = map[string]string{
		podenv.RunDirEnv:           w.dir,
		"RUNPOD_POD_ID":            id,
		"RUNPOD_API_KEY":           podKey,
		podenv.APIURLEnv:           api.URL(),
		podenv.IntervalEnv:         "60",
		podenv.ProbeTriesEnv:       "1",
		podenv.ProbeWaitEnv:        "0",
		"OVERBRAINER_CURL_TIMEOUT": "5",
		podenv.BootGraceEnv:        "3600",
		podenv.RetrieveGraceEnv:    "3600",
		"OVERBRAINER_DF":           df,
	}
	return w
}

func (w *wd) start() {
	w.t.Helper()
	w.proc = shtest.Start(w.t, w.sh, w.script, shtest.Opts{Dir: w.dir, Env: w.env, Bin: w.bin})
}

func (w *wd) path(name string) string { return filepath.Join(w.dir, name) }

// write writes a file of the pod file protocol (name relative to the run
// directory) atomically.
func (w *wd) write(name, content string) {
	w.t.Helper()
	writeAtomic(w.t, w.path(name), content)
}

func writeAtomic(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".chaos-tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startJob runs a job process group (a sleep) and records it in job.pid.
func (w *wd) startJob() {
	w.t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	w.t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
	w.write(watchdog.JobPID, strconv.Itoa(cmd.Process.Pid)+"\n")
}

// deletes returns the DELETE calls for this pod so far.
func (w *wd) deletes() []shtest.Request {
	var out []shtest.Request
	for _, r := range w.api.Requests() {
		if r.Method == "DELETE" && r.Path == "/pods/"+w.id {
			out = append(out, r)
		}
	}
	return out
}

// waitDelete waits for the pod's first DELETE call and returns when it
// arrived.
func (w *wd) waitDelete() time.Time {
	w.t.Helper()
	var at time.Time
	deadline := time.Now().Add(wait)
	for {
		if d := w.deletes(); len(d) > 0 {
			at = d[0].Time
			break
		}
		if w.proc != nil && w.proc.Exited() {
			w.t.Fatalf("watchdog exited (code %d) without deleting the pod\nlog:\n%s\nstderr:\n%s",
				w.proc.ExitCode(), w.logTail(), w.proc.Stderr())
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no DELETE after %v\nlog:\n%s\nstderr:\n%s", wait, w.logTail(), w.proc.Stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return at
}

// logTail returns the watchdog log's lines (at most its last 64 KiB).
func (w *wd) logTail() string {
	f, err := os.Open(w.path(watchdog.Log))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 64<<10 {
		_, _ = f.Seek(st.Size()-64<<10, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// events parses the watchdog's log lines that parse (a hostile log may hold
// anything before the watchdog's own lines).
func (w *wd) events() []watchdog.Event {
	var evs []watchdog.Event
	for _, line := range strings.Split(w.logTail(), "\n") {
		if ev, err := watchdog.ParseLine(line); err == nil {
			evs = append(evs, ev)
		}
	}
	return evs
}

// started says the watchdog logged its start line.
func (w *wd) started() bool {
	for _, ev := range w.events() {
		if ev.Kind == watchdog.KindStart {
			return true
		}
	}
	return false
}

// reason is the watchdog's logged delete reason, "" when there is none.
func (w *wd) reason() string {
	for _, ev := range w.events() {
		if ev.Kind == watchdog.KindDeleteReason {
			return ev.Fields["reason"]
		}
	}
	return ""
}

// mutate removes a rule from the watchdog: the one statement that sets
// reason=<rule> becomes a no-op. It fails the test when the script no
// longer has exactly one such statement, so a refactored script cannot make
// the mutation tests pass by accident.
func mutate(t testing.TB, script, rule string) string {
	t.Helper()
	re := regexp.MustCompile(`(^|[ ;\t])reason=` + regexp.QuoteMeta(rule) + `([ ;\n]|$)`)
	if n := len(re.FindAllStringIndex(script, -1)); n != 1 {
		t.Fatalf("the watchdog has %d statements reason=%s, want 1: update mutate", n, rule)
	}
	return re.ReplaceAllString(script, "${1}:${2}")
}

// tree is what a directory holds: path → type, size and content hash.
type tree map[string]string

// snapshotTree records every entry under dir without following symlinks.
func snapshotTree(t testing.TB, dir string) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %d %x", len(b), sha256.Sum256(b))
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		}
		out[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diff lists what changed between two snapshots of a tree.
func (a tree) diff(b tree) string {
	var buf bytes.Buffer
	for p, v := range a {
		if w, ok := b[p]; !ok {
			fmt.Fprintf(&buf, "  removed %s\n", p)
		} else if w != v {
			fmt.Fprintf(&buf, "  changed %s: %s → %s\n", p, v, w)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			fmt.Fprintf(&buf, "  created %s\n", p)
		}
	}
	return buf.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestChaosCapWrittenWhileTheWatchdogSleeps: the launcher writes
// .pod/cost_cap_at once the pod runs, while its watchdog (production tick:
// 60 s) sleeps until its next due time. The cap must still land within 2 s
// of its time, not at the watchdog's next tick: the launcher wakes the
// watchdog (watchdog.WakeCommand()) after each write.
func TestChaosCapWrittenWhileTheWatchdogSleeps(t *testing.T) {
	shtest.ForShells(t, []string{"dash", "bash"}, func(t *testing.T, sh shtest.Shell) {
		api := shtest.NewFakeAPI(t)
		w := newWD(t, sh, api, "pod-late-cap")
		w.startJob()
		w.start()
		// The probe is done and the verdict written: the watchdog has gone
		// to sleep for its interval.
		shtest.WaitFile(t, w.path(watchdog.VerdictFile), wait)
		time.Sleep(time.Second)
		capAt := time.Now().Unix() + 4
		w.write(watchdog.CostCapAt, itoa(capAt)+"\n")
		// As the launcher does after every write of a client file.
		wake := exec.Command("sh", "-c", watchdog.WakeCommand())
		wake.Dir = w.dir
		if out, err := wake.CombinedOutput(); err != nil {
			t.Fatalf("WakeCommand: %v %s", err, out)
		}
		at := w.waitDelete()
		delay := at.Sub(time.Unix(capAt, 0))
		record(t, "clock", "cost cap written while the watchdog sleeps (60 s tick), "+sh.Name, "deleted %s after the cap", seconds(delay))
		if delay > ruleBound+Slack {
			t.Errorf("deleted %s after the cap: the watchdog only saw the cap at its next tick (bound %s + slack %s)", seconds(delay), ruleBound, Slack)
		}
		if r := w.reason(); r != string(watchdog.DeleteCostCap) {
			t.Errorf("delete reason %q", r)
		}
	})
}
