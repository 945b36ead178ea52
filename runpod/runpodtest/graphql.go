package runpodtest

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
)

// The GraphQL endpoint serves only the secret calls v2 lacks. It does not
// parse GraphQL: it finds the operation's field in the query text and reads
// its arguments from the variables, or from simple inline string literals.

type graphQLRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables"`
}

type graphQLError struct {
	Message string `json:"message"`
}

var (
	secretNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	// inlineArg finds `name: "value"` in a query, GraphQL string escapes
	// included.
	inlineArgRE = regexp.MustCompile(`\b(name|value|id)\s*:\s*"((?:[^"\\]|\\.)*)"`)
)

func writeGraphQL(w http.ResponseWriter, status int, data any, errs ...string) {
	body := map[string]any{}
	if data != nil {
		body["data"] = data
	}
	if len(errs) > 0 {
		list := make([]graphQLError, len(errs))
		for i, e := range errs {
			list[i] = graphQLError{Message: e}
		}
		body["errors"] = list
		if data == nil {
			body["data"] = nil
		}
	}
	writeJSON(w, status, body)
}

func (s *Server) serveGraphQL(w http.ResponseWriter, r *http.Request, caller string) {
	if r.Method != http.MethodPost {
		writeGraphQL(w, http.StatusMethodNotAllowed, nil, "POST a JSON body with query and variables")
		return
	}
	switch caller {
	case CallerNone:
		writeGraphQL(w, http.StatusUnauthorized, nil, "Unauthorized: missing or invalid api key")
		return
	case CallerAccount:
	default:
		writeGraphQL(w, http.StatusForbidden, nil, "Forbidden: a pod-scoped key cannot manage secrets")
		return
	}
	var req graphQLRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeGraphQL(w, http.StatusBadRequest, nil, "invalid JSON body: "+err.Error())
		return
	}
	q := req.Query
	if errs := checkVariables(req); len(errs) > 0 {
		// A real GraphQL server refuses the whole operation before running
		// any of it.
		writeGraphQL(w, http.StatusBadRequest, nil, errs...)
		return
	}
	switch {
	case strings.Contains(q, "secretCreate"):
		s.secretCreate(w, req)
	case strings.Contains(q, "secretDelete"):
		s.secretDelete(w, req)
	case strings.Contains(q, "myself") && strings.Contains(q, "secrets"):
		s.mu.Lock()
		list := make([]map[string]string, 0, len(s.secrets))
		for _, sec := range s.secrets {
			list = append(list, map[string]string{"id": sec.ID, "name": sec.Name})
		}
		s.mu.Unlock()
		writeGraphQL(w, http.StatusOK, map[string]any{"myself": map[string]any{"secrets": list}})
	default:
		writeGraphQL(w, http.StatusOK, nil, "runpodtest serves only secretCreate, secretDelete and myself { secrets }")
	}
}

// graphQLArgs gathers the operation's string arguments: variables first
// (an `input` object, or top-level values), then inline literals.
func graphQLArgs(req graphQLRequest) map[string]string {
	args := map[string]string{}
	take := func(m map[string]any) {
		for k, v := range m {
			if s, ok := v.(string); ok {
				if _, seen := args[k]; !seen {
					args[k] = s
				}
			}
		}
	}
	if in, ok := req.Variables["input"].(map[string]any); ok {
		take(in)
	}
	take(req.Variables)
	for _, m := range inlineArgRE.FindAllStringSubmatch(req.Query, -1) {
		if _, seen := args[m[1]]; seen {
			continue
		}
		var v string
		if err := json.Unmarshal([]byte(`"`+m[2]+`"`), &v); err == nil {
			args[m[1]] = v
		}
	}
	return args
}

func (s *Server) secretCreate(w http.ResponseWriter, req graphQLRequest) {
	args := graphQLArgs(req)
	name, value := args["name"], args["value"]
	if !secretNameRE.MatchString(name) {
		writeGraphQL(w, http.StatusOK, nil, "secretCreate: a name of letters, digits, _ . - is required")
		return
	}
	if value == "" {
		writeGraphQL(w, http.StatusOK, nil, "secretCreate: a value is required")
		return
	}
	s.mu.Lock()
	for _, sec := range s.secrets {
		if sec.Name == name {
			s.mu.Unlock()
			writeGraphQL(w, http.StatusOK, nil, "secretCreate: a secret named "+name+" already exists")
			return
		}
	}
	sec := &Secret{ID: newID(), Name: name, Value: value}
	s.secrets = append(s.secrets, sec)
	s.mu.Unlock()
	writeGraphQL(w, http.StatusOK, map[string]any{"secretCreate": map[string]string{"id": sec.ID, "name": sec.Name}})
}

