package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// clockCap is how long after the create call the clock test's cost cap
// falls: late enough for the pod to boot and the job to start.
const clockCap = 30 * time.Second

// TestChaosPodClockSkew runs a launch whose pod's clock is 10 minutes
// ahead of, then behind, the launcher's. The launcher must write
// .pod/snapshot_at and .pod/cost_cap_at on the pod's clock, so that the
// watchdog deletes the pod within 2 s of when the bill reaches the cap.
//
// The pod's clock is a `date` that adds the skew to `date +%s`, placed
// where both the watchdog (the pod's PATH) and an SSH session (sshd's PATH
// for root) find it before the real one: /usr/local/bin, which here is the
// pod's network volume.
func TestChaosPodClockSkew(t *testing.T) {
	t.Parallel()
	needPods(t)
	launcherBinary(t, "")
	sec := newSecretSet()
	stop := make(chan struct{})
	sampled := sec.sampleProcsUntil(stop)
	t.Cleanup(func() {
		close(stop)
		<-sampled
		hits, total := sec.hitList()
		for _, h := range hits {
			t.Errorf("secret found: %s", h)
		}
		record(t, "secrets", "samples checked during the clock runs", "%d", sec.samples.Load())
		record(t, "secrets", "hits during the clock runs", "%d", total)
	})
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		t.Run(fmt.Sprintf("pod_clock_%+dm", int(skew.Minutes())), func(t *testing.T) {
			t.Parallel()
			holdPodSlot(t)
			c := &cell{step: "clock", fault: fmt.Sprintf("%+dm", int(skew.Minutes())), rule: string(watchdog.DeleteCostCap)}
			e := newVolumeEnv(t, c, sec, "clock")
			e.job = stubbornJob(t)
			shim := fmt.Sprintf("#!/bin/sh\n# the pod's clock, %d s off\ncase \"$*\" in\n'+%%s') t=$(/usr/bin/date +%%s) && echo $((t + %d)) ;;\n*) exec /usr/bin/date \"$@\" ;;\nesac\n",
				int(skew.Seconds()), int(skew.Seconds()))
			if err := os.WriteFile(filepath.Join(e.vol.Dir, "date"), []byte(shim), 0o755); err != nil {
				t.Fatal(err)
			}
			usd := podPrice * clockCap.Hours()
			args := append([]string{"run"}, e.global()...)
			args = append(args,
				"--network-volume", e.vol.ID, "--volume-path", "/usr/local/bin",
				"--poll", "200ms", "--lease-every", "1s", "--lease-ttl", "3s", "--watchdog-interval", "60s",
				"--probe-wait", "1s", "--snapshot-lead", "2s", "--snapshot-wait", "2s",
				"--start-timeout", "3m", "--verdict-timeout", "3m", "--boot-grace", "60s",
				"--hf-token-env", "CHAOS_HF", "--max-hours", "1",
				"--max-cost-usd", strconv.FormatFloat(usd, 'f', -1, 64),
				"--job", e.job, "--cmd", "sh stubborn.sh")
			l := startLauncher(t, e.bin, e.environ(), args...)
			watching := make(chan struct{})
			go e.watchPods(watching)
			defer close(watching)
			if !l.waitFor(l.says("pod clock ")) {
				t.Fatalf("the launcher never planned the cost cap (%s)", l.state())
			}
			final := e.podEnded(l)
			if got := e.deletedBy(final); got != string(watchdog.DeleteCostCap) {
				t.Errorf("deleted by %q, want %s\n%s", got, watchdog.DeleteCostCap, e.logText())
			}
			start := e.billingStart()
			capAt := start.Add(time.Duration(usd / final.CostPerHr * float64(time.Hour)))
			delta := final.EndedAt.Sub(capAt)
			podCap, _ := e.fileNumber(watchdog.CostCapAt)
			record(t, "clock", fmt.Sprintf("pod clock %+dm: cap landed after the bill reached it by", int(skew.Minutes())),
				"%+.2fs (cost_cap_at %d on the pod's clock, %+ds from ours; billed $%.6f for a cap of $%.6f)",
				delta.Seconds(), podCap, podCap-capAt.Unix(), final.Bill.USD, usd)
			if delta < -ruleBound || delta > ruleBound+Slack {
				t.Errorf("the pod ended %+.2fs from the cap's time (bound ±%s, slack %s on the late side)", delta.Seconds(), ruleBound, Slack)
			}
			e.cleanUp(l)
		})
	}
}

// newVolumeEnv is a cell's world for a launch of its own: a fake Runpod
// with the pod runner, a network volume (where the run directory and the
// watchdog's log outlive the pod), a state directory and an HF token
// named after what.
func newVolumeEnv(t *testing.T, c *cell, sec *secretSet, what string) *env {
	e := &env{t: t, c: c, sec: sec, stateDir: filepath.Join(t.TempDir(), "state"),
		hf: fmt.Sprintf("hf_%s%dToken", what, time.Now().UnixNano()), bin: launcherBinary(t, "")}
	e.srv = checkedfake.NewTestServer(t, runpodtest.WithPodRunner())
	_ = e.srv.Pods()
	e.vol = e.srv.AddNetworkVolume("", 20)
	return e
}

// waitTerminated waits for the cell's pod to be terminated, and fails the
// test when it is not within the package's wait.
func (e *env) waitTerminated() runpodtest.Pod {
	e.t.Helper()
	pod, ok := e.pod()
	if !ok {
		e.t.Fatal("no pod")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	final, err := e.srv.WaitStatus(ctx, pod.ID, runpodtest.StatusTerminated)
	if err != nil {
		e.t.Fatalf("pod still %s after %s: %v\n%s", final.Status, wait, err, e.logText())
	}
	return final
}

// billingStart reads when the launcher counts the bill from: run.json.
func (e *env) billingStart() time.Time {
	m, _ := filepath.Glob(filepath.Join(e.stateDir, "runs", "*", "run.json"))
	if len(m) != 1 {
		e.t.Fatalf("%d runs in the state directory", len(m))
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		e.t.Fatal(err)
	}
	var r struct {
		BillingStart time.Time `json:"billing_start"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.BillingStart.IsZero() {
		e.t.Fatalf("run.json has no billing_start: %v", err)
	}
	return r.BillingStart
}
