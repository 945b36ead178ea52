package main_test

import (
	"strings"
	"syscall"
	"testing"
)

// TestStopWithoutProofCancels: a job that ignores the stop request gives
// no proof of a checkpoint within stop's wait: stop cancels it, says so,
// collects what there is and deletes the pod.
func TestStopWithoutProofCancels(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	job := `echo started; echo kept > "$OVERBRAINER_OUTPUTS/kept"; while :; do sleep 1; done`
	p := w.start(args([]string{"run", "--cmd", job}, fast)...)
	p.waitOutput("started", patience)
	p.signal(syscall.SIGINT)
	p.wait(patience)
	r := w.onlyRun()
	s := w.run("stop", r.ID, "--wait", "3s")
	out := s.stderr.String()
	mustContain(t, "stop stderr", out, "gave no proof of a checkpoint (snapshot.json) within 3s of the stop request: it was cancelled", "results downloaded")
	if s.code == 0 {
		t.Errorf("stop of a job cancelled without a checkpoint exited 0:\n%s", out)
	}
	if strings.Contains(out, "checkpointed on request") {
		t.Errorf("stop says the job checkpointed:\n%s", out)
	}
	w.assertClean()
}
