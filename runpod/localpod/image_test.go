package localpod

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Docker's rules (moby's merge of a container's config with its image's),
// case by case.
func TestContainerArgvFollowsDocker(t *testing.T) {
	both := Image{Entrypoint: []string{"/entry.sh", "-x"}, Cmd: []string{"serve", "--port", "80"}}
	cmdOnly := Image{Cmd: []string{"/start.sh"}}
	entryOnly := Image{Entrypoint: []string{"/entry.sh"}}
	for _, tc := range []struct {
		name    string
		img     Image
		ep, cmd []string
		want    []string
	}{
		{"the image's pair", both, nil, nil, []string{"/entry.sh", "-x", "serve", "--port", "80"}},
		{"cmd replaces the image's CMD behind its ENTRYPOINT", both, nil, []string{"bash", "-c", "x"}, []string{"/entry.sh", "-x", "bash", "-c", "x"}},
		{"an entrypoint drops the image's CMD", both, []string{"bash", "-c"}, nil, []string{"bash", "-c"}},
		{"entrypoint and cmd are the whole command", both, []string{"bash", "-c"}, []string{"x"}, []string{"bash", "-c", "x"}},
		{"an empty entrypoint is none", both, []string{}, []string{"a"}, []string{"/entry.sh", "-x", "a"}},
		{"no ENTRYPOINT: cmd runs alone", cmdOnly, nil, []string{"sh", "-c", "x"}, []string{"sh", "-c", "x"}},
		{"no ENTRYPOINT: the image's CMD", cmdOnly, nil, nil, []string{"/start.sh"}},
		{"no CMD: the ENTRYPOINT alone", entryOnly, nil, nil, []string{"/entry.sh"}},
		{"an unknown image: the create's command", Image{}, []string{"sh"}, []string{"-c", "x"}, []string{"sh", "-c", "x"}},
	} {
		got, err := ContainerArgv(tc.img, tc.ep, tc.cmd)
		if err != nil || !cmp.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if got, err := ContainerArgv(Image{}, nil, nil); err == nil || !strings.Contains(err.Error(), "no command") {
		t.Errorf("no command anywhere: %q, %v", got, err)
	}
}
