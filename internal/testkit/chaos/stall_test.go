package chaos_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The cells of "no pod outlives its purpose": a job that stands still
// with the stall rule on, a cost cap of two cents on the demo job, and a job
// that replaces date under the watchdog. Each runs the launcher against
// the fake with its pod runner (the real bootstrap and watchdog), and
// records the pods left billing and the dollars billed past the rule's
// bound.

// purposeRun is one such cell's launch.
type purposeRun struct {
	e     *env
	l     *launcher
	final runpodtest.Pod
}

// launchPurpose runs the launcher with args after the run's globals, on a
// network volume mounted at volumePath, and waits for its pod to end.
func launchPurpose(t *testing.T, name, rule, volumePath string, prepare func(e *env), args ...string) *purposeRun {
	t.Helper()
	needPods(t)
	c := &cell{step: "purpose", fault: name, rule: rule}
	e := newVolumeEnv(t, c, newSecretSet(), "purpose")
	if prepare != nil {
		prepare(e)
	}
	full := append([]string{"run"}, e.global()...)
	full = append(full, "--network-volume", e.vol.ID, "--volume-path", volumePath,
		"--poll", "200ms", "--lease-every", "1s", "--lease-ttl", "3s", "--watchdog-interval", "60s",
		"--probe-wait", "1s", "--start-timeout", "3m", "--verdict-timeout", "3m", "--boot-grace", "60s",
		"--hf-token-env", "CHAOS_HF", "--max-hours", "1")
	full = append(full, args...)
	l := startLauncher(t, e.bin, e.environ(), full...)
	watching := make(chan struct{})
	go e.watchPods(watching)
	defer close(watching)
	if !l.waitFor(l.says("job started")) {
		t.Fatalf("the job never started (%s)\n%s", l.state(), l.output())
	}
	return &purposeRun{e: e, l: l, final: e.podEnded(l)}
}

// podEnded waits for the cell's pod to be terminated, then for the
// launcher's exit, and returns the pod as it ended.
func (e *env) podEnded(l *launcher) runpodtest.Pod {
	e.t.Helper()
	final := e.waitTerminated()
	l.wait()
	return final
}

// past records the pod's end against its bound: the time and the dollars
// past it (at the pod's price), and the pods left billing after the
// cell's clean-up. It fails the cell past the bound plus the slack.
func (p *purposeRun) past(t *testing.T, group string, bound time.Time) {
	t.Helper()
	late := p.final.EndedAt.Sub(bound)
	usd := max(late, 0).Hours() * p.final.CostPerHr
	record(t, group, "past the bound, dollars past it", "%s, $%.6f", seconds(late), usd)
	if late > Slack {
		t.Errorf("the pod ended %s past its bound (slack %s)", seconds(late), Slack)
	}
	p.e.cleanUp(p.l)
	record(t, group, "pods left billing", "%d", len(p.e.srv.Billing()))
}

