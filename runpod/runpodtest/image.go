package runpodtest

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// cloneImage copies img, so that the fake keeps its own.
func cloneImage(img localpod.Image) localpod.Image {
	return localpod.Image{
		Entrypoint: slices.Clone(img.Entrypoint),
		Cmd:        slices.Clone(img.Cmd),
		Env:        maps.Clone(img.Env),
		Files:      maps.Clone(img.Files),
	}
}

// WithImage makes the fake know the image name (matched exactly, tag
// included): pods created with it run its ENTRYPOINT and CMD as Docker
// combines them with the create's (see Server.AddImage).
func WithImage(name string, img localpod.Image) Option {
	return func(c *config) {
		if c.images == nil {
			c.images = map[string]localpod.Image{}
		}
		c.images[name] = cloneImage(img)
	}
}

// AddImage makes the fake know the image name from now on, replacing any
// image of that name; pods created before keep what they had. A pod's
// container then runs by Docker's rules: an entrypoint given by the create
// replaces the image's ENTRYPOINT and drops its CMD; otherwise the image's
// ENTRYPOINT runs, with the create's cmd (or args string) as its arguments,
// or the image's CMD when the create gives none.
func (s *Server) AddImage(name string, img localpod.Image) error {
	if err := img.Check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.images == nil {
		s.cfg.images = map[string]localpod.Image{}
	}
	s.cfg.images[name] = cloneImage(img)
	return nil
}

// imageLocked returns the image of that name, the zero Image when the fake
// does not know it. s.mu must be held.
func (s *Server) imageLocked(name string) localpod.Image {
	return cloneImage(s.cfg.images[name])
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
	} else if words, err := localpod.SplitArgs(stored); err == nil {
		c = words
	}
	if fromArrays && (!slices.Equal(ep, entrypoint) || !slices.Equal(c, cmd)) {
		return "", nil, nil, errors.New("args, entrypoint and cmd describe different commands")
	}
	return stored, ep, c, nil
}
