//go:build linux

package runpodtest

import (
	"slices"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// Images as the tests and the emulator use them: one whose ENTRYPOINT
// ignores its arguments (a shell-form ENTRYPOINT, as a server's own start
// script would), and one whose ENTRYPOINT script sets something up and ends
// in exec "$@", as NVIDIA's CUDA images do.
const (
	ignoringImage = "runpodtest/ignores-args:1"
	execingImage  = "runpodtest/execs-args:1"
)

func testImages() []Option {
	return []Option{
		WithImage(ignoringImage, localpod.Image{
			Entrypoint: []string{"/bin/sh", "-c", `echo "image entrypoint ran, ignoring: $0 $*"; exit 3`},
			Cmd:        []string{"/start.sh"},
		}),
		WithImage(execingImage, localpod.Image{
			Entrypoint: []string{"/opt/image/entrypoint.sh"},
			Cmd:        []string{"sh", "-c", "echo image cmd ran"},
			Env:        map[string]string{"FROM_IMAGE": "image", "OVERRIDDEN": "image"},
			Files: map[string]string{"/opt/image/entrypoint.sh": `#!/bin/sh
echo "image entrypoint: $*"
IMAGE_SETUP=done
export IMAGE_SETUP
exec "$@"
`},
		}),
	}
}

// The runner runs what Docker would for each combination of the image's
// ENTRYPOINT and CMD with the create's entrypoint, cmd or args, with the
// image's env under the pod's and the image's files in the pod's root.
func TestPodRunnerCombinesTheImageWithTheCreate(t *testing.T) {
	requireRunner(t)
	srv := newTestServer(t, append(testImages(), WithPodRunner(), WithExitedOnEnd())...)
	ctx := waitCtx(t)
	const probe = `echo "mine: setup=${IMAGE_SETUP:-none} from=${FROM_IMAGE:-none} over=$OVERRIDDEN"`
	for _, tc := range []struct {
		name, image string
		set         map[string]any
		wantArgv    []string
		want, not   []string
	}{
		{"image pair", execingImage, nil,
			[]string{"/opt/image/entrypoint.sh", "sh", "-c", "echo image cmd ran"},
			[]string{"image entrypoint: sh -c echo image cmd ran\n", "image cmd ran\n"}, nil},
		{"args behind the entrypoint", execingImage, map[string]any{"args": runpod.QuoteArgs([]string{"sh", "-c", probe})},
			[]string{"/opt/image/entrypoint.sh", "sh", "-c", probe},
			[]string{"mine: setup=done from=image over=pod\n"}, []string{"image cmd ran"}},
		{"cmd behind the entrypoint", execingImage, map[string]any{"cmd": []string{"sh", "-c", probe}},
			[]string{"/opt/image/entrypoint.sh", "sh", "-c", probe},
			[]string{"mine: setup=done from=image over=pod\n"}, []string{"image cmd ran"}},
		{"entrypoint bypasses it", execingImage, map[string]any{"entrypoint": []string{"sh", "-c"}, "cmd": []string{probe}},
			[]string{"sh", "-c", probe},
			[]string{"mine: setup=none from=image over=pod\n"}, []string{"image entrypoint", "image cmd ran"}},
		{"args swallowed", ignoringImage, map[string]any{"args": runpod.QuoteArgs([]string{"sh", "-c", probe})},
			[]string{"/bin/sh", "-c", `echo "image entrypoint ran, ignoring: $0 $*"; exit 3`, "sh", "-c", probe},
			[]string{"image entrypoint ran, ignoring: sh -c " + probe + "\n"}, []string{"setup=none", "setup=done"}},
		{"entrypoint not swallowed", ignoringImage, map[string]any{"entrypoint": []string{"sh", "-c", probe}},
			[]string{"sh", "-c", probe},
			[]string{"mine: setup=none from=none over=pod\n"}, []string{"image entrypoint"}},
	} {
		body := shPod(tc.name, "", map[string]string{"OVERRIDDEN": "pod"})
		body["image"] = tc.image
		delete(body, "args")
		for k, v := range tc.set {
			body[k] = v
		}
		created := createPod(t, srv, body)
		p, err := srv.WaitStatus(ctx, created.ID, StatusExited)
		if err != nil {
			t.Fatal(err)
		}
		log := srv.PodLog(created.ID)
		if !slices.Equal(p.Argv, tc.wantArgv) {
			t.Errorf("%s: ran %q, want %q", tc.name, p.Argv, tc.wantArgv)
		}
		for _, w := range tc.want {
			if !strings.Contains(log, w) {
				t.Errorf("%s: the log lacks %q: %q", tc.name, w, log)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(log, n) {
				t.Errorf("%s: the log holds %q: %q", tc.name, n, log)
			}
		}
		mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+created.ID, nil, 204)
	}
}
