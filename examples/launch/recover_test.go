package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// podLosses are the ways the fake loses a pod under its job that a
// recovery must survive.
var podLosses = map[string]func(*runpodtest.Server, string) error{
	"host failure":        (*runpodtest.Server).FailHost,
	"maintenance restart": (*runpodtest.Server).RestartForMaintenance,
}

// TestRecoverLostPod: the pod's host fails mid-run, or a maintenance
// restart of its container loses the job and its run directory; with
// --recover and --pull-every the run goes on on a second pod, made only
// once the first is confirmed gone, from the checkpoint pulled before
// the loss, and finishes; both pods are in the run's attempts.
func TestRecoverLostPod(t *testing.T) {
	t.Parallel()
	for name, lose := range podLosses {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			recoverLostPod(t, lose)
		})
	}
}

func recoverLostPod(t *testing.T, lose func(*runpodtest.Server, string) error) {
	w := newWorld(t)
	p, first := w.startRecovering()
	if err := lose(w.srv, first); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(patience); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr)
	}
	w.assertRecovered(first, p.stdout.String()+p.stderr.String())
}

// TestRecoverLostPodOnVolume: with --network-volume, --recover needs no
// pull: when the pod's host fails, the second pod mounts the same volume
// and the job continues from its checkpoint there, one pod at a time;
// when a maintenance restart of its container loses the job (the
// restarted container marks it lost on the volume), the job starts again
// on the same pod, from the same checkpoint.
func TestRecoverLostPodOnVolume(t *testing.T) {
	t.Parallel()
	for name, lose := range podLosses {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			p, first, vol := w.startRecoveringOnVolume()
			if err := lose(w.srv, first); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(patience); code != 0 {
				t.Fatalf("exit %d\n%s", code, p.stderr)
			}
			out := p.stdout.String() + p.stderr.String()
			if name == "maintenance restart" {
				w.assertRecoveredInPlace(first, "recovering (1 of 2)", 10, out)
				return
			}
			w.assertRecoveredOnVolume(first, vol, out)
		})
	}
}

// TestRecoverInPlace: a maintenance restart of the pod's container at
// step 23 loses the job, but the pod volume (--volume-gb) keeps its run
// directory: with --recover the job starts again on the same pod, from
// its checkpoint of step 20 there, and no second pod is made.
func TestRecoverInPlace(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(args([]string{"run", "--recover", "1", "--volume-gb", "10"}, fast, demo(60))...)
	p.waitOutput("step 23/60", patience)
	first := w.onlyRun().PodID
	if err := w.srv.RestartForMaintenance(first); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(patience); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr)
	}
	w.assertRecoveredInPlace(first, "recovering (1 of 1)", 20, p.stdout.String()+p.stderr.String())
}

// assertRecoveredInPlace checks a run of the 60-step demo whose job was
// lost with its pod's container: the job started again on pod first, its
// only pod, from its checkpoint of step from or later, and finished.
func (w *world) assertRecoveredInPlace(first, recovering string, from int, out string) {
	t := w.t
	t.Helper()
	mustContain(t, "output", out, recovering, "the job starts again on the same pod "+first, "training done")
	assertResumed(t, out, from)
	if pods := w.srv.Pods(); len(pods) != 1 || pods[0].ID != first {
		t.Fatalf("pods %+v, want pod %s alone", pods, first)
	}
	r := w.onlyRun()
	if len(r.Attempts) != 1 || r.PodID != first || r.Recovery.Made != 1 || r.Recovery.Replacing != "" {
		t.Errorf("attempts %+v, recovery %+v", r.Attempts, r.Recovery)
	}
	w.assertFinished(r)
}

