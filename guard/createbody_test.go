package guard_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/bootstrap"
)

// maxCreateBody is Runpod's limit on a create body (413 past it).
const maxCreateBody = 102_400

// maxTypicalBody bounds a typical launch's create body (issue 42): under a
// third of Runpod's limit, which may hold for a request we cannot see.
const maxTypicalBody = 32 << 10

// A typical launch's create body stays under 32 KiB, a third of Runpod's limit, with
// room for the env a caller adds: the bootstrap travels once, in cmd,
// escaped once, and the image's ENTRYPOINT is replaced by the bootstrap's.
func TestCreateBodyStaysWellUnderRunpodsLimit(t *testing.T) {
	f := newFallback(t)
	spec := f.spec(t)
	spec.VolumeGB = 50
	spec.PodEnv = map[string]string{
		"WANDB_PROJECT":        "overbrainer-llm",
		"HF_HOME":              "/workspace/.cache/huggingface",
		"TRANSFORMERS_OFFLINE": "0",
		"NCCL_DEBUG":           "WARN",
		"PYTHONUNBUFFERED":     "1",
	}
	_ = f.launch(t, spec)
	var body []byte
	for _, r := range f.srv.Requests() {
		if r.Method == "POST" && r.Path == "/v2/pods" {
			body = r.Body
			break
		}
	}
	if body == nil {
		t.Fatal("no create was sent")
	}
	if len(body) > maxTypicalBody {
		t.Errorf("the create body is %d bytes, over %d (Runpod's limit is %d)", len(body), maxTypicalBody, maxCreateBody)
	}
	var sent struct {
		Args       *string  `json:"args"`
		Entrypoint []string `json:"entrypoint"`
		Cmd        []string `json:"cmd"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	script := bootstrap.Script()
	if sent.Args != nil || strings.Join(sent.Entrypoint, " ") != "bash -c" || len(sent.Cmd) != 1 || sent.Cmd[0] != script {
		t.Errorf("args %v, entrypoint %q, cmd of %d words: want the bootstrap as entrypoint and cmd only", sent.Args, sent.Entrypoint, len(sent.Cmd))
	}
	// Escaped once, the script grows by its quotes, backslashes and
	// newlines only; escaped twice it would nearly double.
	escaped, _ := json.Marshal(script)
	if !strings.Contains(string(body), string(escaped)) || len(body) > len(escaped)+8*1024 {
		t.Errorf("the body (%d bytes) is not the script escaped once (%d bytes) plus a few KB", len(body), len(escaped))
	}
	t.Logf("create body %d bytes (%.0f%% of the limit), script %d bytes, escaped %d", len(body), 100*float64(len(body))/maxCreateBody, len(script), len(escaped))
}