func (s *Server) secretDelete(w http.ResponseWriter, req graphQLRequest) {
	id := graphQLArgs(req)["id"]
	s.mu.Lock()
	found := -1
	for i, sec := range s.secrets {
		if sec.ID == id {
			found = i
		}
	}
	if found < 0 {
		s.mu.Unlock()
		writeGraphQL(w, http.StatusOK, nil, "secretDelete: no secret with id "+id)
		return
	}
	sec := s.secrets[found]
	s.secrets = append(s.secrets[:found:found], s.secrets[found+1:]...)
	s.mu.Unlock()
	// Runpod's secretDelete returns nothing useful; a selection set gets the
	// deleted secret back.
	var data any
	if i := strings.Index(req.Query, "secretDelete"); i >= 0 && strings.Contains(req.Query[i:], "{") {
		data = map[string]string{"id": sec.ID, "name": sec.Name}
	}
	writeGraphQL(w, http.StatusOK, map[string]any{"secretDelete": data})
}

// argTypes are the GraphQL types of the arguments (and input fields) of the
// operations the fake serves, as Runpod's schema declares them.
var argTypes = map[string]string{
	"input":       "SecretCreateInput!", // secretCreate(input:)
	"name":        "String!",            // SecretCreateInput.name
	"value":       "String!",            // SecretCreateInput.value
	"description": "String",             // SecretCreateInput.description
	"id":          "ID!",                // secretDelete(id:)
}

var (
	// opHeaderRE finds an operation's variable definitions:
	// `mutation Name($a: T!, $b: U)`.
	opHeaderRE = regexp.MustCompile(`^\s*(?:query|mutation)\s*\w*\s*\(([^)]*)\)`)
	varDefRE   = regexp.MustCompile(`\$(\w+)\s*:\s*([\w!\[\]]+)`)
	// varUseRE finds `arg: $var` in the selection.
	varUseRE = regexp.MustCompile(`\b(\w+)\s*:\s*\$(\w+)`)
)

// checkVariables does the part of GraphQL validation that a client can get
// wrong in its query text: every variable used is declared, with a type the
// argument accepts (the same type, or its non-null form where null is
// allowed), and every required variable is given a value of its kind.
// Messages follow graphql-js.
func checkVariables(req graphQLRequest) []string {
	declared := map[string]string{}
	body := req.Query
	if m := opHeaderRE.FindStringSubmatchIndex(req.Query); m != nil {
		for _, d := range varDefRE.FindAllStringSubmatch(req.Query[m[2]:m[3]], -1) {
			declared[d[1]] = d[2]
		}
		body = req.Query[m[1]:]
	}
	var errs []string
	for _, u := range varUseRE.FindAllStringSubmatch(body, -1) {
		arg, name := u[1], u[2]
		typ, ok := declared[name]
		if !ok {
			errs = append(errs, `Variable "$`+name+`" is not defined.`)
			continue
		}
		want, known := argTypes[arg]
		if known && typ != want && typ != want+"!" {
			errs = append(errs, `Variable "$`+name+`" of type "`+typ+`" used in position expecting type "`+want+`".`)
		}
	}
	for name, typ := range declared {
		v, given := req.Variables[name]
		switch {
		case (!given || v == nil) && strings.HasSuffix(typ, "!"):
			errs = append(errs, `Variable "$`+name+`" of required type "`+typ+`" was not provided.`)
		case !given || v == nil:
		case !valueFits(strings.TrimSuffix(typ, "!"), v):
			errs = append(errs, `Variable "$`+name+`" got invalid value for type "`+typ+`".`)
		}
	}
	return errs
}

// valueFits reports whether a JSON value can be coerced to the named type.
func valueFits(typ string, v any) bool {
	switch typ {
	case "String":
		_, ok := v.(string)
		return ok
	case "ID":
		switch v.(type) {
		case string, float64:
			return true
		}
		return false
	case "SecretCreateInput":
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}
