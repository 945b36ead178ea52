package runpod

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An Entrypoint and a Cmd travel as the create's JSON arrays, each word
// escaped once, and come back on the pod with args in its stored form.
//
// It runs on a server of its own: the OpenAPI document that setup's checker
// reads is the 2026-08 snapshot, which has neither field yet.
func TestCreatePodSendsEntrypointAndCmd(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := New(testKey, WithBaseURL(srv.URL+apiBase), WithPacing(false))
	if err != nil {
		t.Fatal(err)
	}
	req := fullCreateRequest()
	req.Command = nil
	req.Entrypoint = []string{"bash", "-c"}
	req.Cmd = []string{script}
	var body []byte
	mux.HandleFunc("POST "+apiBase+"/pods", func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Errorf("body %q: %v", body, err)
		}
		if _, ok := got["args"]; ok {
			t.Errorf("args sent with entrypoint and cmd: %v", got["args"])
		}
		if !cmp.Equal(got["entrypoint"], []any{"bash", "-c"}) || !cmp.Equal(got["cmd"], []any{script}) {
			t.Errorf("entrypoint %q cmd %q", got["entrypoint"], got["cmd"])
		}
		stored, _ := json.Marshal(map[string]any{"entrypoint": req.Entrypoint, "cmd": req.Cmd})
		writeJSON(w, http.StatusCreated, wirePod(Pod{ID: "p1", Name: req.Name, Args: string(stored),
			Entrypoint: req.Entrypoint, Cmd: req.Cmd}))
	})
	p, err := c.CreatePod(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The script appears once in the body, escaped once: JSON escapes
	// its quotes, backslashes and newlines, nothing more.
	escaped, _ := json.Marshal(script)
	if n := strings.Count(string(body), string(escaped)); n != 1 {
		t.Errorf("the script appears %d times escaped once in the body %s", n, body)
	}
	if strings.Contains(string(body), `\\\"`) {
		t.Errorf("the body escapes twice: %s", body)
	}
	if !cmp.Equal(p.Entrypoint, req.Entrypoint) || !cmp.Equal(p.Cmd, req.Cmd) {
		t.Errorf("pod entrypoint %q cmd %q", p.Entrypoint, p.Cmd)
	}
	if cmd, err := p.Command(); err != nil || !cmp.Equal(cmd, []string{"bash", "-c", script}) {
		t.Errorf("Command() = %q, %v", cmd, err)
	}
}

func TestCreatePodRefusesCommandWithEntrypointOrCmd(t *testing.T) {
	c, fs := setup(t)
	for name, mod := range map[string]func(*CreatePodRequest){
		"command and entrypoint": func(r *CreatePodRequest) { r.Command, r.Entrypoint = []string{"a"}, []string{"b"} },
		"command and cmd":        func(r *CreatePodRequest) { r.Command, r.Cmd = []string{"a"}, []string{"b"} },
		"NUL in entrypoint":      func(r *CreatePodRequest) { r.Entrypoint = []string{"a\x00"} },
		"NUL in cmd":             func(r *CreatePodRequest) { r.Cmd = []string{"\x00"} },
	} {
		r := CreatePodRequest{Name: "n", Image: "i", GPUTypeID: "g"}
		mod(&r)
		_, err := c.CreatePod(context.Background(), r)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
	if n := len(fs.requests()); n != 0 {
		t.Errorf("invalid requests reached the server: %v", fs.requests())
	}
}

// Pod.Command reads each form Runpod may return.
func TestPodCommandReadsEveryForm(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  Pod
		want []string
	}{
		{"arrays", Pod{Args: "ignored", Entrypoint: []string{"bash", "-c"}, Cmd: []string{"x y"}}, []string{"bash", "-c", "x y"}},
		{"cmd only", Pod{Cmd: []string{"--model", "m"}}, []string{"--model", "m"}},
		{"args object", Pod{Args: `{"entrypoint":["/bin/bash","-c"],"cmd":["python -u main.py"]}`}, []string{"/bin/bash", "-c", "python -u main.py"}},
		{"args object, cmd only", Pod{Args: ` {"cmd":["a","b c"]}`}, []string{"a", "b c"}},
		{"shell string", Pod{Args: `--model 'a b' "c"`}, []string{"--model", "a b", "c"}},
		{"shell string like an object", Pod{Args: `{not json}`}, []string{"{not", "json}"}},
		{"none", Pod{}, nil},
	} {
		got, err := tc.pod.Command()
		if err != nil || !cmp.Equal(got, tc.want) {
			t.Errorf("%s: Command() = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
