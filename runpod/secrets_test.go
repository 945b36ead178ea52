package runpod

import (
	"context"
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

type storedSecret struct{ id, name, value, desc string }

// secretBackend is a fake of REST v2's account secrets.
type secretBackend struct {
	mu      sync.Mutex
	secrets []storedSecret
	seq     int
	// foldCase makes names unique ignoring case, as Runpod may.
	foldCase bool
	// hook, when set, runs first and may answer instead (returns true).
	hook func(w http.ResponseWriter, r *http.Request, body map[string]string) bool
}

func (b *secretBackend) same(x, y string) bool {
	if b.foldCase {
		return strings.EqualFold(x, y)
	}
	return x == y
}

func (b *secretBackend) wire(s storedSecret) map[string]any {
	var desc any
	if s.desc != "" {
		desc = s.desc
	}
	return map[string]any{"id": s.id, "name": s.name, "description": desc, "createdAt": "2026-09-01T12:00:00Z", "valueLastUpdatedAt": nil}
}

func (b *secretBackend) serve(fs *fakeServer) {
	hooked := func(h func(w http.ResponseWriter, r *http.Request, body map[string]string)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body := map[string]string{}
			if r.Method == http.MethodPost || r.Method == http.MethodPatch {
				if err := jsonDecode(r, &body); err != nil {
					writeProblem(w, http.StatusUnprocessableEntity, err.Error())
					return
				}
			}
			if b.hook != nil && b.hook(w, r, body) {
				return
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			h(w, r, body)
		}
	}
	fs.handle("POST /account/secrets", hooked(func(w http.ResponseWriter, r *http.Request, body map[string]string) {
		for _, s := range b.secrets {
			if b.same(s.name, body["name"]) {
				writeProblem(w, http.StatusConflict, "a secret with this name already exists")
				return
			}
		}
		b.seq++
		s := storedSecret{"sec" + strconv.Itoa(b.seq), body["name"], body["value"], body["description"]}
		b.secrets = append(b.secrets, s)
		writeJSON(w, http.StatusCreated, b.wire(s))
	}))
	fs.handle("GET /account/secrets", hooked(func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		list := []map[string]any{}
		name, filter := r.URL.Query()["name"]
		for _, s := range b.secrets {
			if !filter || strings.EqualFold(s.name, name[0]) {
				list = append(list, b.wire(s))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"secrets": list})
	}))
	fs.handle("PATCH /account/secrets/{id}", hooked(func(w http.ResponseWriter, r *http.Request, body map[string]string) {
		for i, s := range b.secrets {
			if s.id == r.PathValue("id") {
				b.secrets[i].value = body["value"]
				if d, ok := body["description"]; ok {
					b.secrets[i].desc = d
				}
				writeJSON(w, http.StatusOK, b.wire(b.secrets[i]))
				return
			}
		}
		writeProblem(w, http.StatusNotFound, "secret not found")
	}))
	fs.handle("DELETE /account/secrets/{id}", hooked(func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		for i, s := range b.secrets {
			if s.id == r.PathValue("id") {
				b.secrets = append(b.secrets[:i], b.secrets[i+1:]...)
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		writeProblem(w, http.StatusNotFound, "secret not found")
	}))
}

func (b *secretBackend) add(name, value string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	id := "sec" + strconv.Itoa(b.seq)
	b.secrets = append(b.secrets, storedSecret{id, name, value, ""})
	return id
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
	be.serve(fs)
	ctx := context.Background()
	s, err := c.CreateSecret(ctx, "overbrainer_host_key_r1", hostKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID == "" || s.Name != "overbrainer_host_key_r1" || s.CreatedAt.IsZero() {
		t.Errorf("secret %+v", s)
	}
	if diff := cmp.Diff(map[string]string{"overbrainer_host_key_r1": hostKey}, be.values()); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	testJSONBodyBytes(t, fs.last().body, `{"name":"overbrainer_host_key_r1","value":"`+hostKey+`"}`)

	all, err := c.ListSecrets(ctx)
	if err != nil || len(all) != 1 || all[0] != s {
		t.Errorf("ListSecrets = %+v, %v", all, err)
	}
	found, err := c.FindSecret(ctx, s.Name)
	if err != nil || found != s {
		t.Errorf("FindSecret = %+v, %v", found, err)
	}
	if q := fs.last().query; q != "name=overbrainer_host_key_r1" {
		t.Errorf("FindSecret query %q, want the name filter", q)
	}
	if err := c.DeleteSecret(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindSecret(ctx, s.Name); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindSecret after delete: %v", err)
	}
	// A secret already gone is deleted: what the caller wants holds.
	if err := c.DeleteSecret(ctx, s.ID); err != nil {
		t.Errorf("DeleteSecret twice: %v, want success", err)
	}
	want := []string{"POST /account/secrets", "GET /account/secrets", "GET /account/secrets",
		"DELETE /account/secrets/" + s.ID, "GET /account/secrets", "DELETE /account/secrets/" + s.ID}
	if diff := cmp.Diff(want, fs.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func testJSONBodyBytes(t *testing.T, got []byte, want string) {
	t.Helper()
	r, _ := http.NewRequest("POST", "/", strings.NewReader(string(got)))
	testJSONBody(t, r, want)
}

// A taken name (a crashed earlier try of the same run) ends with the one
// secret of that name holding the new value.
func TestCreateSecretTakenNameRotates(t *testing.T) {
	c, fs := setup(t)
	fs.secrets = []string{hostKey}
	be := &secretBackend{}
	be.serve(fs)
	id := be.add("overbrainer_host_key_r3", "old-value")
	s, err := c.CreateSecret(context.Background(), "overbrainer_host_key_r3", hostKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != id || s.Name != "overbrainer_host_key_r3" {
		t.Errorf("secret %+v, want the existing %s", s, id)
	}
	if diff := cmp.Diff(map[string]string{"overbrainer_host_key_r3": hostKey}, be.values()); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	want := []string{"POST /account/secrets", "GET /account/secrets", "PATCH /account/secrets/" + id}
	if diff := cmp.Diff(want, fs.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	testJSONBodyBytes(t, fs.last().body, `{"value":"`+hostKey+`"}`)
}

// A description goes with the create, comes back in lists, and is set
// too when the name is taken; one Runpod would refuse is refused before
// any request, naming the description and never quoting the value.
func TestCreateSecretWithDescription(t *testing.T) {
	c, fs := setup(t)
	fs.secrets = []string{hostKey}
	be := &secretBackend{}
	be.serve(fs)
	ctx := context.Background()
	const desc = "overbrainer: host key of run r5, needed until 2026-12-05T13:00:00Z"
	s, err := c.CreateSecretWithDescription(ctx, "overbrainer_host_key_r5", hostKey, desc)
	if err != nil {
		t.Fatal(err)
	}
	testJSONBodyBytes(t, fs.last().body, `{"name":"overbrainer_host_key_r5","value":"`+hostKey+`","description":"`+desc+`"}`)
	if s.Description != desc {
		t.Errorf("created %+v, want the description", s)
	}
	if all, err := c.ListSecrets(ctx); err != nil || len(all) != 1 || all[0].Description != desc {
		t.Errorf("ListSecrets = %+v, %v", all, err)
	}

	id := be.add("overbrainer_host_key_r6", "old-value")
	if _, err := c.CreateSecretWithDescription(ctx, "overbrainer_host_key_r6", hostKey, desc); err != nil {
		t.Fatal(err)
	}
	if got := fs.requests()[len(fs.requests())-1]; got != "PATCH /account/secrets/"+id {
		t.Errorf("last request %s, want the taken name's rotation", got)
	}
	testJSONBodyBytes(t, fs.last().body, `{"value":"`+hostKey+`","description":"`+desc+`"}`)
	if found, err := c.FindSecret(ctx, "overbrainer_host_key_r6"); err != nil || found.Description != desc {
		t.Errorf("the rotated secret %+v, %v: want its description set", found, err)
	}

	sent := len(fs.requests())
	for name, bad := range map[string]string{
		"too long":  strings.Repeat("d", MaxSecretDescriptionLen+1),
		"not UTF-8": "run \xff",
	} {
		_, err := c.CreateSecretWithDescription(ctx, "overbrainer_host_key_r7", hostKey, bad)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "description") || strings.Contains(err.Error(), hostKey) {
			t.Errorf("%s: %v, want ErrInvalid naming the description", name, err)
		}
	}
	if n := len(fs.requests()); n != sent {
		t.Errorf("%d requests sent for refused descriptions", n-sent)
	}
	if _, err := c.CreateSecretWithDescription(ctx, "overbrainer_host_key_r8", hostKey, strings.Repeat("d", MaxSecretDescriptionLen)); err != nil {
		t.Errorf("a description of exactly %d bytes: %v", MaxSecretDescriptionLen, err)
	}
}

// Should Runpod compare names ignoring case, a taken name may be another
// secret's: it is never rotated.
func TestCreateSecretNeverRotatesAnotherCase(t *testing.T) {
	c, fs := setup(t)
	fs.secrets = []string{hostKey}
	be := &secretBackend{foldCase: true}
	be.serve(fs)
	be.add("Overbrainer_Host_Key_r4", "someone-elses")
	_, err := c.CreateSecret(context.Background(), "overbrainer_host_key_r4", hostKey)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "differing in case") {
		t.Errorf("err %v, want a conflict naming the case", err)
	}
	if got := be.values()["Overbrainer_Host_Key_r4"]; got != "someone-elses" {
		t.Errorf("the other secret was changed")
	}
	if n := fs.count("PATCH /account/secrets/sec1"); n != 0 {
		t.Errorf("%d PATCH sent", n)
	}
}

// A create whose answer is lost is found by name, not made twice.
func TestCreateSecretReconciles(t *testing.T) {
	c, fs := setup(t)
	fs.secrets = []string{hostKey}
	be := &secretBackend{}
	var first atomic.Bool
	be.hook = func(w http.ResponseWriter, r *http.Request, body map[string]string) bool {
		if r.Method == http.MethodPost && first.CompareAndSwap(false, true) {
			be.add(body["name"], body["value"])
			dropConnection(t, w)
			return true
		}
		return false
	}
	be.serve(fs)
	s, err := c.CreateSecret(context.Background(), "overbrainer_host_key_r2", hostKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "sec1" || len(be.values()) != 1 || fs.count("POST /account/secrets") != 1 {
		t.Errorf("secret %+v, stored %d, requests %v", s, len(be.values()), fs.requests())
	}

	// And when nothing was stored, the create is sent again.
	c2, fs2 := setup(t)
	fs2.secrets = []string{hostKey}
	be2 := &secretBackend{}
	var n atomic.Int32
	be2.hook = func(w http.ResponseWriter, r *http.Request, _ map[string]string) bool {
		if r.Method == http.MethodPost && n.Add(1) == 1 {
			writeProblem(w, http.StatusServiceUnavailable, "unavailable")
			return true
		}
		return false
	}
	be2.serve(fs2)
	if _, err := c2.CreateSecret(context.Background(), "k", hostKey); err != nil || len(be2.values()) != 1 || n.Load() != 2 {
		t.Errorf("err %v, stored %d, creates %d", err, len(be2.values()), n.Load())
	}
}

// TestSecretNameRule: a name Runpod would refuse is refused before any
// request, with an error that names the rule.
func TestSecretNameRule(t *testing.T) {
	c, fs := setup(t)
	fs.secrets = []string{hostKey}
	bad := []string{"", "1abc", "-a", "a b", "a$b", "é", "RUNPOD_X", "runpod_x", "RunPod", "runpod",
		strings.Repeat("a", MaxSecretNameLen+1), "a\nb"}
	for _, name := range bad {
		_, err := c.CreateSecret(context.Background(), name, hostKey)
		var ne *SecretNameError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &ne) || !strings.Contains(err.Error(), SecretNameRule) {
			t.Errorf("%q: err %v, want a *SecretNameError naming the rule", name, err)
		}
		if _, err := c.FindSecret(context.Background(), name); !errors.Is(err, ErrInvalid) {
			t.Errorf("FindSecret %q: err %v, want ErrInvalid", name, err)
		}
	}
	if got := fs.requests(); len(got) != 0 {
		t.Errorf("requests were sent: %v", got)
	}
	good := []string{"_", "a", "overbrainer_host_key_2026-09-01.x/y", "RUNPO", "xRUNPOD", strings.Repeat("a", MaxSecretNameLen)}
	for _, name := range good {
		if err := CheckSecretName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// TestSecretValueNeverInErrors: a value refused before sending, or
// echoed back by the server, never shows in the error.
func TestSecretValueNeverInErrors(t *testing.T) {
	c, fs := setup(t, WithRetry(1, 1))
	huge := strings.Repeat("S", MaxSecretValueLen+1)
	notUTF8 := hostKey + "\xff"
	fs.secrets = []string{hostKey, huge[:64]}
	fs.handle("PATCH /account/secrets/{id}", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Value string }
		_ = jsonDecode(r, &req)
		writeProblem(w, http.StatusUnprocessableEntity, "value "+req.Value+" refused")
	})
	ctx := context.Background()
	_, err1 := c.CreateSecret(ctx, "k", "")
	_, err2 := c.CreateSecret(ctx, "k", huge)
	_, err3 := c.CreateSecret(ctx, "k", notUTF8)
	_, err4 := c.UpdateSecretValue(ctx, "s1", hostKey)
	for i, err := range []error{err1, err2, err3, err4} {
		if err == nil {
			t.Fatalf("%d: no error", i)
		}
		fs.checkNoLeak("error", err.Error())
		if i < 3 && !errors.Is(err, ErrInvalid) {
			t.Errorf("%d: %v, want ErrInvalid", i, err)
		}
	}
	if got := fs.requests(); len(got) != 1 {
		t.Errorf("requests %v, want the PATCH alone", got)
	}
}
