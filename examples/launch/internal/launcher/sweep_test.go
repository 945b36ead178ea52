package launcher

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// A known run's secret goes once no listed pod holds its run's name; a
// listed pod whose name could not be read may be that pod: the secret is
// reported and left, as the sweeper leaves it.
func TestRmKnownSecretsLeavesWhatAnUnnamedPodMayNeed(t *testing.T) {
	t.Parallel()
	id, err := podenv.NewRunID(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secret := podenv.HostKeySecretName(id)
	for _, c := range []struct {
		name    string
		pods    string
		deleted bool
		said    string
	}{
		{"no pod", ``, true, "deleted (its pod is gone)"},
		{"a pod's name unreadable", `{"id": "p7", "name": 7, "status": "RUNNING"}`, false, "left: a listed pod whose name could not be read may be its run's"},
		{"a terminated pod's name unreadable", `{"id": "p7", "name": 7, "status": "TERMINATED"}`, true, "deleted (its pod is gone)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var deletes []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch {
				case r.Method == http.MethodGet && r.URL.Path == "/v2/pods":
					_, _ = w.Write([]byte(`{"pods": [` + c.pods + `], "pagination": {"nextCursor": null, "hasNextPage": false}}`))
				case r.Method == http.MethodGet && r.URL.Path == "/v2/account/secrets":
					_, _ = w.Write([]byte(`{"secrets": [{"id": "s1", "name": "` + secret + `"}]}`))
				case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v2/account/secrets/"):
					mu.Lock()
					deletes = append(deletes, r.URL.Path)
					mu.Unlock()
					w.WriteHeader(http.StatusNoContent)
				default:
					w.WriteHeader(http.StatusNotFound)
				}
			}))
			t.Cleanup(srv.Close)
			api, err := runpod.New("rpa_TEST", runpod.WithBaseURL(srv.URL+"/v2"), runpod.WithRetry(1, time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			store, err := state.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(store.RunPath(id), 0o700); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			a := &app{stdout: &bytes.Buffer{}, stderr: &stderr, store: store, api: api}
			n, err := a.rmKnownSecrets(context.Background(), map[string]bool{id: true}, map[string]bool{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil || n != 1 || (len(deletes) == 1) != c.deleted || len(deletes) > 1 {
				t.Errorf("%d told, %v; deletes %v, want deleted %v", n, err, deletes, c.deleted)
			}
			if !strings.Contains(stderr.String(), "secret "+secret+" of run "+id+" "+c.said) {
				t.Errorf("said %q, want %q", stderr.String(), c.said)
			}
		})
	}
}
