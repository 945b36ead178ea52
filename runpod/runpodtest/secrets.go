package runpodtest

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Account secrets, as REST v2 serves them under /v2/account/secrets. The
// fake takes names as unique ignoring case (as its ?name= filter ignores
// case): the stricter of the two readings of Runpod's document, so a
// client that assumes case matters meets the conflict here first.

// secretNameRE is Runpod's rule for a secret name; a name also must not
// start with RUNPOD (any case) and holds at most 191 characters.
var secretNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.\-/]*$`)

const (
	maxSecretName  = 191
	maxSecretValue = 16 << 20 // the value must be strictly under this
	maxSecretDesc  = 65535
)

type wireSecret struct {
	ID                 string  `json:"id"`
	Name               string  `json:"name"`
	Description        *string `json:"description"`
	CreatedAt          string  `json:"createdAt"`
	ValueLastUpdatedAt *string `json:"valueLastUpdatedAt"`
}

type wireListSecrets struct {
	Secrets []wireSecret `json:"secrets"`
}

type wireCreateSecret struct {
	Name        *string `json:"name"`
	Value       *string `json:"value"`
	Description *string `json:"description"`
}

type wireUpdateSecret struct {
	Value       *string `json:"value"`
	Description *string `json:"description"`
}

func (sec *Secret) wire() wireSecret {
	out := wireSecret{ID: sec.ID, Name: sec.Name, CreatedAt: sec.CreatedAt.UTC().Format(time.RFC3339)}
	if sec.Description != "" {
		d := sec.Description
		out.Description = &d
	}
	if !sec.ValueUpdatedAt.IsZero() {
		v := sec.ValueUpdatedAt.UTC().Format(time.RFC3339)
		out.ValueLastUpdatedAt = &v
	}
	return out
}

// checkSecretName returns the 422 errors of a name.
func checkSecretName(name *string) []string {
	switch {
	case name == nil:
		return []string{"$.name: required"}
	case len(*name) < 1 || len(*name) > maxSecretName:
		return []string{fmt.Sprintf("$.name: length %d not in 1..%d", len(*name), maxSecretName)}
	case !secretNameRE.MatchString(*name):
		return []string{"$.name: does not match " + secretNameRE.String()}
	case len(*name) >= 6 && strings.EqualFold((*name)[:6], "RUNPOD"):
		return []string{"$.name: the prefix RUNPOD is reserved"}
	}
	return nil
}

// checkSecretValue returns the 422 errors of a value; they never quote it.
func checkSecretValue(value *string, required bool) []string {
	switch {
	case value == nil && required:
		return []string{"$.value: required"}
	case value == nil:
		return nil
	case len(*value) < 1 || len(*value) >= maxSecretValue:
		return []string{fmt.Sprintf("$.value: %d bytes, must be 1 byte to under 16 MiB", len(*value))}
	}
	return nil
}

func checkSecretDesc(d *string) []string {
	if d != nil && len(*d) > maxSecretDesc {
		return []string{fmt.Sprintf("$.description: longer than %d bytes", maxSecretDesc)}
	}
	return nil
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	name, filter := r.URL.Query()["name"]
	s.mu.Lock()
	out := wireListSecrets{Secrets: []wireSecret{}}
	for _, sec := range s.secrets {
		if !filter || strings.EqualFold(sec.Name, name[0]) {
			out.Secrets = append(out.Secrets, sec.wire())
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createSecret(w http.ResponseWriter, r *http.Request) {
	var req wireCreateSecret
	if err := decodeStrict(r, &req); err != nil {
		refuseBody(w, err)
		return
	}
	errs := append(checkSecretName(req.Name), checkSecretValue(req.Value, true)...)
	errs = append(errs, checkSecretDesc(req.Description)...)
	if len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return
	}
	s.mu.Lock()
	if s.secretByNameLocked(*req.Name) != nil {
		s.mu.Unlock()
		writeProblem(w, http.StatusConflict, "a secret with this name already exists")
		return
	}
	now := s.cfg.now()
	sec := &Secret{ID: newID(), Name: *req.Name, Value: *req.Value, CreatedAt: now, ValueUpdatedAt: now}
	if req.Description != nil {
		sec.Description = *req.Description
	}
	s.secrets = append(s.secrets, sec)
	out := sec.wire()
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) getSecret(w http.ResponseWriter, id string) {
	s.mu.Lock()
	i := s.secretIndexLocked(id)
	var out wireSecret
	if i >= 0 {
		out = s.secrets[i].wire()
	}
	s.mu.Unlock()
	if i < 0 {
		writeProblem(w, http.StatusNotFound, "secret not found")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) patchSecret(w http.ResponseWriter, r *http.Request, id string) {
	var req wireUpdateSecret
	if err := decodeStrict(r, &req); err != nil {
		refuseBody(w, err)
		return
	}
	var errs []string
	if req.Value == nil && req.Description == nil {
		errs = append(errs, "$: minProperties 1")
	}
	errs = append(errs, checkSecretValue(req.Value, false)...)
	errs = append(errs, checkSecretDesc(req.Description)...)
	if len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return
	}
	s.mu.Lock()
	i := s.secretIndexLocked(id)
	if i < 0 {
		s.mu.Unlock()
		writeProblem(w, http.StatusNotFound, "secret not found")
		return
	}
	sec := s.secrets[i]
	if req.Value != nil {
		sec.Value, sec.ValueUpdatedAt = *req.Value, s.cfg.now()
	}
	if req.Description != nil {
		sec.Description = *req.Description
	}
	out := sec.wire()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteSecret(w http.ResponseWriter, id string) {
	s.mu.Lock()
	i := s.secretIndexLocked(id)
	if i >= 0 {
		s.secrets = append(s.secrets[:i:i], s.secrets[i+1:]...)
	}
	s.mu.Unlock()
	if i < 0 {
		writeProblem(w, http.StatusNotFound, "secret not found")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// secretByNameLocked finds a secret by name, ignoring case. s.mu must be
// held.
func (s *Server) secretByNameLocked(name string) *Secret {
	for _, sec := range s.secrets {
		if strings.EqualFold(sec.Name, name) {
			return sec
		}
	}
	return nil
}

func (s *Server) secretIndexLocked(id string) int {
	for i, sec := range s.secrets {
		if sec.ID == id {
			return i
		}
	}
	return -1
}
