// Package checkedfake starts the fake Runpod for a test with every request
// it receives and every answer it gives held to Runpod's OpenAPI document
// (internal/testkit/openapicheck's Middleware): an exchange off the
// document fails the test that made it, whether the test sent it, the code
// under test did, or a pod did (its watchdog's own calls).
//
// Every test that builds a fake outside package runpodtest builds it here,
// so that validation is on by default. Package runpodtest's own tests
// cannot import this package (it imports runpodtest), and have their own
// one-line helper. Like openapicheck, this package is for tests only: no
// program links it.
package checkedfake

import (
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/testkit/openapicheck"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// NewTestServer is runpodtest.NewTestServer with the document's checks in
// front of the fake's handler, reporting to t.
func NewTestServer(t runpodtest.TB, opts ...runpodtest.Option) *runpodtest.Server {
	t.Helper()
	return runpodtest.NewTestServer(t, Options(t, opts...)...)
}

// Options is opts with the document's checks added, reporting to t: for a
// test that starts the fake with runpodtest.NewServer and closes it itself.
func Options(t openapicheck.Reporter, opts ...runpodtest.Option) []runpodtest.Option {
	return append([]runpodtest.Option{runpodtest.WithMiddleware(openapicheck.Middleware(t))}, opts...)
}

// Client returns a client of srv with its account key, opts after the
// base URL (a test's WithRetry, say). runpodtest itself never imports the
// client: the two are written apart.
func Client(t testing.TB, srv *runpodtest.Server, opts ...runpod.Option) *runpod.Client {
	t.Helper()
	c, err := runpod.New(srv.APIKey(), append([]runpod.Option{runpod.WithBaseURL(srv.BaseURL())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
