package runpodtest

import (
	"net/http"
	"strings"
	"testing"
)

// The API answers the way its table of the document's paths says, on
// paths a router could read another way too: slashes at either end of
// the path under /v2 do not count, an empty segment inside it is no path,
// "." and ".." are ids (never a step up or a redirect), and HEAD is a
// method the document does not have.
// A pod's key reaches its own pod's operations only, the unserved ones
// included (501), and nothing else (403).
func TestRoutesReadPathsAsTheDocument(t *testing.T) {
	srv := NewTestServer(t)
	p := createPod(t, srv, gpuPodBody("p"))
	other := createPod(t, srv, gpuPodBody("other"))
	t.Cleanup(func() {
		for _, id := range []string{p.ID, other.ID} {
			mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+id, nil, http.StatusNoContent)
		}
	})
	account, podKey := srv.APIKey(), srv.PodKey(p.ID)
	for _, c := range []struct {
		key, method, path string
		status            int
		detail            string // a part of the problem's detail
	}{
		{account, "GET", "/v2/pods/", http.StatusOK, ""},
		{account, "GET", "/v2/pods/" + p.ID + "/", http.StatusOK, ""},
		{account, "HEAD", "/v2/pods", http.StatusMethodNotAllowed, ""},
		{account, "GET", "/v2//pods", http.StatusOK, ""},
		{account, "GET", "/v2/pods//logs", http.StatusNotFound, "no such path"},
		{account, "GET", "/v2/", http.StatusNotFound, "no such path"},
		{account, "GET", "/v2/pods/..", http.StatusNotFound, "pod not found"},
		{account, "GET", "/v2/pods/.", http.StatusNotFound, "pod not found"},
		{account, "GET", "/v2/pods/%2E%2E/logs", http.StatusNotFound, ""},
		{account, "GET", "/v2/account/secrets/..", http.StatusNotFound, ""},
		{account, "PATCH", "/v2/pods/" + p.ID + "/", http.StatusNotImplemented, "does not implement PATCH /v2/pods/" + p.ID + "/"},
		{account, "GET", "/v2/registries/delegations", http.StatusNotImplemented, ""},
		{account, "DELETE", "/v2/registries/delegations", http.StatusMethodNotAllowed, ""},
		{account, "GET", "/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%204090", http.StatusOK, ""},
		{"", "GET", "/v2/nonexistent", http.StatusUnauthorized, "missing bearer token"},
		{"rpa_wrong", "GET", "/v2/pods", http.StatusUnauthorized, "invalid api key"},
		{"", "GET", "/v1/pods", http.StatusNotFound, "no such path: /v1/pods"},
		{podKey, "GET", "/v2/pods/" + p.ID, http.StatusOK, ""},
		{podKey, "GET", "/v2/pods/" + p.ID + "/", http.StatusOK, ""},
		{podKey, "PATCH", "/v2/pods/" + p.ID, http.StatusNotImplemented, ""},
		{podKey, "PATCH", "/v2/pods/" + other.ID, http.StatusForbidden, "access denied"},
		{podKey, "GET", "/v2/pods/" + other.ID + "/logs", http.StatusForbidden, ""},
		{podKey, "GET", "/v2/pods/..", http.StatusForbidden, ""},
		{podKey, "GET", "/v2/clusters", http.StatusForbidden, ""},
		{podKey, "GET", "/v2/catalog/datacenters", http.StatusForbidden, ""},
		{podKey, "PUT", "/v2/pods/" + p.ID, http.StatusMethodNotAllowed, ""},
		{podKey, "GET", "/v2/nonexistent", http.StatusNotFound, "no such path"},
	} {
		status, header, body := call(t, srv, c.key, c.method, c.path, nil)
		if status != c.status || !strings.Contains(string(body), c.detail) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.method, c.path, status, body, c.status, c.detail)
		}
		if status == http.StatusMethodNotAllowed && header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", c.method, c.path)
		}
	}
}
