package runpodtest

import (
	"net/http"
	"slices"
	"testing"
)

// A create's command as Runpod stores it, and the forms it refuses.
func TestStartCommandForms(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name        string
		args        *string
		ep, cmd     []string
		wantArgs    string
		wantEP, wan []string
	}{
		{"nothing", nil, nil, nil, "", nil, nil},
		{"a shell string is CMD", str(`sh -c 'echo "hi there"'`), nil, nil, `sh -c 'echo "hi there"'`, nil, []string{"sh", "-c", `echo "hi there"`}},
		{"a JSON object", str(`{"entrypoint":["/bin/bash","-c"],"cmd":["python -u main.py"]}`), nil, nil,
			`{"entrypoint":["/bin/bash","-c"],"cmd":["python -u main.py"]}`, []string{"/bin/bash", "-c"}, []string{"python -u main.py"}},
		{"arrays are stored as the object", nil, []string{"bash", "-c"}, []string{"a\nb"}, `{"cmd":["a\nb"],"entrypoint":["bash","-c"]}`, []string{"bash", "-c"}, []string{"a\nb"}},
		{"cmd alone", nil, nil, []string{"x"}, `{"cmd":["x"]}`, nil, []string{"x"}},
		{"args with the same arrays", str(`{"entrypoint":["e"],"cmd":["c"]}`), []string{"e"}, []string{"c"}, `{"entrypoint":["e"],"cmd":["c"]}`, []string{"e"}, []string{"c"}},
		{"a shell string with the same cmd", str(`a 'b c'`), nil, []string{"a", "b c"}, `a 'b c'`, nil, []string{"a", "b c"}},
	} {
		args, ep, cmd, err := startCommand(tc.args, tc.ep, tc.cmd)
		if err != nil || args != tc.wantArgs || !slices.Equal(ep, tc.wantEP) || !slices.Equal(cmd, tc.wan) {
			t.Errorf("%s: %q %q %q %v; want %q %q %q", tc.name, args, ep, cmd, err, tc.wantArgs, tc.wantEP, tc.wan)
		}
	}
	for name, tc := range map[string]struct {
		args    string
		ep, cmd []string
	}{
		"args and a different cmd":        {"a b", nil, []string{"a"}},
		"args and an entrypoint":          {"a b", []string{"a"}, []string{"b"}},
		"an object with an unknown field": {`{"command":["x"]}`, nil, nil},
		"an object that does not parse":   {`{"cmd":"x"}`, nil, nil},
	} {
		if _, _, _, err := startCommand(&tc.args, tc.ep, tc.cmd); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The API keeps the command as Runpod does: args as stored, and the
// entrypoint and cmd arrays on every read.
func TestCreatePodStoresTheCommand(t *testing.T) {
	srv := newTestServer(t)
	body := gpuPodBody("arrays")
	delete(body, "args")
	body["entrypoint"] = []string{"bash", "-c"}
	body["cmd"] = []string{`echo "it's" \ok`}
	created := createPod(t, srv, body)
	if created.Args != `{"cmd":["echo \"it's\" \\ok"],"entrypoint":["bash","-c"]}` ||
		!slices.Equal(created.Entrypoint, []string{"bash", "-c"}) || !slices.Equal(created.Cmd, []string{`echo "it's" \ok`}) {
		t.Errorf("created: args %q entrypoint %q cmd %q", created.Args, created.Entrypoint, created.Cmd)
	}
	p, _ := srv.Pod(created.ID)
	if !slices.Equal(p.Words, []string{"bash", "-c", `echo "it's" \ok`}) {
		t.Errorf("words %q", p.Words)
	}

	shell := gpuPodBody("shell")
	shell["args"] = "sleep 'in finity'"
	got := createPod(t, srv, shell)
	if got.Args != "sleep 'in finity'" || len(got.Entrypoint) != 0 || !slices.Equal(got.Cmd, []string{"sleep", "in finity"}) {
		t.Errorf("shell string: args %q entrypoint %q cmd %q", got.Args, got.Entrypoint, got.Cmd)
	}

	differ := gpuPodBody("differ")
	differ["args"] = "sleep 1"
	differ["cmd"] = []string{"sleep", "2"}
	mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods", differ, http.StatusBadRequest)
	for _, id := range []string{created.ID, got.ID} {
		mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+id, nil, http.StatusNoContent)
	}
}
