package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// newAPIWorld is a world whose fake runs no pods: for the commands that
// only talk to the API and the state directory.
func newAPIWorld(t *testing.T) *world {
	t.Helper()
	srv := checkedfake.NewTestServer(t, runpodtest.AllowPodsLeft())
	return &world{t: t, srv: srv, stateDir: filepath.Join(t.TempDir(), "state")}
}

// seedRun writes a run into the state directory, its job started and its
// results not collected, with a RUNNING pod in the fake under its name.
func (w *world) seedRun(id string) (*state.Run, string) {
	w.t.Helper()
	podID := w.srv.AddPods(runpodtest.SeedPod{Name: podenv.PodNamePrefix + id, Env: map[string]string{podenv.RunIDEnv: id}})[0]
	st, err := state.Open(w.stateDir)
	if err != nil {
		w.t.Fatal(err)
	}
	now := time.Now()
	r := &state.Run{Record: guard.Record{
		ID: id, PodName: podenv.PodNamePrefix + id, PodID: podID, APIURL: w.srv.BaseURL(),
		Phase: state.PhaseDetached, BillingStart: now, JobStarted: now,
	}, Created: now, OutDir: filepath.Join(st.RunPath(id), "results")}
	if err := st.Create(r); err != nil {
		w.t.Fatal(err)
	}
	return r, podID
}

