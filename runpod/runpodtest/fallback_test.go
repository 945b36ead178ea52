package runpodtest

import (
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// A pod of an image that puts runpodctl on its PATH does not start: it goes
// to ERROR, saying why, before its command runs.
func TestPodWithRunpodctlDoesNotStart(t *testing.T) {
	requireRunner(t)
	const image = "runpodtest/with-runpodctl:1"
	srv := newTestServer(t, WithPodRunner(), WithImage(image, localpod.Image{
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
