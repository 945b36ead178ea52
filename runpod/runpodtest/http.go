package runpodtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// maxBody bounds what the fake reads of a request body: a secret's value
// may hold up to 16 MiB, which JSON escaping may grow.
const maxBody = 40 << 20

// statusRecorder writes the status a handler answers into the request log
// as it answers, so that the log is complete before anything that follows
// the answer.
type statusRecorder struct {
	http.ResponseWriter
	s      *Server
	entry  int
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	w.log(code)
	w.ResponseWriter.WriteHeader(code)
}

// log records code as the answer, once, without writing it yet.
func (w *statusRecorder) log(code int) {
	if w.status == 0 {
		w.status = code
		w.s.logMu.Lock()
		w.s.requests[w.entry].Status = code
		w.s.logMu.Unlock()
	}
}

// logStatus records code in the request log as the answer w will write,
// for a handler whose change must never be seen before its answer is
// logged: it calls it where it makes the change, under the same lock.
func logStatus(w http.ResponseWriter, code int) {
	if r, ok := w.(*statusRecorder); ok {
		r.log(code)
	}
}

// Unwrap lets http.ResponseController reach the connection (the log
// stream flushes each event).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "could not read the request body")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))

	// Every answer names its request, as Runpod's do, so that a client
	// can quote it in a report; the log keeps it too.
	reqID := newRequestID()
	w.Header().Set("X-Request-Id", reqID)
	s.mu.Lock()
	caller := s.callerLocked(r)
	s.logMu.Lock()
	entry := len(s.requests)
	s.requests = append(s.requests, Request{
		ID:       reqID,
		Time:     s.cfg.now(),
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Body:     body,
		Caller:   caller,
	})
	s.logMu.Unlock()
	var overQuota bool
	var wait time.Duration
	if caller != CallerNone && (r.URL.Path == "/v2" || strings.HasPrefix(r.URL.Path, "/v2/")) {
		overQuota, wait = s.takeQuotaLocked(caller, w.Header())
	}
	var fault *Fault
	if !overQuota {
		fault = s.takeFaultLocked(r.Method, r.URL.Path, caller)
	}
	s.mu.Unlock()

	if overQuota {
		// The limiter stands in front of the API: nothing behind it runs.
		s.logMu.Lock()
		s.requests[entry].Status = http.StatusTooManyRequests
		s.logMu.Unlock()
		writeProblem(w, http.StatusTooManyRequests, "rate limit exceeded, retry in "+wait.String())
		return
	}

	if fault != nil {
		s.logMu.Lock()
		s.requests[entry].Fault = true
		if !fault.Hang && !fault.Drop && !fault.Lost {
			s.requests[entry].Status = fault.Status
		}
		s.logMu.Unlock()
		s.serveFault(w, r, fault, caller)
		return
	}

	s.route(&statusRecorder{ResponseWriter: w, s: s, entry: entry}, r, caller)
}

