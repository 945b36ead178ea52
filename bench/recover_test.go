package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// BenchmarkRecoverToRunning measures a recovery against a fresh launch of
// the same run, both on the local emulator (the fake Runpod with its pod
// runner): fresh-s is a launch's time from the launcher's start to "job
// started"; recover-s the time from the pod's host failure
// (runpodtest.Server.FailHost) to "job started" on the new pod, which
// includes the lost pod's confirmed delete, the new pod's create, boot
// and verdict, and the upload of the pulled checkpoint; ratio is
// recover-s / fresh-s, measured in the same run (goal: at most 1.2, plus
// the checkpoint's upload).
//
//	go test -run '^$' -bench RecoverToRunning -benchtime 1x ./bench
func BenchmarkRecoverToRunning(b *testing.B) {
	bin := needLauncher(b)
	flags := []string{"--poll", "200ms", "--lease-every", "1s", "--lease-ttl", "5s", "--watchdog-interval", "1s",
		"--recover", "1", "--pull-every", "1s"}
	for i := 0; i < b.N; i++ {
		srv := runpodtest.NewTestServer(b, runpodtest.WithPodRunner())
		fresh := startLaunch(b, bin, srv, append([]string{"--cmd", "DEMO_STEPS=1 sh train.sh"}, flags...)...)
		fresh.wait(b, 3*time.Minute)
		started, ok := fresh.first(stderrHas("job started"))
		if !ok {
			b.Fatalf("the fresh launch never started its job:\n%s", fresh.output())
		}
		freshS := started.Sub(fresh.started).Seconds()

		srv = runpodtest.NewTestServer(b, runpodtest.WithPodRunner())
		l := startLaunch(b, bin, srv, append([]string{"--cmd", "DEMO_STEPS=40 sh train.sh"}, flags...)...)
		// The host fails once a pull holds the checkpoint of step 5.
		ckpt := l.waitLine(b, func(ln line) bool { return ln.stdout && strings.Contains(ln.text, "checkpoint: step 5 ") }, time.Time{})
		l.waitLine(b, stderrHas("pulled the outputs so far"), ckpt)
		pod := srv.Pods()[0].ID
		lost := time.Now()
		if err := srv.FailHost(pod); err != nil {
			b.Fatal(err)
		}
		again := l.waitLine(b, stderrHas("job started"), lost)
		l.wait(b, 5*time.Minute)
		recoverS := again.Sub(lost).Seconds()
		b.ReportMetric(freshS, "fresh-s")
		b.ReportMetric(recoverS, "recover-s")
		b.ReportMetric(recoverS/freshS, "ratio")
		if testing.Verbose() {
			b.Logf("recovered run:\n%s", l.output())
		}
	}
}

// waitLine waits up to three minutes for a line matching pred that came
// after after, and returns when it came.
func (l *launch) waitLine(b *testing.B, pred func(line) bool, after time.Time) time.Time {
	b.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if at, ok := l.first(func(ln line) bool { return ln.at.After(after) && pred(ln) }); ok {
			return at
		}
		select {
		case <-l.done:
			b.Fatalf("the launcher ended first:\n%s", l.output())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("no such line within 3 minutes:\n%s", l.output())
		}
	}
}
