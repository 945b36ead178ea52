package guard

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
)

const hfToken = "hf_NeverPrintMe0123456789"

// pemBody is the lines of an OpenSSH private key's base64 body that are
// this key's own: any of them found somewhere is the key leaking. The
// first line is mostly the format's header, the same in every key, and
// the last mostly the comment.
func pemBody(pem string) []string {
	var body []string
	for _, l := range strings.Split(pem, "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			body = append(body, l)
		}
	}
	if len(body) < 3 {
		return nil
	}
	return body[1 : len(body)-1]
}

// The HF token travels on the start session's standard input only, and
// the host key's private half only to Runpod's secret store: neither is
// in an event, a saved Record, a log line, an error or a command line.
// The client's key is in the Record's JSON, which must hold it, and in no
// printed Record.
func TestSecretsStayOut(t *testing.T) {
	h := newHarness(t, look{st: ready}, look{st: running, out: "step\n"}, look{st: exited(0)})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	r, err := h.launch(ctx, h.spec(), WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, Job{Secrets: map[string]string{"HF_TOKEN": hfToken}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Follow(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Collect(ctx, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if len(h.pod.starts) != 1 || h.pod.starts[0].Stdin != "HF_TOKEN='"+hfToken+"'\nexport HF_TOKEN\n" {
		t.Fatalf("start calls %+v: want the token on stdin", h.pod.starts)
	}

	// A start that fails, and a token that cannot be sent, say so without
	// the token.
	h2 := newHarness(t, look{st: ready})
	h2.pod.startErr = &podssh.CommandError{Status: 1, Stderr: "start.sh: no command.sh"}
	r2, err := h2.launch(ctx, h2.spec(), WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	errs := []error{r2.Start(ctx, Job{Secrets: map[string]string{"HF_TOKEN": hfToken}}),
		r.Start(ctx, Job{Secrets: map[string]string{"HF_TOKEN": hfToken + "\x00more"}})}

	rec := r.Record()
	hostKey := h.api.secrets[podenv.HostKeySecretName(testRunID)]
	hostPEM, err := base64.StdEncoding.DecodeString(hostKey)
	if err != nil || !strings.Contains(string(hostPEM), "PRIVATE KEY") {
		t.Fatalf("the secret holds %q, not a private key (%v)", hostKey, err)
	}
	secrets := append([]string{hfToken, hostKey}, pemBody(string(hostPEM))...)

	var seen []string // where each piece of text came from, then the text
	add := func(where, text string) { seen = append(seen, where, text) }
	for _, hh := range []*harness{h, h2} {
		for _, e := range hh.allEvents() {
			add("event "+e.Kind.String(), fmt.Sprintf("%+v", e))
		}
		for _, s := range hh.allSaved() {
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			add("saved record", string(b))
		}
		for _, s := range hh.pod.starts {
			add("start command line", s.Cmd)
		}
		for _, c := range hh.api.created {
			add("create request", fmt.Sprintf("%+v", c))
		}
	}
	for _, err := range errs {
		if err == nil {
			t.Fatal("a start that should fail did not")
		}
		add("error", err.Error())
	}
	add("log", logs.String())
	printed := fmt.Sprintf("%v %+v %#v", rec, rec, rec)
	add("printed record", printed)
	for i := 0; i < len(seen); i += 2 {
		for _, s := range secrets {
			if strings.Contains(seen[i+1], s) {
				t.Errorf("%s holds a secret (%.12s...): %.300s", seen[i], s, seen[i+1])
			}
		}
	}

	// The pod's env has the placeholder Runpod fills at boot, not the key.
	if env := h.api.created[0].Env; env[podenv.HostKeyEnv] != podenv.HostKeyPlaceholder(testRunID) {
		t.Errorf("the pod's %s is %q", podenv.HostKeyEnv, env[podenv.HostKeyEnv])
	}
	client := pemBody(string(rec.ClientKey))
	if len(client) == 0 {
		t.Fatal("the record has no client key")
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), client[0]) {
		t.Error("the record's JSON lacks the client key")
	}
	for _, l := range client {
		if strings.Contains(printed, l) {
			t.Errorf("a printed record shows the client key: %.300s", printed)
		}
	}
	if !strings.Contains(printed, "[private key]") {
		t.Errorf("a printed record has no placeholder for its key: %.300s", printed)
	}
}