// callerLocked names whose key made the request: CallerAccount, a pod id,
// or CallerNone. s.mu must be held.
func (s *Server) callerLocked(r *http.Request) string {
	key := bearer(r)
	switch {
	case key == "":
		return CallerNone
	case key == s.cfg.apiKey:
		return CallerAccount
	}
	if id, ok := s.podKeys[key]; ok {
		return id
	}
	return CallerNone
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// route serves the API behind the faults. What every path shares comes
// first, in this order: a path off /v2 answers 404, a request without a
// valid key 401, a path the document lacks 404, a method its path lacks
// 405 (apiPaths, the document's table). The operation then goes to its
// handler through s.api, net/http patterns behind podScope.
func (s *Server) route(w http.ResponseWriter, r *http.Request, caller string) {
	path := r.URL.Path
	if path != "/v2" && !strings.HasPrefix(path, "/v2/") {
		writeProblem(w, http.StatusNotFound, "no such path: "+path)
		return
	}
	if caller == CallerNone {
		if bearer(r) == "" {
			writeProblem(w, http.StatusUnauthorized, "missing bearer token")
		} else {
			writeProblem(w, http.StatusUnauthorized, "invalid api key")
		}
		return
	}
	if path == "/v2/openapi.json" && r.Method == http.MethodGet {
		serveDocument(w)
		return
	}
	parts := strings.Split(strings.Trim(strings.TrimPrefix(path, "/v2"), "/"), "/")
	methods, ok := documented(parts)
	if !ok {
		// Runpod's document has no such path: 501 is only for what it
		// has and the fake does not serve.
		writeProblem(w, http.StatusNotFound, "no such path: "+path)
		return
	}
	if !slices.Contains(methods, r.Method) {
		methodNotAllowed(w, strings.Join(methods, ", "))
		return
	}
	s.api.ServeHTTP(w, apiRequest(r, parts, caller))
}

// routed is what route tells the API's handlers of a request besides the
// request itself: whose key made it (CallerAccount or a pod id) and its
// path as it came.
type routed struct{ caller, path string }

type routedKey struct{}

func routedOf(r *http.Request) routed {
	v, _ := r.Context().Value(routedKey{}).(routed)
	return v
}

// apiRequest is r as the API's mux reads it: the document's path that
// parts names, in canonical form, each segment escaped (dots too) so that
// the mux takes a segment such as ".." for the id it is here, neither
// cleaning nor redirecting the path.
func apiRequest(r *http.Request, parts []string, caller string) *http.Request {
	escaped := make([]string, len(parts))
	for i, p := range parts {
		escaped[i] = strings.ReplaceAll(url.PathEscape(p), ".", "%2E")
	}
	r2 := r.WithContext(context.WithValue(r.Context(), routedKey{}, routed{caller: caller, path: r.URL.Path}))
	u := *r.URL
	u.Path = "/v2/" + strings.Join(parts, "/")
	u.RawPath = "/v2/" + strings.Join(escaped, "/")
	r2.URL = &u
	return r2
}

// newAPI routes each operation of the document: those the fake serves to
// their handlers, every other one to notImplemented (doc.go lists them),
// each behind podScope.
func (s *Server) newAPI() *http.ServeMux {
	id := func(h func(http.ResponseWriter, string)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { h(w, r.PathValue("id")) }
	}
	withID := func(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { h(w, r, r.PathValue("id")) }
	}
	noRequest := func(h func(http.ResponseWriter)) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { h(w) }
	}
	served := map[string]http.HandlerFunc{
		"GET /v2/pods":                     s.listPods,
		"POST /v2/pods":                    s.createPod,
		"GET /v2/pods/{id}":                id(s.getPod),
		"DELETE /v2/pods/{id}":             id(s.deletePod),
		"POST /v2/pods/{id}/action":        withID(s.podAction),
		"GET /v2/pods/{id}/logs":           withID(s.podLogs),
		"GET /v2/account/secrets":          s.listSecrets,
		"POST /v2/account/secrets":         s.createSecret,
		"GET /v2/account/secrets/{id}":     id(s.getSecret),
		"PATCH /v2/account/secrets/{id}":   withID(s.patchSecret),
		"DELETE /v2/account/secrets/{id}":  id(s.deleteSecret),
		"GET /v2/network-volumes":          noRequest(s.listNetworkVolumes),
		"POST /v2/network-volumes":         s.createNetworkVolume,
		"GET /v2/network-volumes/{id}":     id(s.getNetworkVolume),
		"PATCH /v2/network-volumes/{id}":   withID(s.patchNetworkVolume),
		"DELETE /v2/network-volumes/{id}":  id(s.deleteNetworkVolume),
		"GET /v2/billing/pods":             s.podBilling,
		"GET /v2/registries":               noRequest(s.listRegistries),
		"GET /v2/catalog/gpus":             s.listGPUTypesQuery,
		"GET /v2/catalog/gpus/{id}":        withID(s.getGPUType),
		"GET /v2/catalog/cpus":             s.listCPUTypes,
		"GET /v2/catalog/cpus/{id}":        withID(s.getCPUType),
		"GET /v2/catalog/datacenters":      s.listDataCenters,
		"GET /v2/catalog/datacenters/{id}": withID(s.getDataCenter),
	}
	mux := http.NewServeMux()
	for _, p := range apiPaths {
		for _, method := range p.methods {
			pattern := method + " " + p.path
			h, ok := served[pattern]
			if !ok {
				h = notImplemented
			}
			delete(served, pattern)
			mux.Handle(pattern, podScope(h))
		}
	}
	if len(served) > 0 {
		panic(fmt.Sprintf("runpodtest: %v are served but not in apiPaths", slices.Sorted(maps.Keys(served))))
	}
	return mux
}

