package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// Recovery cells: a run whose pod is lost mid-run goes on on a second
// pod, one pod at a time, billed at most its cap, from its pulled
// checkpoint or from its outputs on its network volume; a run waits for a GPU
// that comes back after capacityDelay; a launcher SIGKILLed in the middle
// of a recovery is finished by attach. Each prints the pods left
// billing, the most pods of the run alive at once and the dollars.

// capacityDelay is how long the GPU of the capacity cell is out of
// stock.
var capacityDelay = envDuration("CHAOS_CAPACITY_DELAY", 2*time.Minute)

// recoverCap is the cost cap of the recovery cells' runs.
const recoverCap = 0.5

// recoverWorld is one recovery cell's fake Runpod and state directory.
type recoverWorld struct {
	t        *testing.T
	srv      *runpodtest.Server
	bin      string
	stateDir string
}

func newRecoverWorld(t *testing.T) *recoverWorld {
	needPods(t)
	w := &recoverWorld{t: t, bin: launcherBinary(t, ""), stateDir: filepath.Join(t.TempDir(), "state")}
	w.srv = checkedfake.NewTestServer(t, runpodtest.WithPodRunner())
	return w
}

func (w *recoverWorld) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNPOD_") && !strings.HasPrefix(kv, "OVERBRAINER_") {
			out = append(out, kv)
		}
	}
	return append(out, "RUNPOD_API_KEY="+w.srv.APIKey())
}

func (w *recoverWorld) launch(args ...string) *launcher {
	return startLauncher(w.t, w.bin, w.environ(), append([]string{args[0], "--state-dir", w.stateDir, "--api-url", w.srv.BaseURL()}, args[1:]...)...)
}

// run starts `launch run` of the demo for steps steps, with extra flags.
func (w *recoverWorld) run(steps int, extra ...string) *launcher {
	args := []string{"run", "--max-hours", "1", "--max-cost-usd", fmt.Sprint(recoverCap),
		"--poll", "1s", "--lease-every", "1s", "--lease-ttl", "5s", "--watchdog-interval", "1s", "--probe-wait", "1s",
		"--snapshot-lead", "2s", "--snapshot-wait", "30s", "--start-timeout", "3m", "--verdict-timeout", "3m",
		"--cmd", fmt.Sprintf("DEMO_STEPS=%d sh train.sh", steps)}
	return w.launch(append(args, extra...)...)
}

// mostAlive is the most pods alive at once, from the fake's request log:
// each pod made counts from its create's answer until a delete of it was
// answered.
func (w *recoverWorld) mostAlive() int {
	alive, most := 0, 0
	deleted := map[string]bool{}
	for _, q := range w.srv.Requests() {
		ok := q.Status >= 200 && q.Status < 300
		switch {
		case q.Method == "POST" && q.Path == "/v2/pods" && ok:
			alive++
		case q.Method == "DELETE" && strings.HasPrefix(q.Path, "/v2/pods/") && ok && !deleted[q.Path]:
			deleted[q.Path] = true
			alive--
		}
		most = max(most, alive)
	}
	return most
}

// billingLeft counts the pods that still bill.
func (w *recoverWorld) billingLeft() int {
	n := 0
	for _, p := range w.srv.Pods() {
		if p.Billing {
			n++
		}
	}
	return n
}

// figures records the cell's pods left, most alive at once and dollars,
// and fails it when a pod is left, two were alive at once or the bill
// passed the cap.
func (w *recoverWorld) figures(cell string) {
	t := w.t
	left, most, usd := w.billingLeft(), w.mostAlive(), w.srv.TotalUSD()
	record(t, "recovery", cell+": pods left billing", "%d", left)
	record(t, "recovery", cell+": pods of the run alive at once (max)", "%d", most)
	record(t, "recovery", cell+": dollars billed (cap $"+fmt.Sprint(recoverCap)+")", "$%.4f", usd)
	if left != 0 || most > 1 || usd > recoverCap {
		t.Errorf("%s: %d pods left, %d alive at once, $%.4f billed over a cap of $%v", cell, left, most, usd, recoverCap)
	}
}

// waitPull waits until the run's pulls hold a checkpoint past step 5.
func (w *recoverWorld) waitPull(l *launcher) {
	w.waitCheckpoint(l, filepath.Join(w.stateDir, "runs", "*", "pulls", "latest", "outputs", "checkpoint.txt"), "pull")
}

// waitCheckpoint waits until the file glob names holds a checkpoint past
// step 5 (what says where, for the failure).
func (w *recoverWorld) waitCheckpoint(l *launcher, glob, what string) {
	ok := l.waitFor(func() bool {
		m, _ := filepath.Glob(glob)
		if len(m) != 1 {
			return false
		}
		b, _ := os.ReadFile(m[0])
		pulled := string(b)
		return strings.HasPrefix(pulled, "step=") && !strings.HasPrefix(pulled, "step=5\n")
	})
	if !ok {
		w.t.Fatalf("no %s of a checkpoint past step 5: %s", what, l.state())
	}
}

// firstPod is the run's first pod.
func (w *recoverWorld) firstPod() string {
	pods := w.srv.Pods()
	if len(pods) == 0 {
		w.t.Fatal("no pod")
	}
	return pods[0].ID
}