// With the stall rule turned on (--stall-after), a job that reported one
// step and then stands still (no output, no file under its outputs, no
// CPU: a wait on a dead peer) is asked for a snapshot after --stall-after,
// and its pod is deleted by its watchdog as stalled a --snapshot-wait
// later.
func TestChaosStalledJob(t *testing.T) {
	t.Parallel()
	holdPodSlot(t)
	const stallAfter, snapshotWait = 5 * time.Second, 3 * time.Second
	job := t.TempDir()
	script := "echo \"step=1 total=5000 loss=2.3\" >> \"$OVERBRAINER_PROGRESS\"\necho \"waiting for rank 1\"\nexec sleep 3600\n"
	if err := os.WriteFile(filepath.Join(job, "wedged.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p := launchPurpose(t, "stands_still", string(watchdog.DeleteStalled), "/workspace", nil,
		"--stall-after", dur(stallAfter), "--snapshot-wait", dur(snapshotWait), "--snapshot-lead", "2s",
		"--job", job, "--cmd", "sh wedged.sh")
	if got := p.e.deletedBy(p.final); got != string(watchdog.DeleteStalled) {
		t.Errorf("deleted by %q, want %s\n%s", got, watchdog.DeleteStalled, p.e.logText())
	}
	evs := p.e.events()
	started, ok := eventTime(evs, watchdog.KindJobStarted)
	if !ok {
		t.Fatalf("no job_started in the watchdog's log\n%s", p.e.logText())
	}
	if i := findKind(evs, watchdog.KindSnapshotRequested, "reason", string(watchdog.ReasonStall)); i < 0 {
		t.Errorf("no stall snapshot in the watchdog's log\n%s", p.e.logText())
	}
	out := p.l.output()
	for _, want := range []string{"has not moved for", "stalled"} {
		if !strings.Contains(out, want) {
			t.Errorf("the launcher never said %q:\n%s", want, out)
		}
	}
	// The watchdog looks a tenth of the limit apart (1 s at least).
	p.past(t, "stalled job", started.Add(stallAfter+snapshotWait+time.Second+ruleBound))
}

// findKind is the index of the first event of kind with the fields kv,
// -1 when there is none.
func findKind(evs []watchdog.Event, kind string, kv ...string) int {
	for i, ev := range evs {
		if ev.Kind != kind {
			continue
		}
		ok := true
		for j := 0; j+1 < len(kv); j += 2 {
			ok = ok && ev.Fields[kv[j]] == kv[j+1]
		}
		if ok {
			return i
		}
	}
	return -1
}

// A cap of two cents (about 104 s at $0.69/h) on the demo job: the job
// is asked for its snapshot, checkpoints and stops, the checkpoint is in
// the results, the launcher names the cost cap, and the pod bills no more
// than the cap. The cap leaves the job what remains of it once the pod has
// booted and the job is uploaded: half a cent (26 s) left a busy machine,
// whose boot took 16 s, too little to checkpoint and download before the
// pod's end, and the launcher rightly said it had no results.
func TestChaosTwoCentCapOnTheDemo(t *testing.T) {
	t.Parallel()
	holdPodSlot(t)
	const capUSD = 0.02
	p := launchPurpose(t, "two_cent_cap", string(watchdog.DeleteCostCap), "/workspace", nil,
		"--max-cost-usd", "0.02", "--snapshot-lead", "15m", "--snapshot-wait", "30s",
		"--cmd", "DEMO_STEPS=300 sh train.sh")
	out := p.l.output()
	for _, want := range []string{"snapshot requested (cost)", "the cost cap of $0.02", "ended the run", "results downloaded"} {
		if !strings.Contains(out, want) {
			t.Errorf("the launcher never said %q:\n%s", want, out)
		}
	}
	var ckpt []byte
	_ = filepath.WalkDir(p.e.stateDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "checkpoint.txt" {
			ckpt, _ = os.ReadFile(path)
		}
		return nil
	})
	if !strings.Contains(string(ckpt), "reason=snapshot cost\n") {
		t.Errorf("the results hold no cost checkpoint: %q", ckpt)
	}
	record(t, "two-cent cap", "billed for a cap of $0.02", "$%.6f", p.final.Bill.USD)
	capAt := p.e.billingStart().Add(time.Duration(capUSD / p.final.CostPerHr * float64(time.Hour)))
	if p.final.Bill.USD > capUSD {
		t.Errorf("billed $%.6f, over the cap", p.final.Bill.USD)
	}
	p.past(t, "two-cent cap", capAt.Add(ruleBound))
}

// A job that replaces date once it runs (frozen at 2001, on the watchdog's
// PATH: the network volume is mounted at /usr/local/bin) does not stop
// the watchdog's clock: its cost cap still deletes the pod on time.
func TestChaosJobReplacesDate(t *testing.T) {
	t.Parallel()
	holdPodSlot(t)
	job := t.TempDir()
	script := "printf '#!/bin/sh\\necho 1000000000\\n' > /usr/local/bin/date.tmp && chmod +x /usr/local/bin/date.tmp && mv -f /usr/local/bin/date.tmp /usr/local/bin/date\n" +
		"echo \"date now says $(date +%s)\"\nwhile :; do echo working; sleep 1; done\n"
	if err := os.WriteFile(filepath.Join(job, "careless.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	usd := podPrice * clockCap.Hours()
	p := launchPurpose(t, "replaces_date", string(watchdog.DeleteCostCap), "/usr/local/bin", nil,
		"--max-cost-usd", fmt.Sprint(usd), "--snapshot-lead", "2s", "--snapshot-wait", "2s",
		"--job", job, "--cmd", "sh careless.sh")
	if !strings.Contains(p.l.output(), "date now says 1000000000") {
		t.Errorf("the job did not replace date:\n%s", p.l.output())
	}
	if got := p.e.deletedBy(p.final); got != string(watchdog.DeleteCostCap) {
		t.Errorf("deleted by %q, want %s\n%s", got, watchdog.DeleteCostCap, p.e.logText())
	}
	n, ok := p.e.fileNumber(watchdog.CostCapAt)
	if !ok {
		t.Fatal("no cost_cap_at")
	}
	p.past(t, "job replaces date", time.Unix(n, 0).Add(ruleBound))
}
