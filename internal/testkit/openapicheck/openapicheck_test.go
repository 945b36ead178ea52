package openapicheck

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type reports struct {
	mu   sync.Mutex
	msgs []string
}

func (r *reports) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

// TestMiddleware: an accepted request and its answer are checked; an
// answer off the document is reported, a valid one is not.
func TestMiddleware(t *testing.T) {
	var answer string
	var rep reports
	srv := httptest.NewServer(Middleware(&rep)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	})))
	defer srv.Close()
	get := func() {
		req, _ := http.NewRequest("GET", srv.URL+"/v2/account/secrets", nil)
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	answer = `{"secrets":[{"id":"s","name":"n","createdAt":"2026-09-01T12:00:00Z"}]}`
	get()
	if len(rep.msgs) != 0 {
		t.Fatalf("a valid exchange reported: %v", rep.msgs)
	}
	answer = `{"secrets":[{"id":"s","name":"n","value":"leak"}]}`
	get()
	if len(rep.msgs) == 0 || !strings.Contains(strings.Join(rep.msgs, " "), "answer 200") {
		t.Errorf("an answer without createdAt passed: %v", rep.msgs)
	}
}

// The document is found from within the module; outside it, DocPath says
// the module was not found rather than naming a relative path that a read
// would then report missing.
func TestDocPath(t *testing.T) {
	path, err := DocPath()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil || !filepath.IsAbs(path) {
		t.Errorf("DocPath() = %q: %v", path, err)
	}
	t.Chdir(t.TempDir())
	if path, err := DocPath(); err == nil || !strings.Contains(err.Error(), "OpenAPI document") {
		t.Errorf("DocPath() outside the module = %q, %v; want an error", path, err)
	}
}
