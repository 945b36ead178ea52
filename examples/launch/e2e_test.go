package main_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// price is the fake's RTX 4090 price, the launcher's default GPU.
const price = 0.69

func args(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// The README's first command: the demo job end to end.
func TestRunDemo(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	began := time.Now()
	p := w.run(args([]string{"run"}, fast)...)
	elapsed := time.Since(began)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	out, errOut := p.stdout.String(), p.stderr.String()
	for i := 1; i <= 10; i++ {
		line := fmt.Sprintf("step %d/10 loss", i)
		if strings.Count(out, line) != 1 {
			t.Errorf("%q appears %d times", line, strings.Count(out, line))
		}
	}
	mustContain(t, "stdout", out, "training done\n")
	mustContain(t, "stderr", errOut, "watchdog verdict: ready", "job started", "job ended: exit code 0",
		"results downloaded to", "checkpoint.txt", "deleted", "cost: ~$")

	r := w.onlyRun()
	if r.Phase != state.PhaseDone || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("run %+v", r)
	}
	ckpt, err := os.ReadFile(filepath.Join(r.OutDir, "outputs", "checkpoint.txt"))
	if err != nil || string(ckpt) != "step=10\nloss=0.231\nreason=final\n" {
		t.Fatalf("checkpoint %q, %v", ckpt, err)
	}
	// The downloaded log is what was streamed.
	if log, _ := os.ReadFile(filepath.Join(r.OutDir, "job.log")); string(log) != out {
		t.Errorf("job.log differs from the streamed output:\n%s", log)
	}

	pod := w.pod(r)
	if pod.Status != runpodtest.StatusTerminated {
		t.Fatalf("pod %s", pod.Status)
	}
	bill := pod.Bill.USD
	if bill <= 0 || bill > price*elapsed.Hours()+1e-9 {
		t.Fatalf("bill %v for a run of %s", bill, elapsed)
	}
	// The printed cost counts from the create call: no less than the
	// bill, and not much more.
	if r.CostUSD < bill-1e-9 || r.CostUSD > bill+price*15/3600 {
		t.Fatalf("printed cost %v, bill %v", r.CostUSD, bill)
	}
	w.assertClean()
	w.assertPrivate(w.srv.APIKey())
}

// An image whose ENTRYPOINT ignores its arguments (a server's start
// script) cannot swallow the bootstrap: the launcher sends it as the pod's
// entrypoint, so the run goes as on any image (verdict ready, the job, the
// pod deleted) and the image's ENTRYPOINT never runs.
func TestRunOnAnImageWhoseEntrypointIgnoresItsArguments(t *testing.T) {
	t.Parallel()
	const image = "example/server-ignores-args:1"
	w := newWorld(t, runpodtest.WithImage(image, localpod.Image{
		Entrypoint: []string{"/usr/local/bin/serve"},
		Cmd:        []string{"--port", "8000"},
		Files:      map[string]string{"/usr/local/bin/serve": "#!/bin/sh\necho image server starting\nexec sleep 100000\n"},
	}))
	p := w.run(args([]string{"run", "--image", image}, fast, demo(2))...)
	if p.code != 0 {
		t.Fatalf("exit %d:\n%s", p.code, p.stderr.String())
	}
	mustContain(t, "stderr", p.stderr.String(), "watchdog verdict: ready", "job ended: exit code 0", "deleted")
	pod := w.pod(w.onlyRun())
	if pod.Image != image || pod.Status != runpodtest.StatusTerminated || len(pod.Argv) < 2 || pod.Argv[0] != "bash" || pod.Argv[1] != "-c" {
		t.Errorf("pod on %s, %s, ran %.2q", pod.Image, pod.Status, pod.Argv)
	}
	if log := w.srv.PodLog(pod.ID); strings.Contains(log, "image server starting") {
		t.Errorf("the image's ENTRYPOINT ran:\n%s", log)
	}
	w.assertClean()
}

