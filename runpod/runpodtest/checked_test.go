package runpodtest

import (
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/testkit/openapicheck"
)

// checked holds every request the fake receives and every answer it gives
// to the OpenAPI document, failing t on one that does not validate.
func checked(t openapicheck.Reporter) Option {
	return WithMiddleware(openapicheck.Middleware(t))
}

// newTestServer is NewTestServer with checked on: what
// internal/testkit/checkedfake.NewTestServer is to the other packages' tests (this
// package's own tests cannot import it, since it imports this package; the
// external tests here use it).
func newTestServer(t TB, opts ...Option) *Server {
	t.Helper()
	return NewTestServer(t, append([]Option{checked(t)}, opts...)...)
}

// newTestServer's check reports to the test a request that the fake takes
// but the document refuses (internal/testkit/checkedfake's tests prove that such a
// report fails a real test).
func TestNewTestServerChecksTheDocument(t *testing.T) {
	rec := &recordingTB{TB: t}
	srv := newTestServer(rec)
	body := gpuPodBody("null env")
	body["env"] = nil
	p := createPod(t, srv, body)
	mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, 204)
	rec.runCleanups()
	if len(rec.errors) != 1 || !strings.HasPrefix(rec.errors[0], "OpenAPI: POST /v2/pods: request: ") {
		t.Errorf("errors %q, want one about the create's request", rec.errors)
	}
}
