package localpod

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Image is what a local pod knows of its container image: what its config
// says the container runs, the env it sets, and files it adds to the pod's
// root (over the host's, which the pod otherwise sees). A pod whose image
// is not known (the zero Image) has no ENTRYPOINT, no CMD, no env and no
// files of its own: its create must give the whole command.
type Image struct {
	// Entrypoint and Cmd are the image's ENTRYPOINT and CMD in exec form.
	// A shell-form ENTRYPOINT is ["/bin/sh", "-c", "..."], which ignores
	// the CMD behind it, as Docker's does.
	Entrypoint []string
	Cmd        []string
	// Env is the image's ENV; the pod's own env wins over it.
	Env map[string]string
	// Files maps an absolute path in the pod to the content of an
	// executable file (mode 0755) there, e.g. an entrypoint script.
	Files map[string]string
}

// Check says what of img a pod cannot have: a file path that is not
// clean and absolute, an env name that is empty or holds '=' or NUL.
func (img Image) Check() error {
	for p := range img.Files {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			return fmt.Errorf("localpod: image file %q is not a clean absolute path", p)
		}
	}
	for k := range img.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("localpod: bad image env name %q", k)
		}
	}
	return nil
}

// ContainerArgv is what Docker runs for a container of img created with
// entrypoint and cmd (moby's merge of a container's config with its
// image's): an entrypoint of the create replaces the image's and drops the
// image's CMD; without one, the image's ENTRYPOINT runs, followed by the
// create's cmd, or by the image's CMD when the create gives none.
func ContainerArgv(img Image, entrypoint, cmd []string) ([]string, error) {
	ep, c := entrypoint, cmd
	if len(ep) == 0 {
		ep = img.Entrypoint
		if len(c) == 0 {
			c = img.Cmd
		}
	}
	argv := slices.Concat(ep, c)
	if len(argv) == 0 {
		return nil, errors.New("localpod: no command specified: the create gives no entrypoint, cmd or args, and the image (unknown to the fake unless added with AddImage or WithImage) has no ENTRYPOINT or CMD")
	}
	return argv, nil
}

// RunpodPyTorchImage is a stand-in for Runpod's PyTorch images, which are
// built on NVIDIA's CUDA images: their ENTRYPOINT,
// /opt/nvidia/nvidia_entrypoint.sh, prints NVIDIA's banner, sets what its
// entrypoint.d scripts export (here NVIDIA_CPU_ONLY=1, as its driver
// check does on a machine without an NVIDIA driver) and execs its
// arguments; their CMD, /start.sh, starts Runpod's services and sleeps
// (here it only says so). Register it under a real image's name (the
// launcher's local emulator does, for guard.DefaultImage) so that local
// pods meet the ENTRYPOINT and CMD a Runpod pod of that image has.
func RunpodPyTorchImage() Image {
	return Image{
		Entrypoint: []string{"/opt/nvidia/nvidia_entrypoint.sh"},
		Cmd:        []string{"/start.sh"},
		Env:        map[string]string{"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
		Files: map[string]string{
			"/opt/nvidia/nvidia_entrypoint.sh": `#!/bin/sh
# runpodtest's stand-in for NVIDIA's entrypoint.
echo "== CUDA == (runpodtest stand-in for /opt/nvidia/nvidia_entrypoint.sh)"
echo "WARNING: The NVIDIA Driver was not detected (a local emulator has none)."
NVIDIA_CPU_ONLY=1
export NVIDIA_CPU_ONLY
[ "$#" -gt 0 ] || exec /bin/bash
exec "$@"
`,
			"/start.sh": `#!/bin/sh
# runpodtest's stand-in for Runpod's /start.sh.
echo "runpodtest stand-in for Runpod's /start.sh: nginx, Jupyter and sshd would start here"
while :; do sleep 3600; done
`,
		},
	}
}