// The README writes flags after the run id: "rm RUN --force" removes that
// run with --force, and never reads --force as a second run.
func TestFlagsAfterTheRunID(t *testing.T) {
	t.Parallel()
	w := newAPIWorld(t)
	r, podID := w.seedRun("20260101-000000-aaaa")

	rm := w.run("rm", r.ID)
	if rm.code != 1 {
		t.Fatalf("rm of an uncollected run: exit %d, want 1", rm.code)
	}
	mustContain(t, "rm stderr", rm.stderr.String(), "results were not collected", "--force")
	if p, _ := w.srv.Pod(podID); p.Status != runpodtest.StatusRunning {
		t.Fatalf("rm without --force left the pod %s", p.Status)
	}

	rm = w.run("rm", r.ID, "--force")
	if rm.code != 0 {
		t.Fatalf("rm RUN --force: exit %d", rm.code)
	}
	if strings.Contains(rm.stderr.String(), `"--force"`) || strings.Contains(rm.stderr.String(), "rm --force") {
		t.Errorf("rm read --force as a run id:\n%s", rm.stderr)
	}
	if p, _ := w.srv.Pod(podID); p.Status != runpodtest.StatusTerminated {
		t.Fatalf("rm RUN --force: pod %s", p.Status)
	}
	if got := w.onlyRunOf(r.ID).Phase; got != state.PhaseRemoved {
		t.Fatalf("phase %s after rm", got)
	}

	// logs RUN --tail 5: the last five lines of the kept pod log.
	var log strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&log, "2026-01-01T00:00:00Z container line %d\n", i)
	}
	st, _ := state.Open(w.stateDir)
	if err := os.WriteFile(filepath.Join(st.RunPath(r.ID), "pod.log"), []byte(log.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := w.run("logs", r.ID, "--pod", "--tail", "5")
	if logs.code != 0 {
		t.Fatalf("logs RUN --tail 5: exit %d", logs.code)
	}
	if got := strings.Count(logs.stdout.String(), "\n"); got != 5 || !strings.HasPrefix(logs.stdout.String(), "2026-01-01T00:00:00Z container line 8\n") {
		t.Fatalf("logs RUN --tail 5 printed:\n%s", logs.stdout)
	}
	// A global flag may come last too.
	if ls := w.run("ls", "-v"); ls.code != 0 || !strings.Contains(ls.stdout.String(), r.ID) {
		t.Fatalf("ls -v: exit %d\n%s", ls.code, ls.stdout)
	}
}

// A bad flag, a bad flag value or a bad argument exits 2 with the
// command's usage line, and does nothing.
func TestBadCommandLineExitsTwo(t *testing.T) {
	t.Parallel()
	w := newAPIWorld(t)
	r, podID := w.seedRun("20260101-000000-bbbb")
	for _, c := range []struct {
		args  []string
		usage string
		says  string
	}{
		{[]string{"stop", r.ID, "--wait", "soon"}, "usage: launch stop [flags] RUN", `invalid argument "soon" for "--wait"`},
		{[]string{"logs", r.ID, "--tail", "five"}, "usage: launch logs [flags] RUN", `invalid argument "five"`},
		{[]string{"rm", r.ID, "--forse"}, "usage: launch rm [flags]", "unknown flag: --forse"},
		{[]string{"run", "--max-hours", "-1"}, "usage: launch run [flags]", "--max-hours must be between"},
		{[]string{"run", "--gpu-count", "two"}, "usage: launch run [flags]", `invalid argument "two"`},
		{[]string{"run", "--wait-for-gpu", "-1s"}, "usage: launch run [flags]", "--wait-for-gpu: -1s is negative"},
		{[]string{"run", "--stall-after", "-1m"}, "usage: launch run [flags]", "want a positive duration, or off"},
		{[]string{"run", "--stall-after", "never"}, "usage: launch run [flags]", "want a duration, or off"},
		{[]string{"run", "--min-gpu-util", "101"}, "usage: launch run [flags]", "--min-gpu-util: 101 is more than 100 percent"},
		{[]string{"run", "--keep-idle", "10m"}, "usage: launch run [flags]", "--keep-idle needs --keep-pod"},
		{[]string{"run", "--keep-pod", "--keep-idle", "-1s"}, "usage: launch run [flags]", "--keep-idle: -1s is negative"},
		// What guard refuses, said by the flag that set it.
		{[]string{"run", "--gpu-count", "-1"}, "usage: launch run [flags]", "--gpu-count: -1 is less than 1"},
		{[]string{"run", "--gpu-count", "0"}, "usage: launch run [flags]", "--gpu-count must be at least 1"},
		{[]string{"run", "--cloud", "MOON"}, "usage: launch run [flags]", `--cloud: "MOON" is neither SECURE nor COMMUNITY`},
		{[]string{"run", "--volume-gb", "5", "--network-volume", "v1"}, "usage: launch run [flags]", "--volume-gb: is set with NetworkVolumeID"},
		{[]string{"run", "--workdir", "rel"}, "usage: launch run [flags]", `--workdir: "rel" is not absolute`},
		{[]string{"run", "--max-hours", "0"}, "usage: launch run [flags]", "--max-hours: is not set, and Keep is not"},
		{[]string{"run", "--recover", "-1"}, "usage: launch run [flags]", "--recover: -1 is negative"},
		{[]string{"run", "--max-cost-usd", "-1"}, "usage: launch run [flags]", "--max-cost-usd: -1 is negative"},
		{[]string{"run", "--poll", "0"}, "usage: launch run [flags]", "--poll: 0s is not positive"},
		{[]string{"run", "--lease-every", "1h"}, "usage: launch run [flags]", "--lease-every: 1h0m0s is not shorter than the lease's lifetime"},
		{[]string{"gpus", "extra"}, "usage: launch gpus [flags]", "takes no arguments"},
		{[]string{"run", "--cmd", ""}, "usage: launch run [flags]", "--cmd is empty"},
		{[]string{"nonesuch"}, "usage: launch [global flags] COMMAND", `unknown command "nonesuch"`},
	} {
		p := w.run(c.args...)
		if p.code != 2 {
			t.Errorf("launch %s: exit %d, want 2\n%s", strings.Join(c.args, " "), p.code, p.stderr)
			continue
		}
		mustContain(t, "launch "+strings.Join(c.args, " "), p.stderr.String(), c.usage, c.says)
	}
	if p, _ := w.srv.Pod(podID); p.Status != runpodtest.StatusRunning {
		t.Fatalf("a bad command line touched the pod: %s", p.Status)
	}
	// -h is help, not an error.
	if p := w.run("stop", "-h"); p.code != 0 || !strings.Contains(p.stderr.String(), "--wait") {
		t.Fatalf("stop -h: exit %d\n%s", p.code, p.stderr)
	}
	// The kept pod's idle bound and its default are in run's help.
	if p := w.run("run", "-h"); p.code != 0 || !strings.Contains(p.stderr.String(), "--keep-idle duration") || !strings.Contains(p.stderr.String(), "(default 1h0m0s)") {
		t.Fatalf("run -h lacks --keep-idle and its default: exit %d\n%s", p.code, p.stderr)
	}
}

// A run that fails before it has a pod is failed, with why, in ls.
func TestLsShowsARunThatFailedBeforeItsPod(t *testing.T) {
	t.Parallel()
	w := newAPIWorld(t)
	w.srv.Fail("POST", "/v2/pods", runpodtest.Fault{Status: 400, Detail: "no GPU", Times: -1})
	p := w.run("run")
	if p.code != 1 {
		t.Fatalf("run whose create is refused: exit %d, want 1", p.code)
	}
	r := w.onlyRun()
	if r.Phase != state.PhaseFailed || r.PodID != "" || r.Note == "" {
		t.Fatalf("run %s: phase %s, pod %q, note %q", r.ID, r.Phase, r.PodID, r.Note)
	}
	ls := w.run("ls")
	mustContain(t, "ls", lineWith(ls.stdout.String(), r.ID), "failed")
	mustContain(t, "ls", ls.stdout.String(), r.ID+" failed: ")
	if len(w.srv.Pods()) != 0 {
		t.Fatalf("pods: %v", w.srv.Pods())
	}
}

// A --gpu id the catalog does not have is refused before any create,
// naming the flag and some ids that are, once.
func TestUnknownGPUIsRefusedByName(t *testing.T) {
	t.Parallel()
	w := newAPIWorld(t)
	p := w.run("run", "--gpu", guard.DefaultGPU+",NVIDIA Nonesuch 9000")
	if p.code != 2 {
		t.Fatalf("run --gpu with an unknown id: exit %d, want 2\n%s", p.code, p.stderr)
	}
	says := `--gpu "NVIDIA Nonesuch 9000" is not a GPU type id of the catalog; some that are: `
	mustContain(t, "stderr", p.stderr.String(), says, guard.DefaultGPU, "launch gpus")
	if n := strings.Count(p.stderr.String(), "Nonesuch"); n != 1 {
		t.Errorf("the unknown id is said %d times, want once:\n%s", n, p.stderr)
	}
	for _, r := range w.srv.Requests() {
		if r.Method == "POST" {
			t.Errorf("%s %s made for a run with an unknown GPU", r.Method, r.Path)
		}
	}
	if len(w.runs()) != 0 {
		t.Errorf("a run was recorded: %v", w.runs())
	}
}
