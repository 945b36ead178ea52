//go:build linux

package runpodtest

import (
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Images with an ENTRYPOINT of their own, for the end-to-end runs: a
// server whose start script ignores its arguments and serves for ever, and
// Runpod's PyTorch image, whose NVIDIA entrypoint exports a setting for
// the command and ends in exec "$@".
const (
	serverImage = "runpodtest/server-ignores-args:1"
	cudaImage   = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
)

func entrypointImages() []Option {
	return []Option{
		WithImage(serverImage, localpod.Image{
			Entrypoint: []string{"/usr/local/bin/serve"},
			Cmd:        []string{"--port", "8000"},
			Files: map[string]string{"/usr/local/bin/serve": `#!/bin/sh
echo "image server starting, ignoring $# arguments: $1 $2"
exec sleep 100000
`},
		}),
		WithImage(cudaImage, localpod.RunpodPyTorchImage()),
	}
}

// Whatever the image's ENTRYPOINT does with its arguments, the bootstrap
// runs (it is the entrypoint), the watchdog runs and says ready, and the
// pod ends by its own DELETE once the results are retrieved.
func TestE2EImageEntrypointCannotSwallowTheBootstrap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		image string
		env   map[string]string
		// jobEnv must hold, log must show and must not show.
		jobEnv      []string
		log, notLog []string
	}{
		{name: "ignores its arguments", image: serverImage,
			notLog: []string{"image server starting"}},
		{name: "ends in exec", image: cudaImage,
			jobEnv: []string{"export NVIDIA_CPU_ONLY='1'\n", "export NVIDIA_VISIBLE_DEVICES='all'\n"},
			log:    []string{"== CUDA == (runpodtest stand-in", "the job's environment is what the image's entrypoint /opt/nvidia/nvidia_entrypoint.sh sets up"},
			notLog: []string{"Runpod's /start.sh"}},
		{name: "ignores its arguments when the bootstrap runs it", image: serverImage,
			env: map[string]string{"OVERBRAINER_IMAGE_ENTRYPOINT": "/usr/local/bin/serve", "OVERBRAINER_IMAGE_ENTRYPOINT_TIMEOUT": "2"},
			log: []string{"image server starting, ignoring 4 arguments: awk -v\n", "the image's entrypoint /usr/local/bin/serve did not run its arguments"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRun(t, e2eOptions{image: tc.image, env: tc.env, opts: entrypointImages()})
			ctx := r.ctx
			begin := time.Now()
			c := r.dial(ctx)
			defer c.Close()
			if v := r.waitVerdict(ctx, c); v != "ready" {
				t.Fatalf("verdict %q", v)
			}
			// The watchdog runs: its pid file names a live process that
			// is the watchdog's shell.
			pidFile := path.Join(r.runDir(), watchdog.PID)
			if out := r.run(c, `pid=$(cat `+pidFile+`) && kill -0 "$pid" && tr '\0' ' ' </proc/$pid/cmdline`); !strings.Contains(out, "watchdog.sh") {
				t.Errorf("the watchdog does not run: %q", out)
			}
			p, _ := r.srv.Pod(r.podID)
			if !slices.Equal(p.Argv[:2], []string{"bash", "-c"}) {
				t.Errorf("the container ran %q, want the bootstrap's bash -c", p.Argv[:2])
			}
			jobEnv := r.run(c, "cat "+podenv.JobEnv)
			for _, want := range tc.jobEnv {
				if !strings.Contains(jobEnv, want) {
					t.Errorf("the job env lacks %q:\n%s", want, jobEnv)
				}
			}
			if strings.Contains(jobEnv, "RUNPOD_API_KEY") || strings.Contains(jobEnv, r.srv.PodKey(r.podID)) {
				t.Errorf("the job env holds the pod key:\n%s", jobEnv)
			}
			log := r.srv.PodLog(r.podID)
			for _, want := range tc.log {
				if !strings.Contains(log, want) {
					t.Errorf("the pod log lacks %q:\n%s", want, log)
				}
			}
			for _, not := range tc.notLog {
				if strings.Contains(log, not) {
					t.Errorf("the pod log holds %q:\n%s", not, log)
				}
			}
			r.run(c, "touch "+path.Join(r.runDir(), watchdog.Retrieved))
			r.checkEnded(ctx, time.Since(begin).Seconds()+120)
		})
	}
}

// The old form, the bootstrap as CMD behind the image's ENTRYPOINT, on an
// image whose ENTRYPOINT ignores its arguments: the fake runs what Runpod
// would, the image's server, and no bootstrap at all. This is the pod
// that nothing but the deadline would end, and why the bootstrap is sent
// as the entrypoint.
func TestE2EBootstrapAsCMDIsSwallowed(t *testing.T) {
	r := startRun(t, e2eOptions{image: serverImage, asCMD: true, opts: entrypointImages()})
	if _, err := r.srv.WaitStatus(r.ctx, r.podID, StatusRunning); err != nil {
		t.Fatal(err)
	}
	waitLog(t, r.srv, r.podID, "image server starting, ignoring 3 arguments: bash -c\n")
	p, _ := r.srv.Pod(r.podID)
	if len(p.Argv) != 4 || p.Argv[0] != "/usr/local/bin/serve" || p.Argv[1] != "bash" {
		t.Errorf("the container ran %.40q, want the image's server with the bootstrap as arguments", p.Argv)
	}
	if log := r.srv.PodLog(r.podID); strings.Contains(log, "overbrainer bootstrap") {
		t.Errorf("the bootstrap ran:\n%s", log)
	}
	mustCall(t, r.srv, r.srv.APIKey(), "DELETE", "/v2/pods/"+r.podID, nil, 204)
}
