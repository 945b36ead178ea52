package runpod

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hostKey stands for the run's host private key, sent as a secret.
const hostKey = "LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZLS0tLS0KSECRETHOSTKEY=="

// secretBackend is a fake of the GraphQL calls the client makes.
type secretBackend struct {
	mu      sync.Mutex
	secrets []struct{ id, name, value string }
	seq     int
	// hook, when set, runs first and may answer instead (returns true).
	hook func(w http.ResponseWriter, op string, vars map[string]any) bool
}

func (b *secretBackend) serve(t *testing.T, fs *fakeServer) {
	fs.handleGraphQL(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query     string         `json:"query"`
			Variables map[string]any `json:"variables"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]any{{"message": err.Error()}}})
			return
		}
		op := ""
		for _, name := range []string{"secretCreate", "secretDelete", "myself"} {
			if strings.Contains(req.Query, name) {
				op = name
			}
		}
		if b.hook != nil && b.hook(w, op, req.Variables) {
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		switch op {
		case "secretCreate":
			name, _ := req.Variables["name"].(string)
			value, _ := req.Variables["value"].(string)
			for _, s := range b.secrets {
				if s.name == name {
					writeJSON(w, 200, map[string]any{"data": nil, "errors": []map[string]any{{"message": "Secret with name " + name + " already exists"}}})
					return
				}
			}
			b.seq++
			id := "sec" + strconv.Itoa(b.seq)
			b.secrets = append(b.secrets, struct{ id, name, value string }{id, name, value})
			writeJSON(w, 200, map[string]any{"data": map[string]any{"secretCreate": map[string]any{"id": id, "name": name}}})
		case "secretDelete":
			id, _ := req.Variables["id"].(string)
			for i, s := range b.secrets {
				if s.id == id {
					b.secrets = append(b.secrets[:i], b.secrets[i+1:]...)
					writeJSON(w, 200, map[string]any{"data": map[string]any{"secretDelete": nil}})
					return
				}
			}
			writeJSON(w, 200, map[string]any{"data": nil, "errors": []map[string]any{{"message": "secret not found", "extensions": map[string]any{"code": "NOT_FOUND"}}}})
		case "myself":
			list := []map[string]any{}
			for _, s := range b.secrets {
				list = append(list, map[string]any{"id": s.id, "name": s.name})
			}
			writeJSON(w, 200, map[string]any{"data": map[string]any{"myself": map[string]any{"secrets": list}}})
		default:
			t.Errorf("unexpected GraphQL query %q", req.Query)
			writeJSON(w, 400, map[string]any{"errors": []map[string]any{{"message": "unknown operation"}}})
		}
	})
}

func (b *secretBackend) values() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := map[string]string{}
	for _, s := range b.secrets {
		m[s.name] = s.value
	}
	return m
}

func TestSecretsRoundTrip(t *testing.T) {
	c, fs := setup(t)
	fs.secrets = []string{hostKey}
	be := &secretBackend{}
	be.serve(t, fs)
	ctx := context.Background()
	s, err := c.CreateSecret(ctx, "overbrainer_host_key_r1", hostKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID == "" || s.Name != "overbrainer_host_key_r1" {
		t.Errorf("secret %+v", s)
	}
	if diff := cmp.Diff(map[string]string{"overbrainer_host_key_r1": hostKey}, be.values()); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	// The value travels in the variables, never in the query text.
	var req struct {
		Query     string
		Variables map[string]string
	}
	if err := json.Unmarshal(fs.last().body, &req); err != nil {
		t.Fatal(err)
	}
	if req.Variables["value"] != hostKey || strings.Contains(req.Query, hostKey) || !strings.Contains(req.Query, "secretCreate") {
		t.Errorf("request %+v", req)
	}
	if got := fs.last().header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization %q", got)
	}

	all, err := c.ListSecrets(ctx)
	if err != nil || len(all) != 1 || all[0] != s {
		t.Errorf("ListSecrets = %+v, %v", all, err)
	}
	found, err := c.FindSecret(ctx, s.Name)
	if err != nil || found != s {
		t.Errorf("FindSecret = %+v, %v", found, err)
	}
	if err := c.DeleteSecret(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindSecret(ctx, s.Name); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindSecret after delete: %v", err)
	}
	if err := c.DeleteSecret(ctx, s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteSecret twice: %v, want ErrNotFound", err)
	}
	for _, r := range fs.requests() {
		if r != "POST graphql" {
			t.Errorf("secrets went through REST: %s", r)
		}
	}
}

// GraphQL errors arrive with HTTP 200; they are errors all the same, and a
// server that echoes the value in its message does not leak it.
func TestCreateSecretGraphQLErrorIsScrubbed(t *testing.T) {
	c, fs := setup(t)
	fs.secrets = []string{hostKey}
	be := &secretBackend{hook: func(w http.ResponseWriter, op string, vars map[string]any) bool {
		writeJSON(w, 200, map[string]any{"data": nil, "errors": []map[string]any{
			{"message": "Variable \"$value\" got invalid value \"" + vars["value"].(string) + "\"; too long"},
		}})
		return true
	}}
	be.serve(t, fs)
	_, err := c.CreateSecret(context.Background(), "n", hostKey)
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 200 || ae.Title != "GraphQL error" {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(ae.Detail, "[REDACTED]") {
		t.Errorf("detail %q: the echoed value should show as redacted", ae.Detail)
	}
	fs.checkNoLeak("error", err.Error())
	if n := len(fs.requests()); n != 1 {
		t.Errorf("a GraphQL error was retried: %d requests", n)
	}
}

// A create whose answer is lost is found by name, not made twice.
func TestCreateSecretReconciles(t *testing.T) {
	c, fs := setup(t)
	fs.secrets = []string{hostKey}
	be := &secretBackend{}
	var first atomic.Bool
	be.hook = func(w http.ResponseWriter, op string, vars map[string]any) bool {
		if op == "secretCreate" && first.CompareAndSwap(false, true) {
			be.mu.Lock()
			be.seq++
			be.secrets = append(be.secrets, struct{ id, name, value string }{"sec-lost", vars["name"].(string), vars["value"].(string)})
			be.mu.Unlock()
			dropConnection(t, w)
			return true
		}
		return false
	}
	be.serve(t, fs)
	s, err := c.CreateSecret(context.Background(), "overbrainer_host_key_r2", hostKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "sec-lost" || len(be.values()) != 1 {
		t.Errorf("secret %+v, stored %d", s, len(be.values()))
	}

	// And when nothing was stored, the create is sent again.
	c2, fs2 := setup(t)
	fs2.secrets = []string{hostKey}
	be2 := &secretBackend{}
	var n atomic.Int32
	be2.hook = func(w http.ResponseWriter, op string, vars map[string]any) bool {
		if op == "secretCreate" {
			if n.Add(1) == 1 {
				writeJSON(w, http.StatusServiceUnavailable, map[string]any{"errors": []map[string]any{{"message": "unavailable"}}})
				return true
			}
		}
		return false
	}
	be2.serve(t, fs2)
	if _, err := c2.CreateSecret(context.Background(), "k", hostKey); err != nil || len(be2.values()) != 1 || n.Load() != 2 {
		t.Errorf("err %v, stored %d, creates %d", err, len(be2.values()), n.Load())
	}
}

func TestGraphQLHTTPError(t *testing.T) {
	c, fs := setup(t, WithRetry(1, 1))
	fs.handleGraphQL(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"errors": []map[string]any{{"message": "invalid api key", "extensions": map[string]any{"code": "UNAUTHENTICATED"}}}})
	})
	_, err := c.ListSecrets(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || !errors.Is(err, ErrUnauthorized) || !cmp.Equal(ae.Errors, []string{"invalid api key"}) {
		t.Errorf("err %v (%+v)", err, ae)
	}
}
