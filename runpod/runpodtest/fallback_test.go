package runpodtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// A pod whose delete fallbacks could leave the machine is refused: an API
// URL off loopback, or a runpodctl on its PATH (the host's or the
// image's).
func TestFallbackStaysLocal(t *testing.T) {
	bin := t.TempDir()
	ctl := t.TempDir()
	if err := os.WriteFile(filepath.Join(ctl, "runpodctl"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := func(api, path string) map[string]string {
		return map[string]string{podenv.APIURLEnv: api, "PATH": path}
	}
	for _, c := range []struct {
		name  string
		env   map[string]string
		files map[string]string
		bad   string
	}{
		{"loopback", env("http://127.0.0.1:4000/v2", bin), nil, ""},
		{"ipv6 loopback", env("http://[::1]:4000/v2", bin), nil, ""},
		{"off loopback", env("https://api.runpod.io/v2", bin), nil, "not on a loopback address"},
		{"no API URL", env("", bin), nil, "not on a loopback address"},
		{"runpodctl on the host's PATH", env("http://127.0.0.1:4000/v2", bin+":"+ctl), nil, "runpodctl is on the pod's PATH"},
		{"runpodctl in the image", env("http://127.0.0.1:4000/v2", "/opt/x:"+bin), map[string]string{"/opt/x/runpodctl": ""}, "runpodctl is on the pod's PATH"},
	} {
		err := fallbackStaysLocal(c.env, c.files)
		if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.bad)
		}
	}
}

// A pod of an image that puts runpodctl on its PATH does not start: it goes
// to ERROR, saying why, before its command runs.
func TestPodWithRunpodctlDoesNotStart(t *testing.T) {
	requireRunner(t)
	const image = "runpodtest/with-runpodctl:1"
	srv := newTestServer(t, WithPodRunner(), WithImage(image, Image{
		Files: map[string]string{"/usr/local/bin/runpodctl": "#!/bin/sh\nexit 0\n"},
	}))
	body := shPod("with runpodctl", "echo command ran", nil)
	body["image"] = image
	created := createPod(t, srv, body)
	p, err := srv.WaitStatus(waitCtx(t), created.ID, StatusError)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Error, "runpodctl is on the pod's PATH") || strings.Contains(srv.PodLog(created.ID), "command ran") {
		t.Errorf("error %q, log %q", p.Error, srv.PodLog(created.ID))
	}
}
