package runpodtest

import "testing"

// TestRequestIDs: every answer, errors and faults included, carries an
// X-Request-Id of its own, the one the request log shows.
func TestRequestIDs(t *testing.T) {
	srv := newTestServer(t)
	srv.Fail("GET", "/v2/catalog/gpus", Fault{Status: 503})
	seen := map[string]bool{}
	for _, c := range []struct{ key, path string }{
		{srv.APIKey(), "/v2/pods"}, {"", "/v2/pods"}, {srv.APIKey(), "/v2/catalog/gpus"}, {srv.APIKey(), "/v2/pods/nope"},
	} {
		_, h, _ := call(t, srv, c.key, "GET", c.path, nil)
		id := h.Get("X-Request-Id")
		if len(id) != 36 || seen[id] {
			t.Errorf("GET %s: X-Request-Id %q, want a new UUID", c.path, id)
		}
		seen[id] = true
	}
	for _, r := range srv.Requests() {
		if !seen[r.ID] {
			t.Errorf("the log's %s %s has id %q, which no answer carried", r.Method, r.Path, r.ID)
		}
	}
}