// A job of one's own, with an HF token that reaches the job and nothing
// else, and a non-zero exit that is collected all the same.
func TestRunOwnJobWithToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	token := "hf_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "TokenValue"
	w.env = append(w.env, "MY_HF="+token)
	job := t.TempDir()
	script := `echo "hello from $(basename "$PWD")"
printf '%s' "$HF_TOKEN" > "$OVERBRAINER_OUTPUTS/token"
echo "FROM_POD_ENV=${OVERBRAINER_RUN_ID:-unset}"
exit 3
`
	if err := os.WriteFile(filepath.Join(job, "job.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p := w.run(args([]string{"run", "--job", job, "--cmd", "sh job.sh", "--hf-token-env", "MY_HF"}, fast)...)
	if p.code != 1 {
		t.Fatalf("exit %d, want 1", p.code)
	}
	r := w.onlyRun()
	mustContain(t, "stdout", p.stdout.String(), "hello from job\n", "FROM_POD_ENV="+r.ID+"\n")
	mustContain(t, "stderr", p.stderr.String(), "job ended: exit code 3", "the job failed with exit code 3")
	got, err := os.ReadFile(filepath.Join(r.OutDir, "outputs", "token"))
	if err != nil || string(got) != token {
		t.Fatalf("the job saw HF_TOKEN %q (%v)", got, err)
	}
	if r.ExitCode == nil || *r.ExitCode != 3 {
		t.Fatalf("exit code %v", r.ExitCode)
	}
	// The token went over SSH only.
	for what, s := range map[string]string{"stdout": p.stdout.String(), "stderr": p.stderr.String()} {
		if strings.Contains(s, token) {
			t.Errorf("the token is in the launcher's %s", what)
		}
	}
	for _, pod := range w.srv.Pods() {
		if strings.Contains(fmt.Sprint(pod.Env, pod.Args), token) || strings.Contains(w.srv.PodLog(pod.ID), token) {
			t.Errorf("the token reached pod %s's env, command or log", pod.ID)
		}
	}
	for _, req := range w.srv.Requests() {
		if strings.Contains(string(req.Body), token) || strings.Contains(fmt.Sprint(req.Header), token) {
			t.Errorf("the token was sent to the API: %s %s", req.Method, req.Path)
		}
	}
	w.assertClean()
	w.assertPrivate(token, w.srv.APIKey())
}

// runThenKill runs the demo job of steps steps, kills the launcher with
// SIGKILL at its step 3, and returns the launcher and its run.
func (w *world) runThenKill(steps int) (*proc, *state.Run) {
	w.t.Helper()
	p := w.start(args([]string{"run"}, fast, demo(steps))...)
	p.waitOutput(fmt.Sprintf("step 3/%d", steps), patience)
	p.signal(syscall.SIGKILL)
	p.wait(patience)
	return p, w.onlyRun()
}

// A client killed with SIGKILL leaves a running pod; attach resumes the
// output where it was and finishes the run.
func TestAttachAfterKill(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p, r := w.runThenKill(12)
	if r.Phase != state.PhaseRunning {
		t.Fatalf("phase %s after the kill", r.Phase)
	}
	if pod := w.pod(r); pod.Status != runpodtest.StatusRunning {
		t.Fatalf("pod %s after the kill", pod.Status)
	}
	before := p.stdout.String()

	// The end meets API errors: the delete call fails once (terminate
	// takes over), the secret's delete fails (rm finishes it). The pod's
	// own key is refused every way meanwhile: its watchdog deletes the
	// pod as soon as the results are marked retrieved, and would else
	// race the launcher's delete (and win it on a busy machine).
	w.srv.Fail("DELETE", "/v2/pods/"+r.PodID, runpodtest.Fault{Status: 400, Caller: r.PodID, Times: -1})
	w.srv.Fail("POST", "/v2/pods/"+r.PodID+"/action", runpodtest.Fault{Status: 400, Caller: r.PodID, Times: -1})
	w.srv.Fail("DELETE", "/v2/pods/"+r.PodID, runpodtest.Fault{Status: 400, Caller: runpodtest.CallerAccount})
	w.srv.Fail("DELETE", "/v2/account/secrets/*", runpodtest.Fault{Status: 400})
	a := w.run("attach", r.ID)
	if a.code != 0 {
		t.Fatalf("attach exit %d", a.code)
	}
	mustContain(t, "attach stderr", a.stderr.String(), "terminated (the delete call failed", "could not delete secret")
	if rm := w.run("rm", r.ID); rm.code != 0 {
		t.Fatalf("rm exit %d", rm.code)
	}
	after := a.stdout.String()
	mustContain(t, "attach stdout", after, "step 12/12", "training done")
	if strings.Contains(after, "step 1/12") {
		t.Errorf("attach replayed the output from the start:\n%s", after)
	}
	// Together, the two outputs hold every step.
	all := before + after
	for i := 1; i <= 12; i++ {
		mustContain(t, "the outputs", all, fmt.Sprintf("step %d/12 loss", i))
	}
	mustContain(t, "attach stderr", a.stderr.String(), "results downloaded", "cost: ~$")
	// On a loaded machine the 12 s job may end before attach is in: it
	// reads the rest of the output all the same.
	if !strings.Contains(a.stderr.String(), "the job is already running") &&
		!strings.Contains(a.stderr.String(), "the job has ended: reading the rest of its output from byte") {
		t.Errorf("attach neither followed the running job nor read the rest of its output:\n%s", a.stderr)
	}
	r = w.onlyRun()
	ckpt, _ := os.ReadFile(filepath.Join(r.OutDir, "outputs", "checkpoint.txt"))
	if !strings.HasPrefix(string(ckpt), "step=12\n") {
		t.Fatalf("checkpoint %q", ckpt)
	}
	w.assertClean()
}

// With its client gone for good, the pod's watchdog deletes it: at the
// deadline (after asking the job for a snapshot) once the job runs, at the
// end of the boot grace before.
func TestKilledClientLeavesThePodToItsWatchdog(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		args  []string
		until string
	}{
		{"deadline", args([]string{"--max-hours", "0.006", "--retrieve-grace", "4s"}, demo(600)), "step 2/600"},
		{"boot grace", []string{"--boot-grace", "4s"}, "created"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			began := time.Now()
			p := w.start(args([]string{"run"}, fast, c.args)...)
			p.waitOutput(c.until, patience)
			p.signal(syscall.SIGKILL)
			p.wait(patience)
			r := w.onlyRun()
			pod := w.waitPodGone(r, patience)
			// The pod's own key deleted it: its watchdog did.
			byWatchdog := false
			for _, req := range w.srv.Requests() {
				// Its status may be lost: the delete kills the
				// watchdog's curl with the pod.
				byWatchdog = byWatchdog || (req.Method == "DELETE" && req.Caller == pod.ID)
			}
			if !byWatchdog {
				t.Fatal("the pod was not deleted by its watchdog")
			}
			if max := price * time.Since(began).Hours(); pod.Bill.USD > max {
				t.Fatalf("bill %v > %v", pod.Bill.USD, max)
			}
			if c.name == "deadline" && time.Now().Before(r.Deadline) {
				t.Fatalf("the pod was deleted before its deadline %s", r.Deadline)
			}
			// The secret outlives a killed client: rm removes it.
			if len(w.srv.Secrets()) != 1 {
				t.Fatalf("secrets %v", w.srv.Secrets())
			}
			rm := w.run("rm", r.ID)
			if rm.code != 0 {
				t.Fatalf("rm exit %d", rm.code)
			}
			w.assertClean()
		})
	}
}

