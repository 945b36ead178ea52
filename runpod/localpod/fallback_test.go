package localpod

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
		err := CheckFallbacks(c.env, c.files)
		if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.bad)
		}
	}
}