// podScope lets a pod's own key reach its own pod only: read it, delete it,
// act on it, read its log. Anything else answers it 403, secrets included
// (the fake assumes a pod's key cannot see them). The account key reaches
// everything.
func podScope(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if caller := routedOf(r).caller; caller != CallerAccount && !ownPod(r, caller) {
			writeProblem(w, http.StatusForbidden, "access denied")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ownPod says whether r's operation is on the pod id, or under it.
func ownPod(r *http.Request, id string) bool {
	_, path, _ := strings.Cut(r.Pattern, " ")
	return strings.HasPrefix(path, "/v2/pods/{id}") && r.PathValue("id") == id
}

// notImplemented answers an operation of the document that the fake does
// not serve (doc.go lists them).
func notImplemented(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, http.StatusNotImplemented, "runpodtest does not implement "+r.Method+" "+routedOf(r).path)
}

// apiPaths is every path of Runpod's document (testdata/openapi_v2.json)
// with its methods, a literal path before a parameter that would take it
// too. The fake answers 404 off them, 405 for a method a path lacks, and
// 501 for what it does not serve.
var apiPaths = []struct {
	path    string
	methods []string
}{
	{"/v2/account/ssh-keys", []string{"GET", "PUT"}},
	{"/v2/account/secrets", []string{"GET", "POST"}},
	{"/v2/account/secrets/{id}", []string{"GET", "PATCH", "DELETE"}},
	{"/v2/pods", []string{"GET", "POST"}},
	{"/v2/pods/{id}", []string{"GET", "PATCH", "DELETE"}},
	{"/v2/pods/{id}/logs", []string{"GET"}},
	{"/v2/pods/{id}/action", []string{"POST"}},
	{"/v2/clusters", []string{"GET", "POST"}},
	{"/v2/clusters/{id}", []string{"GET", "PATCH", "DELETE"}},
	{"/v2/clusters/{id}/pods", []string{"GET"}},
	{"/v2/serverless", []string{"GET", "POST"}},
	{"/v2/serverless/{id}", []string{"GET", "PATCH", "DELETE"}},
	{"/v2/serverless/{id}/workers", []string{"GET"}},
	{"/v2/serverless/{id}/releases", []string{"GET"}},
	{"/v2/serverless/{id}/builds", []string{"GET"}},
	{"/v2/serverless/{id}/builds/{buildId}", []string{"GET"}},
	{"/v2/serverless/{id}/workers/{workerId}/logs", []string{"GET"}},
	{"/v2/templates", []string{"GET", "POST"}},
	{"/v2/templates/{id}", []string{"GET", "PATCH", "DELETE"}},
	{"/v2/network-volumes", []string{"GET", "POST"}},
	{"/v2/network-volumes/{id}", []string{"GET", "PATCH", "DELETE"}},
	{"/v2/registries", []string{"GET", "POST"}},
	{"/v2/registries/delegations", []string{"GET", "POST"}},
	{"/v2/registries/delegations/{id}", []string{"DELETE"}},
	{"/v2/registries/{id}", []string{"GET", "DELETE"}},
	{"/v2/catalog/gpus", []string{"GET"}},
	{"/v2/catalog/gpus/{id}", []string{"GET"}},
	{"/v2/catalog/cpus", []string{"GET"}},
	{"/v2/catalog/cpus/{id}", []string{"GET"}},
	{"/v2/catalog/datacenters", []string{"GET"}},
	{"/v2/catalog/datacenters/{id}", []string{"GET"}},
	{"/v2/catalog/templates", []string{"GET"}},
	{"/v2/billing", []string{"GET"}},
	{"/v2/billing/pods", []string{"GET"}},
	{"/v2/billing/serverless", []string{"GET"}},
	{"/v2/billing/endpoints", []string{"GET"}},
	{"/v2/billing/network-volumes", []string{"GET"}},
	{"/v2/billing/clusters", []string{"GET"}},
}

// documented returns the methods of the document's path that parts (a
// path under /v2, split at its slashes) names, or false when it has none.
func documented(parts []string) ([]string, bool) {
	for _, p := range apiPaths {
		want := strings.Split(strings.TrimPrefix(p.path, "/v2/"), "/")
		if len(want) != len(parts) {
			continue
		}
		match := true
		for i, seg := range want {
			if parts[i] == "" || (seg != parts[i] && !strings.HasPrefix(seg, "{")) {
				match = false
				break
			}
		}
		if match {
			return p.methods, true
		}
	}
	return nil, false
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeProblem(w, http.StatusMethodNotAllowed, "The requested method is not allowed for this path.")
}

// writeProblem answers an RFC 9457 problem object, as ErrorResponse.
func writeProblem(w http.ResponseWriter, status int, detail string, errs ...string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(wireProblem{
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Errors: errs,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