// Ctrl-C detaches; ls shows the run; stop asks for a checkpoint and
// collects it.
func TestDetachLsStop(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(args([]string{"run"}, fast, demo(600))...)
	p.waitOutput("step 2/600", patience)
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130", code)
	}
	mustContain(t, "stderr", p.stderr.String(), "detached from pod", "launch attach ")
	r := w.onlyRun()
	mustContain(t, "stderr", p.stderr.String(), "its output meanwhile: launch logs "+r.ID+" --follow")
	if r.Phase != state.PhaseDetached || w.pod(r).Status != runpodtest.StatusRunning {
		t.Fatalf("phase %s, pod %s", r.Phase, w.pod(r).Status)
	}

	ls := w.run("ls")
	if ls.code != 0 {
		t.Fatalf("ls exit %d", ls.code)
	}
	line := lineWith(ls.stdout.String(), r.ID)
	for _, want := range []string{"detached", w.pod(r).ID, "RUNNING", "~$", "ready"} {
		if !strings.Contains(line, want) {
			t.Errorf("ls line %q lacks %q", line, want)
		}
	}

	// logs shows the job's output, live from the pod while it runs; with
	// --follow until the job ends.
	lg := w.run("logs", r.ID, "--tail", "2")
	if lg.code != 0 || strings.Count(lg.stdout.String(), "\n") != 2 || !strings.Contains(lg.stdout.String(), "/600 loss") {
		t.Fatalf("logs RUN --tail 2: exit %d\n%s\n%s", lg.code, lg.stdout, lg.stderr)
	}
	followed := w.start("logs", r.ID, "--follow", "--tail", "1")

	s := w.run("stop", r.ID, "--wait", "3m") // the README's order: flags after the run
	if s.code != 0 {
		t.Fatalf("stop exit %d", s.code)
	}
	if code := followed.wait(patience); code != 0 {
		t.Fatalf("logs --follow: exit %d at the job's end", code)
	}
	mustContain(t, "logs --follow", followed.stdout.String(), "snapshot requested (stop): checkpointing and stopping")
	// Once collected, the downloaded copy.
	lg = w.run("logs", r.ID, "--tail", "1")
	if lg.code != 0 || !strings.HasPrefix(lg.stdout.String(), "checkpoint: step ") || lg.stdout.String() != lastLine(followed.stdout.String())+"\n" {
		t.Errorf("logs RUN after the stop: exit %d\n%s\n%s", lg.code, lg.stdout, lg.stderr)
	}
	mustContain(t, "stop stdout", s.stdout.String(), "snapshot requested (stop): checkpointing and stopping")
	mustContain(t, "stop stderr", s.stderr.String(), "snapshot requested (stop)", "results downloaded", "cost: ~$",
		"the job checkpointed on request (stop): step ")
	r = w.onlyRun()
	ckpt, _ := os.ReadFile(filepath.Join(r.OutDir, "outputs", "checkpoint.txt"))
	if !strings.Contains(string(ckpt), "reason=snapshot stop\n") {
		t.Fatalf("checkpoint %q", ckpt)
	}
	w.assertClean()
	ls = w.run("ls")
	if line := lineWith(ls.stdout.String(), r.ID); !strings.Contains(line, "done") || !strings.Contains(line, "gone") {
		t.Errorf("ls after stop: %q", line)
	}
}

// The lease the client renews while the output progresses keeps the pod
// past its deadline: the run ends as it would without one.
func TestLeaseHoldsThePodPastTheDeadline(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// The deadline comes some 15 s into the job, which runs 30 s.
	p := w.run(args([]string{"run", "--max-hours", "0.005"}, fast, demo(30))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	r := w.onlyRun()
	if !w.pod(r).EndedAt.After(r.Deadline.Add(5 * time.Second)) {
		t.Fatalf("the run ended at %s, not well past its deadline %s", w.pod(r).EndedAt, r.Deadline)
	}
	mustContain(t, "stdout", p.stdout.String(), "step 30/30", "training done")
	if strings.Contains(p.stderr.String(), "snapshot requested") {
		t.Error("the watchdog asked for a deadline snapshot while the lease was held")
	}
	w.assertClean()
}

// With --down-on-interrupt, Ctrl-C collects what there is and deletes.
func TestDownOnInterrupt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(args([]string{"run", "--down-on-interrupt"}, fast, demo(600))...)
	p.waitOutput("checkpoint: step 5", patience)
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130", code)
	}
	mustContain(t, "stderr", p.stderr.String(), "results downloaded", "deleted", "cost: ~$")
	r := w.onlyRun()
	ckpt, _ := os.ReadFile(filepath.Join(r.OutDir, "outputs", "checkpoint.txt"))
	// The checkpoint the job had written when Ctrl-C came (step 5 or a
	// later one on a slow machine).
	if !strings.Contains(string(ckpt), "reason=periodic\n") {
		t.Fatalf("checkpoint %q", ckpt)
	}
	w.assertClean()
}

