package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// --stall-after and --min-gpu-util are in -h, reach the pod's env (for
// its watchdog) and the run's record (for a launcher that attaches).
func TestStallFlagsReachThePod(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if p := w.run("run", "-h"); p.code != 0 || !strings.Contains(p.stderr.String(), "-stall-after") || !strings.Contains(p.stderr.String(), "-min-gpu-util") {
		t.Fatalf("run -h: exit %d, without --stall-after and --min-gpu-util\n%s", p.code, p.stderr)
	}
	p := w.run(append(append([]string{"run"}, fast...), append([]string{"--stall-after", "7m", "--min-gpu-util", "40"}, demo(2)...)...)...)
	if p.code != 0 {
		t.Fatalf("exit %d\n%s", p.code, p.stderr)
	}
	r := w.onlyRun()
	if r.StallAfter != 7*time.Minute || r.MinGPUUtil != 40 {
		t.Errorf("record: stall after %s, min GPU %d", r.StallAfter, r.MinGPUUtil)
	}
	pod, err := podenv.Parse(w.pod(r).Env)
	if err != nil {
		t.Fatal(err)
	}
	if pod.StallAfter != 7*time.Minute || pod.MinGPUUtil != 40 {
		t.Errorf("the pod's env: stall after %s, min GPU %d", pod.StallAfter, pod.MinGPUUtil)
	}
	w.assertClean()
}

// The stall rule is off by default, which -h says; --stall-after off and
// --stall-after 0 leave it off: the run's record has no StallAfter and
// the pod's env says 0, so its watchdog deletes nothing for a stall.
func TestStallOffByDefault(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if p := w.run("run", "-h"); p.code != 0 || !strings.Contains(p.stderr.String(), "--stall-after duration|off") || !strings.Contains(p.stderr.String(), "(default off)") {
		t.Fatalf("run -h: exit %d, without --stall-after off by default\n%s", p.code, p.stderr)
	}
	for _, v := range []string{"off", "0"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			p := w.run(append(append([]string{"run"}, fast...), append([]string{"--stall-after", v}, demo(2)...)...)...)
			if p.code != 0 {
				t.Fatalf("exit %d\n%s", p.code, p.stderr)
			}
			r := w.onlyRun()
			env := w.pod(r).Env
			if r.StallAfter != 0 || env[podenv.StallAfterEnv] != "0" {
				t.Errorf("record: stall after %s; the pod's env: %s=%q; want off, 0", r.StallAfter, podenv.StallAfterEnv, env[podenv.StallAfterEnv])
			}
			w.assertClean()
		})
	}
}
