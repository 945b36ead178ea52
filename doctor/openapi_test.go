package doctor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/testkit/openapicheck"
)

var update = flag.Bool("update", false, "rewrite openapi_used.json from our OpenAPI copy")

// The embedded digest is our OpenAPI copy's, for the operations the SDK
// calls; -update rewrites it after the copy changes.
func TestOpenAPIDigest(t *testing.T) {
	path, err := openapicheck.DocPath()
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dg, err := digestOf(text, usedOperations)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range usedOperations {
		if _, ok := dg[op]; !ok {
			t.Errorf("our copy has no %s", op)
		}
	}
	want, err := json.MarshalIndent(dg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile("openapi_used.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(usedRaw, want) {
		t.Errorf("openapi_used.json is not our copy's digest: go test ./doctor -run TestOpenAPIDigest -update")
	}
	// Each member the SDK sends or reads is in the digest, so that a live
	// text without it breaks.
	for op, fields := range sentFields {
		for _, f := range fields {
			if _, ok := dg[op]["req."+f]; !ok {
				t.Errorf("%s: req.%s not in our copy", op, f)
			}
		}
	}
	for _, f := range []string{"res.pods[].id", "res.gpus[].maxCount", "res.id", "res.secrets[].name"} {
		op := map[string]string{"res.pods[].id": "GET /pods", "res.gpus[].maxCount": "GET /catalog/gpus", "res.id": "GET /pods/{id}", "res.secrets[].name": "GET /account/secrets"}[f]
		if _, ok := dg[op][f]; !ok || !relied(op, f) {
			t.Errorf("%s %s: in the digest %v, relied on %v", op, f, ok, relied(op, f))
		}
	}
}

// What is gone or retyped breaks when the SDK relies on it; what is new
// never does.
func TestDiffAPI(t *testing.T) {
	ours := apiDigest{
		"GET /catalog/gpus": {"res.gpus": "array", "res.gpus[].maxCount": "integer", "res.gpus[].pool": "null|string"},
		"GET /registries":   {"res.registries": "array"},
	}
	live := apiDigest{
		"GET /catalog/gpus": {"res.gpus": "array", "res.gpus[].maxCount": "number", "res.gpus[].spendLimit": "boolean"},
	}
	var got []string
	for _, c := range diffAPI(ours, live) {
		got = append(got, c.String()+map[bool]string{true: " BREAKS"}[c.Breaks])
	}
	want := []string{
		"GET /catalog/gpus res.gpus[].maxCount number, was integer BREAKS",
		"GET /catalog/gpus res.gpus[].pool gone",
		"GET /catalog/gpus res.gpus[].spendLimit new (boolean)",
		"GET /registries gone BREAKS",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