// TestRecoverPullsFromALostPod: a job lost with its container on a pod
// volume whose restarted container cannot be guarded (its watchdog's
// verdict fails) cannot go on there: the pod still answers SSH, so its
// outputs are pulled before it is replaced, and the new pod resumes from
// the checkpoint of step 20, without --pull-every.
func TestRecoverPullsFromALostPod(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(args([]string{"run", "--recover", "1", "--volume-gb", "10"}, fast, demo(60))...)
	p.waitOutput("step 23/60", patience)
	first := w.onlyRun().PodID
	// The restarted container's watchdog cannot read its pod.
	w.srv.Fail("GET", "/v2/pods/"+first, runpodtest.Fault{Status: 403, Times: -1, Caller: first})
	if err := w.srv.RestartForMaintenance(first); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(patience); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr)
	}
	out := p.stdout.String() + p.stderr.String()
	mustContain(t, "output", out, "recovering (1 of 1)", "pulled the outputs so far", "a new pod takes the job up from step 2", "training done")
	assertResumed(t, out, 20)
	if pods := w.srv.Pods(); len(pods) != 2 || pods[0].ID != first || pods[1].CreatedAt.Before(pods[0].EndedAt) {
		t.Fatalf("pods %+v, want the lost one, then one more once it was gone", pods)
	}
	w.assertFinished(w.onlyRun())
}

