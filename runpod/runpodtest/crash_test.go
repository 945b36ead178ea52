package runpodtest

import (
	"net/http"
	"testing"
	"time"
)

// TestCrashAndBreakPod: CrashPod ends the command, which the container
// restarts; BreakPod leaves the pod in ERROR with nothing running.
func TestCrashAndBreakPod(t *testing.T) {
	requireRunner(t)
	srv := newTestServer(t, WithPodRunner(), WithRestartDelay(10*time.Millisecond))
	created := createPod(t, srv, shPod("crash", "echo up; exec sleep 1000", nil))
	ctx := waitCtx(t)
	if _, err := srv.WaitStatus(ctx, created.ID, StatusRunning); err != nil {
		t.Fatal(err)
	}
	waitLog(t, srv, created.ID, "up")
	if err := srv.CrashPod(created.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WaitPod(ctx, created.ID, func(p Pod) bool { return p.Restarts == 1 && p.Status == StatusRunning }); err != nil {
		t.Fatal(err)
	}
	if err := srv.BreakPod(created.ID, "host failure"); err != nil {
		t.Fatal(err)
	}
	if p, _ := srv.Pod(created.ID); p.Status != StatusError || p.Error != "host failure" || len(podProcs(t, created.ID)) != 0 {
		t.Errorf("broken pod: %s %q, processes %v", p.Status, p.Error, podProcs(t, created.ID))
	}
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+created.ID, nil, http.StatusNoContent)
}
