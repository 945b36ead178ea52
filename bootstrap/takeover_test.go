package bootstrap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A new pod that takes its run directory over from a lost pod of its run
// (a recovery on a network volume) moves what that pod and its job left
// into .pod/earlier/<its pod id> before its watchdog starts: the lost job's
// job.pid, cancelled marker and snapshot request, the lost pod's lease,
// retrieved marker and cost plan (a cap already reached) would otherwise
// make this watchdog take the lost job for its own and delete this pod
// at its first tick. The outputs, the job's directory, command.sh, the
// claim and the volume's size stay. A restart of this pod's container
// then moves nothing: its job is marked lost, as any restart's.
func TestTakeOverMovesTheLostPodsFilesAside(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	for _, shell := range shtest.Names {
		t.Run(shell, func(t *testing.T) {
			argv := shellArgv(t, shell)
			t.Parallel()
			w := newWorld(t)
			env := w.env()
			env[podenv.TakeOverEnv] = "1"
			past := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10) + "\n"
			lost := map[string]string{
				watchdog.JobPID:          "4242\n",
				watchdog.Cancelled:       watchdog.CancelContainerRestarted + "\n",
				watchdog.SnapshotRequest: "cost\n",
				watchdog.Progress:        "step=7\n",
				"job.log":                "the lost pod's job\n",
				watchdog.Lease:           "",
				watchdog.Retrieved:       "",
				watchdog.SnapshotAt:      past,
				watchdog.CostCapAt:       past,
				watchdog.Log:             "1 start msg=the lost pod's watchdog\n",
			}
			stay := map[string]string{
				".pod/claim":             w.host.line + "\n",
				watchdog.VolumeGB:        "20\n",
				"outputs/step":           "7\n",
				"outputs/snapshot.json":  `{"step": 7}` + "\n",
				"job/train.sh":           "echo train\n",
				"command.sh":             "sh train.sh\n",
				".pod/earlier/pod0/keep": "an earlier take-over's\n",
			}
			for _, files := range []map[string]string{lost, stay} {
				for name, content := range files {
					mkdir(t, filepath.Dir(filepath.Join(w.runDir, name)))
					writeFile(t, filepath.Join(w.runDir, name), content)
				}
			}
			p := startPod(t, podSpec{shell: argv, env: env, workdir: w.workdir})
			w.ready(p, func() string { return w.runDir })

			// The new pod's job starts; the watchdog's tick that sees it
			// would have acted on any file of the lost pod left behind.
			w.run("cd " + shellQuote(w.runDir) + " && { setsid sleep 7777 </dev/null >/dev/null 2>&1 & echo $! > job.pid; }")
			logPath := filepath.Join(w.runDir, watchdog.Log)
			var evs []watchdog.Event
			shtest.Eventually(t, bootTimeout, func() bool {
				evs, _ = watchdog.ParseLog(bytes.NewReader([]byte(readString(logPath))))
				return index(evs, -1, watchdog.KindJobStarted) >= 0 || p.exited()
			}, "no job_started; output:\n%s", p.stderr)
			for _, kind := range []string{watchdog.KindJobEnded, watchdog.KindDeleteReason, watchdog.KindSnapshotRequested} {
				if i := index(evs, -1, kind); i >= 0 {
					t.Errorf("the new pod's watchdog logged %s, by a rule of the lost pod:\n%s", kind, readString(logPath))
				}
			}
			if p.exited() || apiCount(w.api, "DELETE", "/pods/"+w.podID, w.apiKey) != 0 {
				t.Fatalf("the new pod was deleted:\n%s", p.stderr)
			}
			if strings.Contains(readString(logPath), "the lost pod's watchdog") {
				t.Errorf("the new watchdog's log goes on from the lost one's")
			}
			kept := filepath.Join(w.runDir, ".pod/earlier", w.podID)
			for name, content := range lost {
				if got := readString(filepath.Join(kept, name)); got != content {
					t.Errorf("%s in %s = %q, want the lost pod's %q", name, kept, got, content)
				}
				if name == watchdog.JobPID || name == watchdog.Log {
					continue // the new job's, the new watchdog's
				}
				if _, err := os.Lstat(filepath.Join(w.runDir, name)); !os.IsNotExist(err) {
					t.Errorf("%s is still in the run directory (%v)", name, err)
				}
			}
			for name, content := range stay {
				if got := readString(filepath.Join(w.runDir, name)); got != content {
					t.Errorf("%s = %q, want it kept (%q)", name, got, content)
				}
			}
			if _, err := os.Stat(kept + ".partial"); !os.IsNotExist(err) {
				t.Errorf("the partial take-over is left (%v)", err)
			}
			if out := p.stderr.String(); !strings.Contains(out, "taking the run over") || strings.Contains(out, "job lost:") {
				t.Errorf("the bootstrap did not say it took over, or called the lost job this pod's:\n%s", out)
			}

			// The new pod's container restarts: its job is lost with it,
			// marked so, and nothing of the first take-over moves.
			newJob := readString(filepath.Join(w.runDir, watchdog.JobPID))
			p.stop()
			p = startPod(t, podSpec{shell: argv, env: env, workdir: w.workdir})
			shtest.Eventually(t, bootTimeout, func() bool {
				evs, _ = watchdog.ParseLog(bytes.NewReader([]byte(readString(logPath))))
				return index(evs, -1, watchdog.KindJobEnded) >= 0 || p.exited()
			}, "no job_ended after the restart; output:\n%s", p.stderr)
			if e := evs[index(evs, -1, watchdog.KindJobEnded)]; e.Fields["reason"] != watchdog.CancelContainerRestarted {
				t.Errorf("job_ended %v, want reason=%s", e.Fields, watchdog.CancelContainerRestarted)
			}
			if got := readString(filepath.Join(w.runDir, watchdog.JobPID)); got != newJob || newJob == "" {
				t.Errorf("job.pid = %q after the restart, want this pod's job %q left in place", got, newJob)
			}
			if got := readString(filepath.Join(kept, watchdog.JobPID)); got != lost[watchdog.JobPID] {
				t.Errorf("the restart moved this pod's job aside: %s holds %q", kept, got)
			}
			if out := p.stderr.String(); strings.Contains(out, "taking the run over") || !strings.Contains(out, "job lost:") {
				t.Errorf("a restart of the new pod took over again, or did not mark its job lost:\n%s", out)
			}
		})
	}
}
