package chaos_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// The sweeper's knobs in its cell: the exited grace, and the period of
// each of the two sweepers.
const (
	sweepExitedGrace = 2 * time.Second
	sweepEvery       = 2 * time.Second
)

// Both enforcers of a pod missing: the launcher is SIGKILLed and the job
// kills the pod's watchdog, which ends the container (EXITED, its volume
// still billing). Nothing deletes the pod then but a sweeper; two of them
// at once delete it within the exited grace plus one period of its exit,
// once. The cell first checks that the pod outlives that bound without
// them, so that it fails without its rule.
func TestChaosSweeperIsTheLastEnforcer(t *testing.T) {
	needPods(t)
	t.Parallel()
	holdPodSlot(t)
	// Runpod would restart the container and its watchdog with it; this
	// pod is one that does not come back (a failing restart, a crash
	// loop), so the fake keeps it EXITED.
	srv := checkedfake.NewTestServer(t, runpodtest.WithPodRunner(), runpodtest.AllowPodsLeft(), runpodtest.WithExitedOnEnd())
	bin := launcherBinary(t, "")
	e := &env{t: t, srv: srv, stateDir: filepath.Join(t.TempDir(), "state")}
	job := `DEMO_STEPS=600 sh train.sh & sleep 4; kill -KILL "$(cat ../.pod/watchdog.pid)"; wait`
	args := append([]string{"run"}, e.global()...)
	args = append(args, "--poll", "1s", "--lease-every", "1s", "--lease-ttl", dur(leaseTTL), "--watchdog-interval", "1s",
		"--probe-wait", "1s", "--start-timeout", "3m", "--verdict-timeout", "3m", "--volume-gb", "10",
		"--max-hours", "1", "--cmd", job)
	l := startLauncher(t, bin, e.environ(), args...)
	if !l.waitFor(l.says("step 2/600")) {
		t.Fatalf("the job never ran: %s", l.state())
	}
	l.kill()
	var podID string
	waitUntil(t, func() bool {
		for _, p := range srv.Pods() {
			if strings.HasPrefix(p.Name, "overbrainer-") && p.Status == runpodtest.StatusExited {
				podID = p.ID
				return true
			}
		}
		return false
	}, func() string { return "the pod never exited with its watchdog killed" })
	exited := time.Now()
	bound := exited.Add(sweepExitedGrace + sweepEvery)

	// Without a sweeper, the pod outlives the bound (and bills).
	time.Sleep(time.Until(bound.Add(Slack)))
	if p, _ := srv.Pod(podID); p.Status != runpodtest.StatusExited || !p.Billing {
		t.Fatalf("without a sweeper the pod is %s (billing %v): the cell does not depend on the sweeper", p.Status, p.Billing)
	}

	sweep := append([]string{"sweep"}, e.global()...)
	sweep = append(sweep, "--every", dur(sweepEvery), "--exited-grace", dur(sweepExitedGrace), "--json")
	started := time.Now()
	a, b := startLauncher(t, bin, e.environ(), sweep...), startLauncher(t, bin, e.environ(), sweep...)
	// The fake logs the answer to the DELETE that ends a pod before the
	// pod shows TERMINATED: the successful delete is counted below.
	var final runpodtest.Pod
	waitUntil(t, func() bool {
		final, _ = srv.Pod(podID)
		return final.Status == runpodtest.StatusTerminated
	}, func() string { return "the sweepers never deleted the pod:\n" + a.output() + b.output() })
	_ = a.cmd.Process.Signal(syscall.SIGINT)
	_ = b.cmd.Process.Signal(syscall.SIGINT)
	a.wait()
	b.wait()
	// The sweepers started past the pod's bound: their bound is one
	// period from their start (their first pass is at once).
	sweepBound := started.Add(sweepEvery)
	deletes := 0
	var deletedAt time.Time
	for _, r := range srv.Requests() {
		if r.Method == "DELETE" && strings.HasSuffix(r.Path, "/pods/"+podID) && (r.Status == 200 || r.Status == 204) {
			deletes++
			deletedAt = r.Time
		}
	}
	past := deletedAt.Sub(sweepBound)
	usdPast := 0.0
	if past > 0 && final.Bill.StoppedSeconds > 0 {
		// An EXITED pod bills its volume only: at the rate it was billed.
		usdPast = final.Bill.VolumeUSD / final.Bill.StoppedSeconds * past.Seconds()
	}
	record(t, "sweeper", "watchdog and launcher dead: the sweeper deleted the pod, past its bound", "%s", seconds(max(past, 0)))
	record(t, "sweeper", "watchdog and launcher dead: dollars billed past the bound", "$%.6f", usdPast)
	record(t, "sweeper", "watchdog and launcher dead: the pod's whole bill", "$%.6f", final.Bill.USD)
	if deletes != 1 || final.Bill.VolumeUSD <= 0 {
		t.Errorf("%d successful deletes of the pod by two sweepers (want 1), volume bill $%v while EXITED (want > 0)", deletes, final.Bill.VolumeUSD)
	}
	if past > Slack {
		t.Errorf("the sweepers deleted the pod %s past their bound (slack %s)", past, Slack)
	}
}
