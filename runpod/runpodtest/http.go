package runpodtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
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

// route serves the API behind the faults.
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
	// A pod's own key reaches only its own pod: read, delete, act on it.
	podScoped := caller != CallerAccount
	switch {
	case len(parts) == 1 && parts[0] == "pods":
		if podScoped {
			writeProblem(w, http.StatusForbidden, "access denied")
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.listPods(w, r)
		case http.MethodPost:
			s.createPod(w, r)
		default:
			notImplemented(w, r)
		}
	case len(parts) == 2 && parts[0] == "pods":
		if podScoped && parts[1] != caller {
			writeProblem(w, http.StatusForbidden, "access denied")
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.getPod(w, parts[1])
		case http.MethodDelete:
			s.deletePod(w, parts[1])
		default:
			notImplemented(w, r)
		}
	case len(parts) == 3 && parts[0] == "pods" && parts[2] == "action":
		if podScoped && parts[1] != caller {
			writeProblem(w, http.StatusForbidden, "access denied")
			return
		}
		s.podAction(w, r, parts[1])
	case len(parts) == 3 && parts[0] == "pods" && parts[2] == "logs":
		if podScoped && parts[1] != caller {
			writeProblem(w, http.StatusForbidden, "access denied")
			return
		}
		s.podLogs(w, r, parts[1])
	case podScoped:
		// Secrets too: the fake assumes a pod's key cannot see them.
		writeProblem(w, http.StatusForbidden, "access denied")
	case len(parts) == 2 && parts[0] == "account" && parts[1] == "secrets":
		switch r.Method {
		case http.MethodGet:
			s.listSecrets(w, r)
		case http.MethodPost:
			s.createSecret(w, r)
		default:
			notImplemented(w, r)
		}
	case len(parts) == 3 && parts[0] == "account" && parts[1] == "secrets":
		switch r.Method {
		case http.MethodGet:
			s.getSecret(w, parts[2])
		case http.MethodPatch:
			s.patchSecret(w, r, parts[2])
		case http.MethodDelete:
			s.deleteSecret(w, parts[2])
		default:
			notImplemented(w, r)
		}
	case len(parts) == 1 && parts[0] == "network-volumes":
		switch r.Method {
		case http.MethodGet:
			s.listNetworkVolumes(w)
		case http.MethodPost:
			s.createNetworkVolume(w, r)
		default:
			notImplemented(w, r)
		}
	case len(parts) == 2 && parts[0] == "catalog" && parts[1] == "datacenters":
		s.listDataCenters(w, r)
	case len(parts) == 2 && parts[0] == "network-volumes":
		switch r.Method {
		case http.MethodGet:
			s.getNetworkVolume(w, parts[1])
		case http.MethodPatch:
			s.patchNetworkVolume(w, r, parts[1])
		case http.MethodDelete:
			s.deleteNetworkVolume(w, parts[1])
		default:
			notImplemented(w, r)
		}
	case len(parts) == 2 && parts[0] == "billing" && parts[1] == "pods":
		s.podBilling(w, r)
	case len(parts) == 1 && parts[0] == "registries" && r.Method == http.MethodGet:
		s.listRegistries(w)
	case len(parts) == 2 && parts[0] == "catalog" && parts[1] == "gpus":
		s.listGPUTypesQuery(w, r)
	case len(parts) == 3 && parts[0] == "catalog" && parts[1] == "gpus":
		s.getGPUType(w, r, parts[2])
	case len(parts) == 3 && parts[0] == "catalog" && parts[1] == "datacenters":
		s.getDataCenter(w, r, parts[2])
	case len(parts) == 2 && parts[0] == "catalog" && parts[1] == "cpus":
		s.listCPUTypes(w, r)
	case len(parts) == 3 && parts[0] == "catalog" && parts[1] == "cpus":
		s.getCPUType(w, r, parts[2])
	default:
		// What the document has and the fake does not serve: doc.go's
		// list.
		notImplemented(w, r)
	}
}

// notImplemented answers an operation of the document that the fake does
// not serve (doc.go lists them).
func notImplemented(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, http.StatusNotImplemented, "runpodtest does not implement "+r.Method+" "+r.URL.Path)
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
