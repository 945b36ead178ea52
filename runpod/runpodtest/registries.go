package runpodtest

import "net/http"

// Registry is one of the fake account's container registry credentials.
// Its username and password are never served, as Runpod's are not, so
// the fake keeps none.
type Registry struct {
	ID   string
	Name string
}

// AddRegistry adds a container registry credential, as POST /v2/registries
// would, and returns it: a create that names its ID is accepted, one that
// names another is answered 404.
func (s *Server) AddRegistry(name string) Registry {
	s.mu.Lock()
	defer s.mu.Unlock()
	reg := Registry{ID: newID(), Name: name}
	s.registries = append(s.registries, reg)
	return reg
}

// registryLocked says whether id is one of the account's credentials.
func (s *Server) registryLocked(id string) bool {
	for _, r := range s.registries {
		if r.ID == id {
			return true
		}
	}
	return false
}

type wireRegistry struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// listRegistries serves GET /v2/registries.
func (s *Server) listRegistries(w http.ResponseWriter) {
	s.mu.Lock()
	out := struct {
		Registries []wireRegistry `json:"registries"`
	}{Registries: []wireRegistry{}}
	for _, r := range s.registries {
		out.Registries = append(out.Registries, wireRegistry(r))
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}