// Ctrl-C before the job started deletes the pod: left to its watchdog it
// would bill its boot grace for nothing. With --detach it is left.
func TestInterruptBeforeTheJobDeletes(t *testing.T) {
	for _, detach := range []bool{false, true} {
		t.Run(fmt.Sprintf("detach=%v", detach), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			// The pod is not seen running while its GET fails, so the
			// job cannot start before the Ctrl-C; the watchdog's probe
			// keeps trying meanwhile.
			w.srv.Fail("GET", "/v2/pods/*", runpodtest.Fault{Status: 503, Times: -1})
			run := args([]string{"run", "--probe-tries", "1000"}, fast, demo(600))
			if detach {
				run = append(run, "--detach")
			}
			p := w.start(run...)
			p.waitOutput(") created: ", patience)
			time.Sleep(time.Second)
			w.srv.ClearFaults()
			p.signal(syscall.SIGINT)
			if code := p.wait(patience); code != 130 {
				t.Fatalf("exit %d after Ctrl-C, want 130", code)
			}
			r := w.onlyRun()
			if detach {
				mustContain(t, "stderr", p.stderr.String(), "detached from pod")
				if r.Phase != state.PhaseDetached || w.pod(r).Status == runpodtest.StatusTerminated {
					t.Fatalf("phase %s, pod %s: --detach left nothing to its watchdog", r.Phase, w.pod(r).Status)
				}
				if rm := w.run("rm", r.ID); rm.code != 0 {
					t.Fatalf("rm exit %d: %s", rm.code, rm.stderr)
				}
			} else {
				mustContain(t, "stderr", p.stderr.String(), "deleted", "cost: ~$")
				if strings.Contains(p.stderr.String(), "detached") || w.pod(r).Status != runpodtest.StatusTerminated {
					t.Fatalf("pod %s after a Ctrl-C before the job:\n%s", w.pod(r).Status, p.stderr)
				}
			}
			w.assertClean()
		})
	}
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// rm refuses a run whose results were not collected, says plainly when
// only a stop worked, and --all-orphans removes what no local run knows
// and is provably abandoned, listing the rest.
func TestRmAndOrphans(t *testing.T) {
	t.Parallel()
	w := newWorld(t, runpodtest.AllowPodsLeft(), runpodtest.WithExitedOnEnd()) // the orphan "exit 0" must stay EXITED
	p := w.start(args([]string{"run", "--volume-gb", "10"}, fast, demo(600))...)
	p.waitOutput("step 1/600", patience)
	p.signal(syscall.SIGINT)
	p.wait(patience)
	r := w.onlyRun()

	// Orphans: pods and secrets of runs this machine never knew; one of
	// them provably abandoned, its container ended.
	api := checkedfake.Client(t, w.srv)
	newOrphan := func(script string) (*runpod.Pod, string) {
		// Another machine's run, started two hours ago: its secret is past
		// the secret grace once its pod is gone.
		id, env := otherRun(t, time.Now().Add(-2*time.Hour))
		p, err := api.CreatePod(context.Background(), runpod.CreatePodRequest{
			Name: podenv.PodName(id), Image: "x", GPUTypeID: "NVIDIA GeForce RTX 4090", Command: []string{"sh", "-c", script},
			Env: env, // the run marker: unmarked pods are never removed
		})
		if err != nil {
			t.Fatal(err)
		}
		w.srv.AddSecret(podenv.HostKeySecretName(id), "c2VjcmV0")
		return p, id
	}
	orphan, orphanID := newOrphan("exec sleep 600")
	exited, exitedID := newOrphan("exit 0")
	w.srv.AddSecret("someone_elses_secret", "x")
	shtest.Eventually(t, patience, func() bool { p, _ := w.srv.Pod(exited.ID); return p.Status == runpodtest.StatusExited }, "the orphan %s did not exit", exited.ID)
	ls := w.run("ls")
	mustContain(t, "ls", lineWith(ls.stdout.String(), orphanID), "orphan", orphan.ID)
	mustContain(t, "ls", lineWith(ls.stdout.String(), exitedID), "orphan", exited.ID, "EXITED (still billing)")

	// The job runs and its results were not collected: rm refuses.
	rm := w.run("rm", r.ID)
	if rm.code != 1 || w.pod(r).Status != runpodtest.StatusRunning {
		t.Fatalf("rm of a running job: exit %d, pod %s", rm.code, w.pod(r).Status)
	}
	mustContain(t, "rm stderr", rm.stderr.String(), "results were not collected", "launch stop "+r.ID, "--force")

	// Only the stop action works: the volume still bills, and rm says so.
	w.srv.Fail("DELETE", "/v2/pods/"+r.PodID, runpodtest.Fault{Status: 400, Times: -1})
	w.srv.Fail("POST", "/v2/pods/"+r.PodID+"/action", runpodtest.Fault{Status: 400, Times: 1})
	rm = w.run("rm", r.ID, "--force") // as the README writes it
	if rm.code != 1 {
		t.Fatalf("rm exit %d, want 1", rm.code)
	}
	mustContain(t, "rm stderr", rm.stderr.String(), "could only be STOPPED", "STILL BILLS")
	if pod := w.pod(r); pod.Status != runpodtest.StatusExited || !pod.Billing {
		t.Fatalf("pod %s billing %v", pod.Status, pod.Billing)
	}
	if got := w.onlyRunOf(r.ID).Phase; got != state.PhaseStopped {
		t.Fatalf("phase %s", got)
	}
	w.srv.ClearFaults()
	if rm := w.run("rm", r.ID); rm.code != 0 {
		t.Fatalf("second rm exit %d", rm.code)
	}
	if pod := w.pod(r); pod.Status != runpodtest.StatusTerminated {
		t.Fatalf("pod %s after rm", pod.Status)
	}

	// A launcher SIGKILLed before it removed its run's secret leaves a
	// known run, its pod gone, its secret still there. While a launcher
	// holds the run's lock the secret stays: that launcher cleans up.
	left := "overbrainer_host_key_" + r.ID
	w.srv.AddSecret(left, "c2VjcmV0")
	st, err := state.Open(w.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := st.TryLock(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The sweeper's exited grace holds: the orphan that exited a moment
	// ago may be restarting, and is left.
	o := w.run("rm", "--all-orphans")
	if o.code != 0 {
		t.Fatalf("rm --all-orphans exit %d\n%s", o.code, o.stderr)
	}
	if pod, _ := w.srv.Pod(exited.ID); pod.Status != runpodtest.StatusExited {
		t.Fatalf("rm --all-orphans deleted an orphan within the exited grace: %s\n%s", pod.Status, o.stderr)
	}
	o = w.run("rm", "--all-orphans", "--exited-grace", "1ns")
	lock.Unlock()
	if o.code != 0 {
		t.Fatalf("rm --all-orphans exit %d", o.code)
	}
	// The abandoned orphan goes with its secret; the running one, maybe
	// another machine's live run, is listed and left with its secret.
	mustContain(t, "rm --all-orphans", o.stderr.String(), "deleted pod "+exited.ID, "deleted secret "+podenv.HostKeySecretName(exitedID),
		"keep pod "+orphan.ID, "launch ls")
	if !slices.ContainsFunc(w.srv.Secrets(), func(s runpodtest.Secret) bool { return s.Name == left }) {
		t.Fatalf("rm --all-orphans removed the secret of a run a launcher holds: %s", o.stderr.String())
	}
	if pod, _ := w.srv.Pod(orphan.ID); pod.Status != runpodtest.StatusRunning {
		t.Fatalf("rm --all-orphans left the running orphan %s", pod.Status)
	}
	if pod, _ := w.srv.Pod(exited.ID); pod.Status != runpodtest.StatusTerminated {
		t.Fatalf("abandoned orphan %s", pod.Status)
	}
	// Its owner deletes the running one: then its secret is an orphan.
	if _, err := api.DeletePod(context.Background(), orphan.ID); err != nil {
		t.Fatal(err)
	}
	o = w.run("rm", "--all-orphans")
	if o.code != 0 {
		t.Fatalf("second rm --all-orphans exit %d", o.code)
	}
	mustContain(t, "second rm --all-orphans", o.stderr.String(), "secret "+left+" of run "+r.ID+" deleted",
		"deleted secret "+podenv.HostKeySecretName(orphanID))
	secrets := w.srv.Secrets()
	if len(secrets) != 1 || secrets[0].Name != "someone_elses_secret" {
		t.Fatalf("secrets left: %v", secrets)
	}
	if len(w.srv.Billing()) != 0 {
		t.Fatalf("billing: %v", w.srv.Billing())
	}
}

func (w *world) onlyRunOf(id string) *state.Run {
	w.t.Helper()
	for _, r := range w.runs() {
		if r.ID == id {
			return r
		}
	}
	w.t.Fatalf("no run %s", id)
	return nil
}

// A cost cap ends the run: the watchdog asks for a snapshot at the planned
// time, the job checkpoints, the client collects it.
func TestCostCapEndsTheRunWithASnapshot(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// 120 s of money; the snapshot is asked 100 s before the end, which
	// leaves a loaded machine time to collect before the cap.
	maxUSD := price * 120 / 3600
	p := w.run(args([]string{"run", "--max-cost-usd", strconv.FormatFloat(maxUSD, 'f', 6, 64)}, fast,
		[]string{"--snapshot-lead", "100s"}, demo(600))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	mustContain(t, "stderr", p.stderr.String(), "cost cap $", "snapshot requested (cost)", "results downloaded")
	mustContain(t, "stdout", p.stdout.String(), "snapshot requested (cost): checkpointing and stopping")
	w.costSnapshotCollected(maxUSD)
}

// Every failure once the pod exists ends with the pod deleted, or left to
// its armed watchdog when asked; never with a pod nobody guards.
func TestFailuresDeleteThePod(t *testing.T) {
	t.Parallel()
	fifoJob := func(t *testing.T) string {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, c := range []struct {
		name   string
		opts   []runpodtest.Option
		setup  func(t *testing.T, w *world)
		args   func(t *testing.T) []string
		want   []string // any one of them
		noPod  bool
		verify func(t *testing.T, w *world, r *state.Run)
	}{
		{
			name: "secret create fails",
			setup: func(t *testing.T, w *world) {
				w.srv.Fail("POST", "/v2/account/secrets", runpodtest.Fault{Status: 400, Times: 1})
			},
			want:  []string{"creating the host key secret"},
			noPod: true,
		},
		{
			name: "pod create fails",
			setup: func(t *testing.T, w *world) {
				w.srv.Fail("POST", "/v2/pods", runpodtest.Fault{Status: 400, Detail: "no GPU"})
			},
			want:  []string{"creating the pod", "no GPU"},
			noPod: true,
		},
		{
			name: "API fails while waiting",
			setup: func(t *testing.T, w *world) {
				w.srv.Fail("GET", "/v2/pods/*", runpodtest.Fault{Status: 400, Times: -1, Caller: runpodtest.CallerAccount})
			},
			args: func(*testing.T) []string { return []string{"--start-timeout", "3s"} },
			want: []string{"no answer for 3s", "deleted"},
		},
		{
			name: "SSH never answers",
			args: func(*testing.T) []string {
				return []string{"--pod-env", "OVERBRAINER_SSHD=/bin/false"}
			},
			want: []string{"SSH", "pod log: "},
			// The pod died before its SSH answered: its log, kept in
			// the run's state, shows what it printed. The pod's death
			// (its watchdog deletes it once the bootstrap failed) ends
			// the wait, not a start timeout that a busy machine could
			// reach before the bootstrap failed.
			verify: func(t *testing.T, w *world, r *state.Run) {
				if r.Phase != state.PhaseFailed {
					t.Fatalf("phase %s", r.Phase)
				}
				printed := strings.Fields(w.srv.PodLog(r.PodID))
				if len(printed) == 0 {
					t.Fatal("the pod printed nothing")
				}
				logs := w.run("logs", "--pod", "--tail", "0", r.ID)
				if logs.code != 0 {
					t.Fatalf("logs: exit %d: %s", logs.code, logs.stderr.String())
				}
				mustContain(t, "logs", logs.stdout.String(), " container ", printed[0])
				if st, err := os.Stat(filepath.Join(w.stateDir, "runs", r.ID, "pod.log")); err != nil || st.Mode().Perm() != 0o600 {
					t.Errorf("pod.log: %v, want mode 0600", err)
				}
			},
		},
		{
			name: "verdict failed",
			opts: []runpodtest.Option{runpodtest.WithProvisioningDelay(3 * time.Second)},
			setup: func(t *testing.T, w *world) {
				go func() {
					for i := 0; i < 600; i++ {
						if pods := w.srv.Pods(); len(pods) > 0 {
							w.srv.Fail("GET", "/v2/pods/"+pods[0].ID, runpodtest.Fault{Status: 401, Times: -1, Caller: pods[0].ID})
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}()
			},
			args: func(*testing.T) []string { return []string{"--probe-tries", "1"} },
			want: []string{"verdict: failed http_401", "deleted"},
		},
		{
			name: "upload fails",
			args: func(t *testing.T) []string { return []string{"--job", fifoJob(t), "--cmd", "true"} },
			want: []string{"uploading the job", "not a regular file", "deleted"},
		},
		{
			name: "upload fails, pod left to the watchdog",
			args: func(t *testing.T) []string {
				return []string{"--job", fifoJob(t), "--cmd", "true", "--on-failure", "leave", "--boot-grace", "30s"}
			},
			want: []string{"left to its watchdog", "boot grace"},
			verify: func(t *testing.T, w *world, r *state.Run) {
				if r.Phase != state.PhaseLeftToPod {
					t.Fatalf("phase %s", r.Phase)
				}
				// No job: the watchdog's boot grace deletes the pod.
				w.waitPodGone(r, patience)
				if rm := w.run("rm", r.ID); rm.code != 0 {
					t.Fatalf("rm exit %d", rm.code)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, c.opts...)
			if c.setup != nil {
				c.setup(t, w)
			}
			extra := []string{}
			if c.args != nil {
				extra = c.args(t)
			}
			p := w.run(args([]string{"run"}, fast, extra)...)
			if p.code != 1 {
				t.Fatalf("exit %d, want 1", p.code)
			}
			for _, want := range c.want {
				mustContain(t, "stderr", p.stderr.String(), want)
			}
			r := w.onlyRun()
			if c.noPod && len(w.srv.Pods()) != 0 {
				t.Fatalf("a pod was made: %+v", w.srv.Pods())
			}
			if c.verify != nil {
				c.verify(t, w, r)
			} else if r.Phase != state.PhaseFailed {
				t.Fatalf("phase %s", r.Phase)
			}
			w.assertClean()
			if r.CostUSD < 0 || math.IsNaN(r.CostUSD) {
				t.Fatalf("cost %v", r.CostUSD)
			}
		})
	}
}

// A network volume that fills is grown (up to --max-volume-gb) before the
// watchdog's disk rule would stop the job, and the watchdog is told the
// new size.
func TestNetworkVolumeGrows(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	vol := w.srv.AddNetworkVolume("vol-test", 10)
	// The watchdog measures the volume with this du: 8.8 GB, over 92% of
	// the 9.4 usable GB and under the watchdog's 97%. It lives on the
	// volume, which the pod mounts at /workspace (its /tmp is its own).
	du := "#!/bin/sh\nprintf '8600000\\t%s\\n' \"$3\"\n"
	if err := os.WriteFile(filepath.Join(vol.Dir, "fake-du"), []byte(du), 0o755); err != nil {
		t.Fatal(err)
	}
	p := w.run(args([]string{"run", "--network-volume", "vol-test", "--max-volume-gb", "20", "--pod-env", "OVERBRAINER_DU=/workspace/fake-du"}, fast, demo(8))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	mustContain(t, "stderr", p.stderr.String(), "network volume vol-test grown from 10 to 13 GB")
	if strings.Contains(p.stderr.String(), "snapshot requested") {
		t.Error("the watchdog asked for a disk snapshot")
	}
	vols := w.srv.NetworkVolumes()
	if len(vols) != 1 || vols[0].SizeGB != 13 {
		t.Fatalf("volumes %+v", vols)
	}
	if r := w.onlyRun(); r.VolumeGB != 13 {
		t.Fatalf("run volume %d GB", r.VolumeGB)
	}
	w.assertClean()
}

// The README's quick start as it shows it: "launch run" with no key, so
// the in-process emulator, on a terminal. What the terminal shows is the
// README's sample block line for line, once both are normalised
// (normaliseSample: ids, times, ports, amounts, the byte count).
func TestLocalRun(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	code, screen := l.onTerminal("run")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, screen)
	}
	got := screenLines(screen)
	// The README shows the default state directory.
	got = strings.ReplaceAll(got, l.stateDir, "~/.config/overbrainer/launch")
	// A known stray warning of the retrieved marker's write (issue 43,
	// "Smaller"), fixed apart: not part of the sample.
	got = regexp.MustCompile(`(?m)^launch: writing \.pod/retrieved on the pod: .*\n`).ReplaceAllString(got, "")
	want := readmeSample(t, "<!-- TestLocalRun")
	if g, w := normaliseSample(got), normaliseSample(want); g != w {
		t.Errorf("the README's sample output is not what launch run prints now; its lines, normalised, against a real run's (- README, + now):\n%s\nthe whole run:\n%s",
			cmp.Diff(strings.Split(w, "\n"), strings.Split(g, "\n")), got)
	}
}

// A local-server outlives the launchers: a --local run detaches on Ctrl-C,
// and ls and stop find it again.
func TestLocalServerDetachAndStop(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	srv, p := l.detachedInServer()
	mustContain(t, "stderr", p.stderr.String(), "using the local-server", "detached from pod")
	id := strings.Fields(lineWith(p.stderr.String(), "launch: run "))[2]

	ls := l.run("--local", "ls")
	mustContain(t, "ls", lineWith(ls.stdout.String(), id), "RUNNING", "detached")
	s := l.run("--local", "stop", id)
	if s.code != 0 {
		t.Fatalf("stop exit %d", s.code)
	}
	mustContain(t, "stop", s.stderr.String(), "results downloaded", "deleted")

	srv.signal(syscall.SIGINT)
	if code := srv.wait(patience); code != 0 {
		t.Fatalf("local-server exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(l.stateDir, "local-server.json")); err == nil {
		t.Fatal("local-server.json left behind")
	}
}

// --keep-pod: the results are collected, and the pod stays, the watchdog's
// rules lifted, until rm.
func TestKeepPod(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.run(args([]string{"run", "--keep-pod"}, fast, demo(2))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	mustContain(t, "stderr", p.stderr.String(), "results downloaded", "is kept (--keep-pod)", "launch rm ")
	r := w.onlyRun()
	// The retrieved marker is there and the watchdog ticks every second:
	// a few ticks later the pod still runs.
	time.Sleep(3 * time.Second)
	if pod := w.pod(r); pod.Status != runpodtest.StatusRunning {
		t.Fatalf("kept pod %s", pod.Status)
	}
	if rm := w.run("rm", r.ID); rm.code != 0 {
		t.Fatalf("rm exit %d", rm.code)
	}
	w.assertClean()
}

// stop from another terminal while run follows: stop only asks, run
// collects the checkpoint.
func TestStopWhileFollowed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(args([]string{"run"}, fast, demo(600))...)
	p.waitOutput("step 2/600", patience)
	r := w.onlyRun()
	s := w.run("stop", r.ID, "--wait", "3m") // the README's order: flags after the run
	if s.code != 0 {
		t.Fatalf("stop exit %d", s.code)
	}
	mustContain(t, "stop stderr", s.stderr.String(), "another launcher follows run")
	if code := p.wait(patience); code != 0 {
		t.Fatalf("run exit %d", code)
	}
	mustContain(t, "run stdout", p.stdout.String(), "snapshot requested (stop): checkpointing and stopping")
	mustContain(t, "run stderr", p.stderr.String(), "results downloaded", "deleted")
	ckpt, _ := os.ReadFile(filepath.Join(r.OutDir, "outputs", "checkpoint.txt"))
	if !strings.Contains(string(ckpt), "reason=snapshot stop\n") {
		t.Fatalf("checkpoint %q", ckpt)
	}
	w.assertClean()
}

// A job that replaces its run directory's .pod with a symlink to a
// directory outside the run directory: once the pod restarts, its watchdog
// finds the symlink and deletes the pod at once (pod_dir_unsafe), and attach
// and ls say why in words. The watchdog's own delete calls fail here, so
// that its reason is still there when attach looks (on Runpod the pod would
// be gone within seconds); the launcher then deletes the pod itself.
func TestPodDirSymlinkIsExplained(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	vol := w.srv.AddNetworkVolume("vol-unsafe", 10)
	job := t.TempDir()
	script := `run=$(dirname "$OVERBRAINER_OUTPUTS")
outside=$(dirname "$run")/not-the-run
echo "waiting for go"
while [ ! -f "$run/go" ]; do sleep 0.2; done
mv "$run/.pod" "$outside" && ln -s "$outside" "$run/.pod" || exit 1
echo "replaced .pod"
exit 7
`
	if err := os.WriteFile(filepath.Join(job, "job.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p := w.start(args([]string{"run", "--network-volume", "vol-unsafe", "--job", job, "--cmd", "sh job.sh", "--retrieve-grace", "1h"}, fast)...)
	p.waitOutput("waiting for go", patience)
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130", code)
	}
	r := w.onlyRun()
	// The run directory lives on the volume, which the pod mounts at
	// /workspace.
	rel, ok := strings.CutPrefix(r.RunDir, "/workspace/")
	if !ok {
		t.Fatalf("run dir %s is not on the volume", r.RunDir)
	}
	runDir := filepath.Join(vol.Dir, rel)
	if err := os.WriteFile(filepath.Join(runDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	shtest.Eventually(t, patience, func() bool {
		fi, err := os.Lstat(filepath.Join(runDir, ".pod"))
		_, cerr := os.Stat(filepath.Join(runDir, "exit_code"))
		return err == nil && fi.Mode()&os.ModeSymlink != 0 && cerr == nil
	}, "the job did not replace .pod and end")

	podID := r.PodID
	for _, call := range [][2]string{{"DELETE", "/v2/pods/" + podID}, {"POST", "/v2/pods/" + podID + "/action"}} {
		w.srv.Fail(call[0], call[1], runpodtest.Fault{Status: 403, Times: -1, Caller: podID})
	}
	api := checkedfake.Client(t, w.srv)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := api.PodAction(ctx, podID, runpod.ActionRestart); err != nil {
		t.Fatal(err)
	}
	// The restarted watchdog made .pod a directory again, and decided.
	log := filepath.Join(runDir, ".pod", "watchdog.log")
	shtest.Eventually(t, patience, func() bool {
		fi, err := os.Lstat(filepath.Join(runDir, ".pod"))
		b, _ := os.ReadFile(log)
		return err == nil && fi.IsDir() && strings.Contains(string(b), "delete_reason reason=pod_dir_unsafe")
	}, "the restarted watchdog did not delete by pod_dir_unsafe")

	a := w.run("attach", r.ID)
	if a.code != 1 {
		t.Fatalf("attach exit %d, want 1 (the job's exit code 7)", a.code)
	}
	errOut := a.stderr.String()
	mustContain(t, "attach stderr", errOut, "watchdog is deleting it (pod_dir_unsafe): SAFETY STOP",
		"symbolic link", "deleted the pod at once", "Check what replaced .pod",
		"job ended: exit code 7", "results downloaded", "pod "+podID+" deleted")
	if n := strings.Count(errOut, "(pod_dir_unsafe)"); n != 1 {
		t.Errorf("the reason was said %d times:\n%s", n, errOut)
	}
	mustContain(t, "attach stdout", a.stdout.String(), "replaced .pod")
	if r = w.onlyRun(); r.DeleteReason != "pod_dir_unsafe" {
		t.Errorf("run.json delete reason %q", r.DeleteReason)
	}

	ls := w.run("ls")
	if ls.code != 0 {
		t.Fatalf("ls exit %d", ls.code)
	}
	mustContain(t, "ls", lineWith(ls.stdout.String(), r.ID), "pod_dir_unsafe")
	mustContain(t, "ls", ls.stdout.String(), "DELETE REASON", "\npod_dir_unsafe: SAFETY STOP: the run directory's .pod was a symlink")
	w.assertClean()
}

// Real keys, for a pod env that validates.
const (
	testClientKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcomaqb8ckRepkDHH1CfKQjIlXD1MGWnmwCZJZcsNG3"
	testHostKey   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV"
)

// otherRun is the id and pod env of a run of another machine, started at
// start, its deadline an hour away.
func otherRun(t *testing.T, start time.Time) (string, map[string]string) {
	t.Helper()
	id, err := podenv.NewRunID(start)
	if err != nil {
		t.Fatal(err)
	}
	env, err := podenv.Settings{RunID: id, Workdir: "/workspace/overbrainer",
		Rules:         podenv.Rules{Deadline: time.Now().Add(time.Hour)},
		AuthorizedKey: testClientKey, Claim: testHostKey}.Env()
	if err != nil {
		t.Fatal(err)
	}
	return id, env
}
