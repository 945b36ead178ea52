package chaos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The false-kill cells: first, do no harm. Each runs a healthy job that a
// careless rule would take for dead (one that burns CPU and prints
// nothing, one whose output is block-buffered, one that writes only files
// under its outputs, one in a noisy evaluation after its last progress
// line, a kept pod's nohup loop, a job lost in a container restart whose
// checkpoint survived) with the rule's durations short, and
// counts its false kills: the pod ended (deleted or stopped, as the fake
// confirmed it: TERMINATED, or stopped by an answered stop action) while
// the job still worked, or before the time of the rule that ended it.
// Each prints false_kills and pods_left, and fails unless both are 0.

// The stall rule's durations in the cells that turn it on, and the
// length of each job's quiet phase: twice the rule's time, so that a
// rule that misread the job would delete its pod mid-phase (a job that
// does not move is deleted at about fkStallAfter + fkSnapshotWait: see
// TestChaosStalledJob).
const (
	fkStallAfter   = 6 * time.Second
	fkSnapshotWait = 3 * time.Second
	fkPhase        = 2 * (fkStallAfter + fkSnapshotWait)
	// fkRetrieveGrace is the retrieve grace of the abandoned cell, and
	// fkMaxExtension the extension of the max_extension cell.
	fkRetrieveGrace = 4 * time.Second
	fkMaxExtension  = 10 * time.Second
	// fkDeadline is the deadline (--max-hours) of the deadline and
	// max_extension cells: late enough for a loaded machine's boot.
	fkDeadline = 60 * time.Second
	// fkKeepIdle is the kept cell's idle bound, and fkLoop how long its
	// nohup loop works: past the bound, twice over.
	fkKeepIdle = 10 * time.Second
	fkLoop     = 2*fkKeepIdle + 5*time.Second
)

// The jobs (sh), PHASE replaced by fkPhase in seconds. burn works about
// 20 ms of a core, without a process.
const (
	fkBurn = "burn() { i=0; while [ \"$i\" -lt 20000 ]; do i=$((i + 1)); done; }\n" +
		"end=$(($(date +%s) + PHASE))\n"
	// fkSilentCPU reports a step, then works silently, all CPU.
	fkSilentCPU = fkBurn + "echo \"step=1 total=2 loss=2.3\" >>\"$OVERBRAINER_PROGRESS\"\necho training\n" +
		"while [ \"$(date +%s)\" -lt \"$end\" ]; do burn; done\n" +
		"echo \"step=2 total=2 loss=1.1\" >>\"$OVERBRAINER_PROGRESS\"\necho done\n"
	// fkBuffered stands in for a Python job whose stdout is a block-
	// buffered file: it works and prints a line a round, but its output
	// reaches job.log only when it exits; no progress file either.
	fkBuffered = fkBurn + "lines=\n" +
		"while [ \"$(date +%s)\" -lt \"$end\" ]; do burn; lines=\"${lines}loss $i\n\"; done\n" +
		"printf '%s' \"$lines\"\n"
	// fkOutputsOnly reports a step, then writes only files under its
	// outputs (a shard a second), silent and idle otherwise.
	fkOutputsOnly = fkBurn + "echo \"step=1 total=2 loss=2.3\" >>\"$OVERBRAINER_PROGRESS\"\ni=0\n" +
		"while [ \"$(date +%s)\" -lt \"$end\" ]; do i=$((i + 1)); echo \"$i\" >\"$OVERBRAINER_OUTPUTS/shard-$((i % 3)).bin\"; sleep 1; done\n"
	// fkNoisyEval reports its steps, saves, then evaluates: a line of
	// output a second and no progress line.
	fkNoisyEval = fkBurn + "for s in 1 2 3; do echo \"step=$s total=3 loss=1.$s\" >>\"$OVERBRAINER_PROGRESS\"; echo \"step $s\"; done\n" +
		"echo model >\"$OVERBRAINER_OUTPUTS/model.txt\"\ni=0\n" +
		"while [ \"$(date +%s)\" -lt \"$end\" ]; do i=$((i + 1)); echo \"eval batch $i\"; sleep 1; done\necho \"eval done\"\n"
	// fkStill reports a step, then does nothing a person could see for
	// the phase (a download that prints nothing, a compile on another
	// machine): no output, no file, no CPU.
	fkStill = "echo \"step=1 total=2 loss=2.3\" >>\"$OVERBRAINER_PROGRESS\"\necho compiling\nsleep PHASE\n" +
		"echo \"step=2 total=2 loss=1.1\" >>\"$OVERBRAINER_PROGRESS\"\necho done\n"
	// fkForever writes a shard under its outputs every second and never
	// ends: only a time rule ends it.
	fkForever = "echo \"step=1 total=100 loss=2.3\" >>\"$OVERBRAINER_PROGRESS\"\ni=0\n" +
		"while :; do i=$((i + 1)); echo \"$i\" >\"$OVERBRAINER_OUTPUTS/shard-$((i % 3)).bin\"; sleep 1; done\n"
)

