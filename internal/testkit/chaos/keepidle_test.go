package chaos_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

// keptIdle is the cell's idle bound: long enough that the launcher, whose
// own SSH connection counts as use, has gone before it passes.
const keptIdle = 30 * time.Second

// TestChaosKeptPodLeftIdle runs a --keep-pod run to its end (the launcher
// collects and exits, the pod stays) and leaves the pod alone: its
// watchdog must delete it (kept_idle) within 2 s of the idle bound past
// its last use, the later of the job's end, the last touch of the lease
// and the launcher's exit (its connection was a session). The watchdog
// ticks every 60 s, so only its wake at the due time can be that close.
func TestChaosKeptPodLeftIdle(t *testing.T) {
	t.Parallel()
	holdPodSlot(t)
	needPods(t)
	c := &cell{step: "kept", fault: "left_idle", rule: string(watchdog.DeleteKeptIdle)}
	sec := newSecretSet()
	e := newVolumeEnv(t, c, sec, "keptIdle")
	args := append([]string{"run"}, e.global()...)
	args = append(args,
		"--network-volume", e.vol.ID, "--volume-path", "/workspace",
		"--poll", "500ms", "--lease-every", "1s", "--lease-ttl", "3s", "--watchdog-interval", "60s",
		"--probe-wait", "1s", "--start-timeout", "3m", "--verdict-timeout", "3m", "--boot-grace", "60s",
		"--hf-token-env", "CHAOS_HF", "--max-hours", "1",
		"--keep-pod", "--keep-idle", keptIdle.String(),
		"--cmd", "DEMO_STEPS=2 sh train.sh")
	l := startLauncher(t, e.bin, e.environ(), args...)
	watching := make(chan struct{})
	go e.watchPods(watching)
	defer close(watching)
	if code := l.wait(); code != 0 {
		t.Fatalf("launch run --keep-pod: exit %d\n%s", code, l.output())
	}
	exited := time.Now()
	final := e.waitTerminated()
	c.got = e.deletedBy(final)
	if c.got != c.rule {
		t.Errorf("deleted by %q, want %s\n%s", c.got, c.rule, e.logText())
	}
	ended, ok := eventTime(e.events(), watchdog.KindJobEnded)
	if !ok {
		t.Fatalf("no job_ended in the watchdog's log\n%s", e.logText())
	}
	// The last use is the latest of the job's end, the last touch of the
	// lease and the launcher's exit (its connection counted while open;
	// seen here a moment after it closed). The pod must not go before
	// the bound past the first two, nor later than ruleBound past the
	// bound from all three.
	used := ended
	if fi, err := os.Stat(filepath.Join(e.runDir(), watchdog.Lease)); err == nil && fi.ModTime().After(used) {
		used = fi.ModTime()
	}
	if early := final.EndedAt.Sub(used.Add(keptIdle)); early < -time.Second {
		t.Errorf("deleted %s before the idle bound past the job's end and the lease", -early)
	}
	if exited.After(used) {
		used = exited
	}
	c.pastBound = final.EndedAt.Sub(used.Add(keptIdle))
	c.usdPast = max(0, c.pastBound.Hours()) * final.CostPerHr
	if c.pastBound > ruleBound+Slack {
		t.Errorf("deleted %s past the idle bound (bound + %s, slack %s)", c.pastBound, ruleBound, Slack)
	}
	left := len(e.srv.Billing())
	record(t, "kept pod left idle", "pods left billing", "%d", left)
	record(t, "kept pod left idle", "deleted past its idle bound ("+keptIdle.String()+" after its last use)",
		"%+.2fs, $%.6f past the bound (bound %s + slack %s)", c.pastBound.Seconds(), c.usdPast, ruleBound, Slack)
	e.cleanUp(l)
	hits, _ := sec.hitList()
	for _, h := range hits {
		t.Errorf("secret found: %s", h)
	}
}
