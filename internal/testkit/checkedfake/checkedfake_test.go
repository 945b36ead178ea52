package checkedfake

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// childEnv names the exchange a child test run makes (see
// TestInvalidExchangeFailsTheTest); unset, those tests do nothing.
const childEnv = "CHECKEDFAKE_CHILD"

// send makes one call to the fake with the account key.
func send(t *testing.T, srv *runpodtest.Server, method, path, contentType, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, srv.BaseURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.APIKey())
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestChildBadRequest, run as a child, sends a create the fake accepts but
// the document refuses (an env of null) and passes unless the check fails it.
func TestChildBadRequest(t *testing.T) {
	if os.Getenv(childEnv) != "request" {
		t.Skip("run by TestInvalidExchangeFailsTheTest")
	}
	srv := NewTestServer(t, runpodtest.AllowPodsLeft())
	if code := send(t, srv, "POST", "/pods", "application/json",
		`{"name":"n","image":"runpod/base:local","gpu":{"id":"NVIDIA GeForce RTX 4090"},"env":null}`); code != http.StatusCreated {
		t.Skipf("the fake answered %d: this child proves nothing", code)
	}
}

// TestChildBadAnswer, run as a child, has the fake answer a pod list
// without its required pagination block.
func TestChildBadAnswer(t *testing.T) {
	if os.Getenv(childEnv) != "answer" {
		t.Skip("run by TestInvalidExchangeFailsTheTest")
	}
	// Given before the check, so the check sees what it answers.
	cut := runpodtest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "GET" && r.URL.Path == "/v2/pods" {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"pods":[]}`))
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	srv := runpodtest.NewTestServer(t, append([]runpodtest.Option{cut}, Options(t)...)...)
	if code := send(t, srv, "GET", "/pods", "", ""); code != http.StatusOK {
		t.Errorf("status %d", code)
	}
}

// TestChildGoodExchange, run as a child, makes valid calls only.
func TestChildGoodExchange(t *testing.T) {
	if os.Getenv(childEnv) != "good" {
		t.Skip("run by TestInvalidExchangeFailsTheTest")
	}
	srv := NewTestServer(t)
	if code := send(t, srv, "GET", "/pods", "", ""); code != http.StatusOK {
		t.Errorf("status %d", code)
	}
}

// TestInvalidExchangeFailsTheTest runs the children above as real tests in
// a process of their own: a request the fake takes but the document
// refuses, and an answer off the document, each fail the test that made
// them, naming the call; valid calls pass.
func TestInvalidExchangeFailsTheTest(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("a child")
	}
	for _, c := range []struct{ child, test, want string }{
		{"request", "TestChildBadRequest", "OpenAPI: POST /v2/pods: request: "},
		{"answer", "TestChildBadAnswer", "OpenAPI: GET /v2/pods: answer 200: "},
		{"good", "TestChildGoodExchange", ""},
	} {
		t.Run(c.child, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^"+c.test+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+c.child)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("valid calls failed the test: %v\n%s", err, out)
			case c.want == "":
				if !strings.Contains(string(out), "--- PASS: "+c.test) {
					t.Fatalf("the child did not run:\n%s", out)
				}
			case !errors.As(err, &exit):
				t.Fatalf("the test passed or did not run (%v):\n%s", err, out)
			case !strings.Contains(string(out), "--- FAIL: "+c.test) || !strings.Contains(string(out), c.want):
				t.Fatalf("the test failed, but not on %q:\n%s", c.want, out)
			}
		})
	}
}