// checkFinished checks that the run finished on a second pod, from its
// checkpoint.
func (w *recoverWorld) checkFinished(out string, code int) {
	t := w.t
	if code != 0 || !strings.Contains(out, "recovering (1 of 2)") || !strings.Contains(out, "training done") ||
		!strings.Contains(out, "resuming from the checkpoint at step") {
		t.Errorf("exit %d; the run did not finish on a second pod from its checkpoint:\n%s", code, out)
	}
	if n := len(w.srv.Pods()); n != 2 {
		t.Errorf("%d pods made, want 2", n)
	}
}

func TestChaosRecover(t *testing.T) {
	t.Parallel()
	t.Run("pod lost mid-run", func(t *testing.T) {
		t.Parallel()
		holdPodSlot(t)
		w := newRecoverWorld(t)
		l := w.run(40, "--recover", "2", "--pull-every", "2s")
		w.waitPull(l)
		lost := time.Now()
		if err := w.srv.FailHost(w.firstPod()); err != nil {
			t.Fatal(err)
		}
		l.waitFor(l.says("resuming from the checkpoint at step"))
		record(t, "recovery", "pod lost mid-run: from the loss to the job running again", "%s", seconds(time.Since(lost)))
		code := l.wait()
		w.checkFinished(l.output(), code)
		w.figures("pod lost mid-run")
	})
	t.Run("pod lost mid-run on a network volume", func(t *testing.T) {
		t.Parallel()
		holdPodSlot(t)
		w := newRecoverWorld(t)
		vol := w.srv.AddNetworkVolume("", 20)
		l := w.run(40, "--recover", "2", "--network-volume", vol.ID, "--volume-path", "/workspace")
		// No pull: the host fails once the volume holds a checkpoint
		// past step 5, which the second pod's job takes up there.
		w.waitCheckpoint(l, filepath.Join(vol.Dir, "overbrainer", "*", "outputs", "checkpoint.txt"), "volume")
		lost := time.Now()
		if err := w.srv.FailHost(w.firstPod()); err != nil {
			t.Fatal(err)
		}
		l.waitFor(l.says("resuming from the checkpoint at step"))
		record(t, "recovery", "pod lost mid-run on a network volume: from the loss to the job running again", "%s", seconds(time.Since(lost)))
		code := l.wait()
		w.checkFinished(l.output(), code)
		if out := l.output(); !strings.Contains(out, "from its outputs on network volume "+vol.ID) {
			t.Errorf("the recovery did not take the job up from the volume:\n%s", out)
		}
		if pods := w.srv.Pods(); len(pods) == 2 && pods[1].NetworkVolumeID != vol.ID {
			t.Errorf("the second pod is on volume %q, want %s", pods[1].NetworkVolumeID, vol.ID)
		}
		w.figures("pod lost mid-run on a network volume")
	})
	t.Run("capacity back after a delay", func(t *testing.T) {
		t.Parallel()
		// No slot: no pod exists while the launcher waits for capacity,
		// two minutes, and the one it makes then is the cell's last step.
		w := newRecoverWorld(t)
		const gpu = "NVIDIA GeForce RTX 4090"
		back := w.srv.Now().Add(capacityDelay)
		w.srv.OutOfStock(gpu, back)
		l := w.run(3, "--gpu", gpu, "--wait-for-gpu", (capacityDelay + 3*time.Minute).String())
		if !l.waitFor(l.says("no GPU available")) {
			t.Fatalf("no wait for capacity: %s", l.state())
		}
		code := l.wait()
		pods := w.srv.Pods()
		if code != 0 || len(pods) != 1 || pods[0].CreatedAt.Before(back) {
			t.Errorf("exit %d, pods %+v: want one pod, made once the GPU was back at %s", code, pods, back)
		}
		if len(pods) == 1 {
			record(t, "recovery", "capacity back after "+capacityDelay.String()+": from the GPU back to the pod's create", "%s", seconds(pods[0].CreatedAt.Sub(back)))
		}
		w.figures("capacity back after a delay")
	})
	t.Run("SIGKILL mid-recovery then attach", func(t *testing.T) {
		t.Parallel()
		holdPodSlot(t)
		w := newRecoverWorld(t)
		l := w.run(40, "--recover", "2", "--pull-every", "2s")
		w.waitPull(l)
		// The new pod's create hangs: the launcher is killed between the
		// lost pod's delete and the next create.
		w.srv.Fail("POST", "/v2/pods", runpodtest.Fault{Hang: true})
		if err := w.srv.FailHost(w.firstPod()); err != nil {
			t.Fatal(err)
		}
		hung := func() bool {
			for _, q := range w.srv.Requests() {
				if q.Method == "POST" && q.Path == "/v2/pods" && q.Fault {
					return true
				}
			}
			return false
		}
		if !l.waitFor(hung) {
			t.Fatalf("the recovery never got to its create: %s", l.state())
		}
		l.kill()
		w.srv.ClearFaults()
		m, _ := filepath.Glob(filepath.Join(w.stateDir, "runs", "*"))
		if len(m) != 1 {
			t.Fatalf("runs %v", m)
		}
		a := w.launch("attach", filepath.Base(m[0]))
		code := a.wait()
		w.checkFinished(l.output()+a.output(), code)
		w.figures("SIGKILL mid-recovery then attach")
	})
}