// assertResumed checks that out tells the demo resumed from its
// checkpoint of step from or later.
func assertResumed(t *testing.T, out string, from int) {
	t.Helper()
	m := regexp.MustCompile(`resuming from the checkpoint at step (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the job did not resume from a checkpoint:\n%s", out)
	}
	if step, _ := strconv.Atoi(m[1]); step < from {
		t.Errorf("resumed from step %d, want the checkpoint of step %d or later", step, from)
	}
}

// assertFinished checks that run r of the 60-step demo brought its last
// checkpoint home and left nothing billing, and the state private.
func (w *world) assertFinished(r *state.Run) {
	w.t.Helper()
	ckpt, err := os.ReadFile(filepath.Join(r.OutDir, "outputs", "checkpoint.txt"))
	if err != nil || !strings.Contains(string(ckpt), "step=60") {
		w.t.Errorf("final checkpoint %q, %v", ckpt, err)
	}
	w.assertClean()
	w.assertPrivate()
}

// startRecoveringOnVolume starts a recovering run of the 60-step demo on
// a network volume and returns once its job passed step 10, with its pod
// and the volume's id.
func (w *world) startRecoveringOnVolume() (*proc, string, string) {
	vol := w.srv.AddNetworkVolume("vol-rec", 10)
	p := w.start(args([]string{"run", "--recover", "2", "--network-volume", vol.ID}, fast, demo(60))...)
	p.waitOutput("step 11/60", patience)
	return p, w.onlyRun().PodID, vol.ID
}

// assertRecoveredOnVolume checks a run of the 60-step demo on network
// volume vol whose first pod was lost: the job went on on a second pod on
// the volume, made once the first was gone, from its checkpoint of step
// 10 or later there, and finished.
func (w *world) assertRecoveredOnVolume(first, vol, out string) {
	t := w.t
	t.Helper()
	mustContain(t, "output", out, "recovering (1 of 2)", "from its outputs on network volume "+vol, "training done")
	m := regexp.MustCompile(`resuming from the checkpoint at step (\d+)`).FindStringSubmatch(out)
	step := -1
	if m != nil {
		step, _ = strconv.Atoi(m[1])
	}
	if step < 10 {
		t.Errorf("the second pod did not resume from the checkpoint of step 10 or later on the volume:\n%s", out)
	}
	pods := w.srv.Pods()
	if len(pods) != 2 || pods[0].ID != first || pods[1].NetworkVolumeID != vol || pods[1].CreatedAt.Before(pods[0].EndedAt) {
		t.Fatalf("pods %+v: want the failed one, then one more on %s once it was gone", pods, vol)
	}
	r := w.onlyRun()
	if len(r.Attempts) != 2 || r.Attempts[0].Ended == "" || r.PodID != pods[1].ID || r.Recovery.Replacing != "" || r.Recovery.Made != 1 {
		t.Errorf("attempts %+v, recovery %+v", r.Attempts, r.Recovery)
	}
	w.assertFinished(r)
}

// startRecovering starts a recovering run of the 60-step demo and
// returns once a pull holds its checkpoint of step 10, with its pod.
func (w *world) startRecovering() (*proc, string) {
	p := w.start(args([]string{"run", "--recover", "2", "--pull-every", "2s"}, fast, demo(60))...)
	p.waitOutput("step 11/60", patience)
	r := w.onlyRun()
	w.waitPull(r)
	return p, r.PodID
}

// waitPull waits until a pull of run r holds a checkpoint past step 5.
func (w *world) waitPull(r *state.Run) {
	pulled := filepath.Join(w.stateDir, "runs", r.ID, "pulls", "latest", "outputs", "checkpoint.txt")
	for deadline := time.Now().Add(patience); ; time.Sleep(100 * time.Millisecond) {
		if b, _ := os.ReadFile(pulled); strings.HasPrefix(string(b), "step=") && !strings.HasPrefix(string(b), "step=5\n") {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no pull of the step 10 checkpoint within %s", patience)
		}
	}
}

// assertRecovered checks a run of the 60-step demo whose first pod was
// lost: out (what the launchers said) tells the recovery, the job went
// on on a second pod, made once the first was gone, from step 10 or
// later, and finished.
func (w *world) assertRecovered(first, out string) {
	t := w.t
	t.Helper()
	mustContain(t, "output", out, "recovering (1 of 2)", "training done", "checkpoint.txt, periodic) in the outputs")
	assertResumed(t, out, 10)
	pods := w.srv.Pods()
	if len(pods) != 2 || pods[0].ID != first {
		t.Fatalf("pods %+v, want the failed one and one more", pods)
	}
	// One pod at a time: the second was made after the first was gone.
	if pods[0].Status != runpodtest.StatusTerminated || pods[1].CreatedAt.Before(pods[0].EndedAt) {
		t.Errorf("first pod %s ended %s, second made %s", pods[0].Status, pods[0].EndedAt, pods[1].CreatedAt)
	}
	r := w.onlyRun()
	if len(r.Attempts) != 2 || r.Attempts[0].PodID != first || r.Attempts[0].Ended == "" || r.Attempts[0].CostUSD <= 0 ||
		r.Attempts[1].PodID != pods[1].ID || r.PodID != pods[1].ID {
		t.Errorf("attempts %+v", r.Attempts)
	}
	if r.CostUSD < r.Attempts[0].CostUSD {
		t.Errorf("run cost %v is less than its first pod's %v", r.CostUSD, r.Attempts[0].CostUSD)
	}
	w.assertFinished(r)
}

// TestRecoverOnError: a job that fails by itself is recovered only with
// --recover-on-error, from the outputs it left on its pod.
func TestRecoverOnError(t *testing.T) {
	t.Parallel()
	job := `if [ -f "$OVERBRAINER_OUTPUTS/once" ]; then echo "second try"; else touch "$OVERBRAINER_OUTPUTS/once"; echo "first try fails"; exit 3; fi`
	for _, onError := range []bool{false, true} {
		t.Run(strconv.FormatBool(onError), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			flags := []string{"run", "--recover", "1", "--cmd", job}
			if onError {
				flags = append(flags, "--recover-on-error")
			}
			p := w.run(append(flags, fast...)...)
			out := p.stdout.String() + p.stderr.String()
			pods := w.srv.Pods()
			switch {
			case onError && (p.code != 0 || len(pods) != 2 || !strings.Contains(out, "second try")):
				t.Errorf("with --recover-on-error: exit %d, %d pods\n%s", p.code, len(pods), out)
			case !onError && (p.code != 1 || len(pods) != 1 || strings.Contains(out, "recovering")):
				t.Errorf("without --recover-on-error: exit %d, %d pods\n%s", p.code, len(pods), out)
			}
			w.assertClean()
		})
	}
}

// TestRecoverInterrupted: a launcher killed (SIGKILL) in the middle of a
// recovery, between the lost pod's delete and the new pod's create, or
// once the new pod was made, leaves a Record that says where the
// recovery stood; attach finishes it on one new pod, never a second, on
// a network volume too (there the job goes on from its outputs on the
// volume, the new pod having moved the lost pod's files aside), even
// after an `rm --all-orphans`, which leaves the run's host key secret.
func TestRecoverInterrupted(t *testing.T) {
	t.Parallel()
	for _, volume := range []bool{false, true} {
		for _, name := range []string{"before the create", "after the create"} {
			if volume {
				name += " on a network volume"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				var p *proc
				var first, vol string
				if volume {
					p, first, vol = w.startRecoveringOnVolume()
				} else {
					p, first = w.startRecovering()
				}
				before := strings.HasPrefix(name, "before the create")
				if before {
					// The new pod's create never answers: the launcher is
					// killed while it waits, the lost pod already deleted.
					w.srv.Fail("POST", "/v2/pods", runpodtest.Fault{Hang: true})
				}
				if err := w.srv.FailHost(first); err != nil {
					t.Fatal(err)
				}
				for deadline := time.Now().Add(patience); ; time.Sleep(50 * time.Millisecond) {
					if before && hungCreate(w.srv) || !before && len(w.srv.Pods()) == 2 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the recovery did not get to %s within %s\n%s", name, patience, p.stderr)
					}
				}
				p.signal(syscall.SIGKILL)
				p.wait(patience)
				w.srv.ClearFaults()
				r := w.onlyRun()
				if r.Recovery.Replacing != first {
					t.Errorf("after the kill the run's state says it replaces %q, want pod %s", r.Recovery.Replacing, first)
				}
				if volume {
					// The run's host key secret is its only claim on
					// the run directory on the volume: a cleanup of
					// orphans before the attach leaves it.
					o := w.run("rm", "--all-orphans")
					if o.code != 0 || (before && !strings.Contains(o.stderr.String(), "a recovery on its network volume stands")) {
						t.Fatalf("rm --all-orphans exit %d\n%s", o.code, o.stderr)
					}
				}
				a := w.run("attach", r.ID)
				if a.code != 0 {
					t.Fatalf("attach exit %d\n%s", a.code, a.stderr)
				}
				out := p.stdout.String() + p.stderr.String() + a.stdout.String() + a.stderr.String()
				if volume {
					w.assertRecoveredOnVolume(first, vol, out)
				} else {
					w.assertRecovered(first, out)
				}
				if r := w.onlyRun(); r.Recovery.Replacing != "" || r.Recovery.Made != 1 {
					t.Errorf("recovery state after attach: %+v", r.Recovery)
				}
			})
		}
	}
}

// hungCreate says a pod's create is held by a Hang fault.
func hungCreate(srv *runpodtest.Server) bool {
	for _, q := range srv.Requests() {
		if q.Method == "POST" && q.Path == "/v2/pods" && q.Fault {
			return true
		}
	}
	return false
}

// TestRecoverPullsTheExcludedCheckpoint: --exclude 'ckpt-*' (the
// results' download leaves those on the pod) does not keep the pulls of
// --recover --pull-every from the checkpoint the job named in its
// snapshot.json: it is pulled all the same, with a warning, and the next
// pod resumes from it; the results still leave it.
func TestRecoverPullsTheExcludedCheckpoint(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	job := `out=$OVERBRAINER_OUTPUTS
if [ -f "$out/ckpt-1/model.bin" ]; then echo "resumed from ckpt-1: $(cat "$out/ckpt-1/model.bin")"; exit 0; fi
mkdir -p "$out/ckpt-1" && echo weights > "$out/ckpt-1/model.bin"
printf '{"checkpoint": "ckpt-1", "step": 1}\n' > "$out/snapshot.json"
echo saved
while :; do sleep 1; done`
	p := w.start(args([]string{"run", "--recover", "1", "--pull-every", "1s", "--exclude", "ckpt-*", "--cmd", job}, fast)...)
	p.waitOutput("saved", patience)
	r := w.onlyRun()
	latest := filepath.Join(w.stateDir, "runs", r.ID, "pulls", "latest", "outputs")
	for deadline := time.Now().Add(patience); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(latest, "snapshot.json")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pull of snapshot.json within %s", patience)
		}
	}
	if b, err := os.ReadFile(filepath.Join(latest, "ckpt-1", "model.bin")); err != nil || string(b) != "weights\n" {
		t.Errorf("the pull lacks the checkpoint snapshot.json names: %q, %v", b, err)
	}
	if err := w.srv.FailHost(r.PodID); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(patience); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr)
	}
	mustContain(t, "output", p.stdout.String()+p.stderr.String(), `the exclude "ckpt-*" matches the checkpoint outputs/ckpt-1`,
		"recovering (1 of 1)", "resumed from ckpt-1: weights")
	if _, err := os.Stat(filepath.Join(w.onlyRun().OutDir, "outputs", "ckpt-1")); err == nil {
		t.Error("the results hold the excluded checkpoint")
	}
	w.assertClean()
}