// falseKillCell is one cell: a job, the rule that must end its pod, and
// the earliest time that rule may.
type falseKillCell struct {
	name   string
	script string
	// rule is the rule that must end the pod: ruleClient for a job that
	// ends by itself, whose launcher collects and ends the pod (or marks
	// it retrieved, which its watchdog may act on first).
	rule string
	// stall turns the stall rule on (--stall-after fkStallAfter).
	stall bool
	// kill SIGKILLs the launcher once the job started: its lease goes
	// stale, and the watchdog's rules alone end the pod.
	kill bool
	args []string
	// earliest is the earliest time the cell's rule may end the pod, from
	// the watchdog's log and files; ok is false when what it counts from
	// is not there (the job never ended by itself, for ruleClient).
	earliest func(e *env, evs []watchdog.Event) (at time.Time, ok bool)
}

// jobEndedItself is when the job ended by its own exit.
func jobEndedItself(evs []watchdog.Event) (time.Time, bool) {
	i := findKind(evs, watchdog.KindJobEnded, "by", "exit_code")
	if i < 0 {
		return time.Time{}, false
	}
	return evs[i].Time, true
}

// startDeadline is the deadline the watchdog logged at its start.
func startDeadline(evs []watchdog.Event) (time.Time, bool) {
	i := findKind(evs, watchdog.KindStart)
	if i < 0 {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(evs[i].Fields["deadline"], 10, 64)
	return time.Unix(n, 0), err == nil
}

func hoursOf(d time.Duration) string { return strconv.FormatFloat(d.Hours(), 'f', -1, 64) }

func TestChaosFalseKills(t *testing.T) {
	t.Parallel()
	needPods(t)
	launcherBinary(t, "")
	ended := func(e *env, evs []watchdog.Event) (time.Time, bool) { return jobEndedItself(evs) }
	cells := []falseKillCell{
		{name: "stall_on/silent_cpu", script: fkSilentCPU, rule: ruleClient, stall: true, earliest: ended},
		{name: "stall_on/buffered_output", script: fkBuffered, rule: ruleClient, stall: true, earliest: ended},
		{name: "stall_on/outputs_only", script: fkOutputsOnly, rule: ruleClient, stall: true, earliest: ended},
		{name: "stall_on/noisy_eval", script: fkNoisyEval, rule: ruleClient, stall: true, earliest: ended},
		{name: "stall_default/still", script: fkStill, rule: ruleClient, earliest: ended},
		{name: "cost_cap/silent_job", script: fkForever, rule: string(watchdog.DeleteCostCap), stall: true,
			args: []string{"--max-cost-usd", fmt.Sprint(podPrice * followCap.Seconds() * 2 / 3600)},
			earliest: func(e *env, _ []watchdog.Event) (time.Time, bool) {
				n, ok := e.fileNumber(watchdog.CostCapAt)
				return time.Unix(n, 0), ok
			}},
		{name: "deadline/silent_job", script: fkForever, rule: string(watchdog.DeleteDeadline), stall: true, kill: true,
			args:     []string{"--max-hours", hoursOf(fkDeadline)},
			earliest: func(_ *env, evs []watchdog.Event) (time.Time, bool) { return startDeadline(evs) }},
		{name: "max_extension/silent_job", script: fkForever, rule: string(watchdog.DeleteMaxExtension), stall: true,
			args: []string{"--max-hours", hoursOf(fkDeadline), "--max-extension", dur(fkMaxExtension)},
			earliest: func(_ *env, evs []watchdog.Event) (time.Time, bool) {
				at, ok := startDeadline(evs)
				return at.Add(fkMaxExtension), ok
			}},
		{name: "abandoned/silent_job", script: fkOutputsOnly, rule: string(watchdog.DeleteAbandoned), stall: true, kill: true,
			args: []string{"--retrieve-grace", dur(fkRetrieveGrace)},
			earliest: func(_ *env, evs []watchdog.Event) (time.Time, bool) {
				at, ok := jobEndedItself(evs)
				return at.Add(fkRetrieveGrace), ok
			}},
	}
	for _, kc := range cells {
		t.Run(kc.name, func(t *testing.T) {
			t.Parallel()
			holdPodSlot(t)
			runFalseKillCell(t, kc)
		})
	}
	t.Run("kept_idle/nohup_cpu_loop", func(t *testing.T) {
		t.Parallel()
		holdPodSlot(t)
		runKeptFalseKillCell(t)
	})
	t.Run("recovery/container_restart", func(t *testing.T) {
		t.Parallel()
		holdPodSlot(t)
		runRestartFalseKillCell(t)
	})
}

// runRestartFalseKillCell: a maintenance restart of the container at step
// 13 of the demo (a checkpoint every 10 steps) loses the job, but its pod
// volume keeps the run directory and the checkpoint of step 10: with
// --recover, the job must start again on the same pod from that
// checkpoint. A false kill is the pod ended under its surviving
// checkpoint (a second pod made) or the job started from its beginning.
func runRestartFalseKillCell(t *testing.T) {
	w := newRecoverWorld(t)
	l := w.run(30, "--recover", "1", "--volume-gb", "10", "--volume-path", "/workspace")
	if !l.waitFor(l.says("step 13/30")) {
		t.Fatalf("the demo never reached step 13: %s\n%s", l.state(), l.output())
	}
	first := w.firstPod()
	if err := w.srv.RestartForMaintenance(first); err != nil {
		t.Fatal(err)
	}
	code := l.wait()
	out := l.output()
	kills, why := 0, ""
	step := -1
	if m := regexp.MustCompile(`resuming from the checkpoint at step (\d+)`).FindStringSubmatch(out); m != nil {
		step, _ = strconv.Atoi(m[1])
	}
	switch pods := w.srv.Pods(); {
	case len(pods) != 1:
		kills, why = 1, fmt.Sprintf("%d pods made: the pod with the surviving checkpoint was replaced", len(pods))
	case step < 0:
		kills, why = 1, "the job started again from its beginning"
	case step < 10:
		kills, why = 1, fmt.Sprintf("the job resumed from step %d, not from its checkpoint of step 10", step)
	}
	if kills > 0 {
		t.Errorf("false kill: %s\n%s", why, out)
	}
	if code != 0 || !strings.Contains(out, "the job starts again on the same pod "+first) || !strings.Contains(out, "training done") {
		t.Errorf("exit %d; the job did not finish on the same pod:\n%s", code, out)
	}
	left := w.billingLeft()
	record(t, "false kills", "recovery/container_restart", "false_kills=%d pods_left=%d (%d pods made)", kills, left, len(w.srv.Pods()))
	if left != 0 {
		t.Errorf("%d pods left billing", left)
	}
}

// runFalseKillCell runs the cell's job under the launcher on a network
// volume (the watchdog's log outlives the pod there), waits for the pod's
// end and counts the false kills.
func runFalseKillCell(t *testing.T, kc falseKillCell) {
	c := &cell{step: "false_kills", fault: kc.name, rule: kc.rule}
	e := newVolumeEnv(t, c, newSecretSet(), "falseKills")
	job := t.TempDir()
	script := strings.ReplaceAll(kc.script, "PHASE", strconv.Itoa(int(fkPhase.Seconds())))
	if err := os.WriteFile(filepath.Join(job, "job.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run"}, e.global()...)
	args = append(args, "--network-volume", e.vol.ID, "--volume-path", "/workspace",
		"--poll", "200ms", "--lease-every", "1s", "--lease-ttl", dur(leaseTTL), "--watchdog-interval", "60s",
		"--probe-wait", "1s", "--start-timeout", "3m", "--verdict-timeout", "3m", "--boot-grace", "60s",
		"--snapshot-lead", "2s", "--snapshot-wait", dur(fkSnapshotWait),
		"--hf-token-env", "CHAOS_HF", "--max-hours", "1", "--job", job, "--cmd", "sh job.sh")
	if kc.stall {
		args = append(args, "--stall-after", dur(fkStallAfter))
	}
	args = append(args, kc.args...)
	l := e.startWatched(args...)
	if !l.waitFor(l.says("job started")) {
		t.Fatalf("the job never started (%s)\n%s", l.state(), l.output())
	}
	if kc.kill {
		l.kill()
	}
	final := e.waitTerminated()
	code := l.wait()
	evs := e.events()
	// The stall rule is on only where the cell asks for it: off, the pod
	// gets 0 (nothing deleted for a stall), whatever the quiet phase.
	want := "0"
	if kc.stall {
		want = strconv.Itoa(int(fkStallAfter.Seconds()))
	}
	if got := final.Env[podenv.StallAfterEnv]; got != want && (want != "0" || got != "") {
		t.Errorf("the pod's %s is %q, want %s", podenv.StallAfterEnv, got, want)
	}
	got := e.deletedBy(final)
	if kc.rule == ruleClient && got == string(watchdog.DeleteRetrieved) {
		got = ruleClient // the launcher marked the results retrieved (see checkDeleted)
	}
	end := final.EndedAt
	if r, ok := e.endingCall(final); ok {
		end = r.Time
	}
	kills, why := 0, ""
	at, ok := kc.earliest(e, evs)
	switch {
	case !ok:
		kills, why = 1, "the pod ended before what its rule counts from (the job's own end, for a job that ends)"
	case end.Before(at.Add(-time.Second)): // the watchdog's clock counts whole seconds
		kills, why = 1, fmt.Sprintf("the pod ended %s before its rule's time", seconds(at.Sub(end)))
	case got == string(watchdog.DeleteStalled):
		kills, why = 1, "the pod was deleted as stalled"
	}
	if kills > 0 {
		t.Errorf("false kill: %s (ended by %s)\n%s\n%s", why, got, l.output(), e.logText())
	} else if got != kc.rule {
		t.Errorf("the pod was ended by %q, want %q\n%s", got, kc.rule, e.logText())
	}
	if kc.rule == ruleClient && code != 0 {
		t.Errorf("the launcher's exit %d, want 0 (a job that ended by itself)\n%s", code, l.output())
	}
	started, sok := eventTime(evs, watchdog.KindJobStarted)
	if jobEnd, jok := jobEndedItself(evs); kc.rule == ruleClient && sok && jok && jobEnd.Sub(started) < fkPhase-time.Second {
		t.Errorf("the job ran %s, less than its quiet phase (%s): the cell tested nothing", jobEnd.Sub(started), fkPhase)
	}
	asked := 0
	for _, ev := range evs {
		if ev.Kind == watchdog.KindSnapshotRequested && ev.Fields["reason"] == string(watchdog.ReasonStall) {
			asked++
		}
	}
	e.cleanUp(l)
	left := len(e.srv.Billing())
	from := "no time for its rule"
	if ok {
		from = fmt.Sprintf("%+.2fs from its rule's time", end.Sub(at).Seconds())
	}
	record(t, "false kills", kc.name, "false_kills=%d pods_left=%d (ended by %s %s; stall snapshots asked: %d)",
		kills, left, got, from, asked)
	if left != 0 {
		t.Errorf("%d pods left billing", left)
	}
}

// startWatched starts the launcher with args, the secrets sampler told of
// the cell's pods until the test ends.
func (e *env) startWatched(args ...string) *launcher {
	l := startLauncher(e.t, e.bin, e.environ(), args...)
	watching := make(chan struct{})
	go e.watchPods(watching)
	e.t.Cleanup(func() { close(watching) })
	return l
}

// runKeptFalseKillCell: a kept pod (--keep-pod, with a pod volume) whose
// job ended runs a loop started over `launch ssh` with nohup, which works
// for fkLoop, past the idle bound twice. The pod must stay while the loop
// works, and once it ended and the bound passed its watchdog must stop
// the pod (kept_idle), never delete it: the pod volume keeps its data.
func runKeptFalseKillCell(t *testing.T) {
	c := &cell{step: "false_kills", fault: "kept_idle", rule: string(watchdog.DeleteKeptIdle)}
	e := newVolumeEnv(t, c, newSecretSet(), "falseKillsKept")
	args := append([]string{"run"}, e.global()...)
	// The watchdog looks again a tick after each hold, so its interval is
	// short: the stop comes within a tick and the bound past the loop.
	args = append(args, "--volume-gb", "10", "--volume-path", "/workspace",
		"--poll", "500ms", "--lease-every", "1s", "--lease-ttl", dur(leaseTTL), "--watchdog-interval", "5s",
		"--probe-wait", "1s", "--start-timeout", "3m", "--verdict-timeout", "3m", "--boot-grace", "60s",
		"--hf-token-env", "CHAOS_HF", "--max-hours", "1",
		"--keep-pod", "--keep-idle", fkKeepIdle.String(), "--cmd", "DEMO_STEPS=1 sh train.sh")
	l := e.startWatched(args...)
	if code := l.wait(); code != 0 {
		t.Fatalf("launch run --keep-pod: exit %d\n%s", code, l.output())
	}
	pod, ok := e.pod()
	if !ok {
		t.Fatal("no pod")
	}
	runs, _ := filepath.Glob(filepath.Join(e.stateDir, "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("%d runs in the state directory", len(runs))
	}
	run := filepath.Base(runs[0])
	// The loop works about 20 ms of a core a second by its own clock,
	// with no output; chaos_kept_loop names it among the pod's processes.
	loop := fmt.Sprintf(`chaos_kept_loop=1; end=$(($(date +%%s) + %d)); while [ "$(date +%%s)" -lt "$end" ]; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 1; done`,
		int(fkLoop.Seconds()))
	ssh := startLauncher(t, e.bin, e.environ(), append(append([]string{"ssh"}, e.global()...),
		run, "--", "sh", "-c", "nohup sh -c '"+loop+"' </dev/null >/dev/null 2>&1 &")...)
	if code := ssh.wait(); code != 0 {
		t.Fatalf("launch ssh: exit %d\n%s", code, ssh.output())
	}
	closed := time.Now()
	working := func() bool { return len(podProcesses(pod.ID, "chaos_kept_loop")) > 0 }
	if !working() {
		t.Fatalf("no loop in pod %s after launch ssh\n%s", pod.ID, e.srv.PodLog(pod.ID))
	}
	// The event: the loop's own end (or the pod's, which kills it).
	waitUntil(t, func() bool { return !working() }, func() string { return "the loop never ended" })
	loopEnded := time.Now()
	kills, why := 0, ""
	if p, _ := e.srv.Pod(pod.ID); p.Status != runpodtest.StatusRunning {
		kills, why = 1, "the pod was "+p.Status+" when its loop ended: it ended under the loop"
	} else if loopEnded.Before(closed.Add(fkKeepIdle)) {
		t.Errorf("the loop ended %s after the session closed, within the idle bound: the cell tested nothing", loopEnded.Sub(closed))
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	final, err := e.srv.WaitStatus(ctx, pod.ID, runpodtest.StatusExited)
	if err != nil && kills == 0 {
		t.Fatalf("the idle kept pod is still %s: %v\n%s", final.Status, err, e.srv.PodLog(pod.ID))
	}
	stopped := time.Time{}
	for _, r := range e.srv.Requests() {
		switch {
		case r.Fault || r.Status/100 != 2:
		case r.Method == "DELETE" && r.Path == "/v2/pods/"+pod.ID:
			t.Errorf("the kept pod with a pod volume was deleted (by %q), not stopped", r.Caller)
		case r.Method == "POST" && r.Path == "/v2/pods/"+pod.ID+"/action" && strings.Contains(string(r.Body), `"stop"`) && stopped.IsZero():
			stopped = r.Time
			if r.Caller != pod.ID {
				t.Errorf("the pod was stopped by %q, not by its watchdog", r.Caller)
			}
		}
	}
	if kills == 0 && !stopped.IsZero() && stopped.Before(loopEnded.Add(fkKeepIdle-time.Second)) {
		kills, why = 1, fmt.Sprintf("stopped %s after the loop's last use, before its idle bound (%s)", stopped.Sub(loopEnded), fkKeepIdle)
	}
	if kills > 0 {
		t.Errorf("false kill: %s\n%s", why, e.srv.PodLog(pod.ID))
	}
	if log := e.srv.PodLog(pod.ID); !strings.Contains(log, watchdog.KindKeptHeld+" ") {
		t.Errorf("the pod's log shows no hold by the loop:\n%s", log)
	}
	if rm := startLauncher(t, e.bin, e.environ(), append(append([]string{"rm"}, e.global()...), run)...); rm.wait() != 0 {
		t.Errorf("launch rm %s: exit %d\n%s", run, rm.code, rm.output())
	}
	e.cleanUp(l)
	left := len(e.srv.Billing())
	from := "never stopped"
	if !stopped.IsZero() {
		from = fmt.Sprintf("stopped %+.2fs from its idle bound past the loop's end", stopped.Sub(loopEnded.Add(fkKeepIdle)).Seconds())
	}
	record(t, "false kills", "kept_idle/nohup_cpu_loop", "false_kills=%d pods_left=%d (%s; the loop worked %s past the session)",
		kills, left, from, seconds(loopEnded.Sub(closed)))
	if left != 0 {
		t.Errorf("%d pods left billing", left)
	}
}
