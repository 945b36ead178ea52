package runpodtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// Image is what the fake knows of a container image: what its config says
// the container runs, the env it sets, and files it adds to the pod's root
// (over the host's, which the pod otherwise sees). A pod whose image the
// fake does not know has no ENTRYPOINT, no CMD, no env and no files of its
// own: its create must give the whole command.
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

func (img Image) clone() Image {
	return Image{
		Entrypoint: slices.Clone(img.Entrypoint),
		Cmd:        slices.Clone(img.Cmd),
		Env:        maps.Clone(img.Env),
		Files:      maps.Clone(img.Files),
	}
}

func (img Image) check() error {
	for p := range img.Files {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			return fmt.Errorf("runpodtest: image file %q is not a clean absolute path", p)
		}
	}
	for k := range img.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("runpodtest: bad image env name %q", k)
		}
	}
	return nil
}

// WithImage makes the fake know the image name (matched exactly, tag
// included): pods created with it run its ENTRYPOINT and CMD as Docker
// combines them with the create's (see Server.AddImage).
func WithImage(name string, img Image) Option {
	return func(c *config) {
		if c.images == nil {
			c.images = map[string]Image{}
		}
		c.images[name] = img.clone()
	}
}

// AddImage makes the fake know the image name from now on, replacing any
// image of that name; pods created before keep what they had. A pod's
// container then runs by Docker's rules: an entrypoint given by the create
// replaces the image's ENTRYPOINT and drops its CMD; otherwise the image's
// ENTRYPOINT runs, with the create's cmd (or args string) as its arguments,
// or the image's CMD when the create gives none.
func (s *Server) AddImage(name string, img Image) error {
	if err := img.check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.images == nil {
		s.cfg.images = map[string]Image{}
	}
	s.cfg.images[name] = img.clone()
	return nil
}

// imageLocked returns the image of that name, the zero Image when the fake
// does not know it. s.mu must be held.
func (s *Server) imageLocked(name string) Image {
	return s.cfg.images[name].clone()
}

// startCommand reads a create's command, given as args, entrypoint and cmd,
// the way Runpod stores it: args is "a bare shell string used as CMD, split
// into words", or a JSON {"entrypoint": [...], "cmd": [...]}; entrypoint
// and cmd are the same in exec form. Given together, they must describe
// the same command. It returns args as stored (the arrays encoded as the
// JSON object when args was not given) and the command taken apart; a
// shell string that does not split leaves cmd nil (the runner then says
// why). An empty array is no array: "send [] to clear".
func startCommand(args *string, entrypoint, cmd []string) (stored string, ep, c []string, err error) {
	fromArrays := len(entrypoint) > 0 || len(cmd) > 0
	if args == nil || *args == "" {
		if !fromArrays {
			return "", nil, nil, nil
		}
		obj := map[string][]string{}
		if len(entrypoint) > 0 {
			obj["entrypoint"] = entrypoint
		}
		if len(cmd) > 0 {
			obj["cmd"] = cmd
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return "", nil, nil, err
		}
		return string(b), slices.Clone(entrypoint), slices.Clone(cmd), nil
	}
	stored = *args
	if trimmed := strings.TrimSpace(stored); strings.HasPrefix(trimmed, "{") {
		var v struct {
			Entrypoint []string `json:"entrypoint"`
			Cmd        []string `json:"cmd"`
		}
		dec := json.NewDecoder(strings.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || dec.More() {
			return "", nil, nil, errors.New(`args: not a JSON object {"entrypoint": [strings], "cmd": [strings]}`)
		}
		ep, c = v.Entrypoint, v.Cmd
	} else if words, err := SplitArgs(stored); err == nil {
		c = words
	}
	if fromArrays && (!slices.Equal(ep, entrypoint) || !slices.Equal(c, cmd)) {
		return "", nil, nil, errors.New("args, entrypoint and cmd describe different commands")
	}
	return stored, ep, c, nil
}

// containerArgv is what Docker runs for a container of img created with
// entrypoint and cmd (moby's merge of a container's config with its
// image's): an entrypoint of the create replaces the image's and drops the
// image's CMD; without one, the image's ENTRYPOINT runs, followed by the
// create's cmd, or by the image's CMD when the create gives none.
func containerArgv(img Image, entrypoint, cmd []string) ([]string, error) {
	ep, c := entrypoint, cmd
	if len(ep) == 0 {
		ep = img.Entrypoint
		if len(c) == 0 {
			c = img.Cmd
		}
	}
	argv := slices.Concat(ep, c)
	if len(argv) == 0 {
		return nil, errors.New("runpodtest: no command specified: the create gives no entrypoint, cmd or args, and the image (unknown to the fake unless added with AddImage or WithImage) has no ENTRYPOINT or CMD")
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
