package main_test

import (
	"context"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Runpod restarts the pod's container while the launcher follows the job;
// the job dies with the old container. The launcher reconnects, says the
// job was lost with the container, collects what is left and fails the run;
// the pod is deleted. On a network volume the run directory survives (the
// new container's bootstrap marks the old job lost); without a volume it
// goes with the container.
func TestRestartedContainerLosesTheJob(t *testing.T) {
	t.Parallel()
	for _, volume := range []bool{true, false} {
		name := map[bool]string{true: "network volume", false: "no volume"}[volume]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			var extra []string
			if volume {
				w.srv.AddNetworkVolume("vol-restart", 10)
				extra = []string{"--network-volume", "vol-restart"}
			}
			p := w.start(args([]string{"run"}, fast, extra, demo(600))...)
			p.waitOutput("step 3/600", patience)
			r := w.onlyRun()
			w.restartPod(r)
			if code := p.wait(patience); code != 1 {
				t.Fatalf("exit %d, want 1 (the job failed)", code)
			}
			stderr := p.stderr.String()
			mustContain(t, "stderr", stderr, "lost the SSH connection", "reconnected",
				"job lost: the pod's container restarted", "the job was lost when the pod's container restarted")
			if strings.Contains(stderr, "job ended without an exit code (killed)") {
				t.Errorf("the lost job was reported killed:\n%s", stderr)
			}
			r = w.onlyRun()
			if r.ExitCode != nil {
				t.Errorf("run exit code %d", *r.ExitCode)
			}
			if r.Phase != state.PhaseDone {
				t.Errorf("run phase %s", r.Phase)
			}
			if volume {
				mustContain(t, "stderr", stderr, "results downloaded")
				got, _ := os.ReadFile(filepath.Join(r.OutDir, watchdog.Cancelled))
				if string(got) != watchdog.CancelContainerRestarted+"\n" {
					t.Errorf("the downloaded %s is %q", watchdog.Cancelled, got)
				}
				log, _ := os.ReadFile(filepath.Join(r.OutDir, "job.log"))
				mustContain(t, "the downloaded job.log", string(log), "step 3/600")
			} else {
				mustContain(t, "stderr", stderr, "went with it (no volume kept it)")
			}
			w.waitPodGone(r, patience)
			w.assertClean()
		})
	}
}

// The launcher is killed while the job runs, then the pod's container
// restarts without a volume, so the pod's run directory is a new one.
// attach says the job was lost with its run directory and ends the run: it
// does not upload and start the job again from its beginning.
func TestAttachAfterARestartWithoutAVolume(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	_, r := w.runThenKill(600)
	if r.JobStarted.IsZero() {
		t.Fatalf("run.json does not say the job started: %+v", r)
	}
	w.restartPod(r)
	a := w.start("attach", r.ID)
	// A job started again would run its 600 steps: fail as soon as it is.
	deadline := time.Now().Add(2 * patience)
	for ended := false; !ended; {
		select {
		case <-a.done:
			ended = true
		case <-time.After(100 * time.Millisecond):
		}
		for _, again := range []string{"uploaded", "job started"} {
			if strings.Contains(a.stderr.String(), again) {
				t.Fatalf("attach started the job again (%q):\n%s", again, a.stderr)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("attach did not end:\n%s", a.stderr)
		}
	}
	if a.code != 1 {
		t.Fatalf("attach exit %d, want 1 (the job was lost)\n%s", a.code, a.stderr)
	}
	stderr := a.stderr.String()
	mustContain(t, "attach stderr", stderr, "went with it (no volume kept it)",
		"the job was lost when the pod's container restarted")
	if out := a.stdout.String(); strings.Contains(out, "step 1/600") {
		t.Errorf("the job ran again from its beginning:\n%s", out)
	}
	if r := w.onlyRun(); r.Phase != state.PhaseDone {
		t.Errorf("run phase %s", r.Phase)
	}
	w.waitPodGone(r, patience)
	w.assertClean()
}

// restartPod restarts the run's pod's container through the API, as Runpod
// may at any time.
func (w *world) restartPod(r *state.Run) {
	w.t.Helper()
	api := checkedfake.Client(w.t, w.srv)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := api.PodAction(ctx, r.PodID, runpod.ActionRestart); err != nil {
		w.t.Fatal(err)
	}
}
