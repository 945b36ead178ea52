package runpod

// This file loads Runpod's OpenAPI document for its examples and its
// operations; internal/testkit/openapicheck validates requests and answers
// against it, so the client cannot drift from the real API.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/testkit/openapicheck"
)

// specPaths are where the OpenAPI document is: Runpod's newer (2026-09)
// document, kept with the fake.
var specPaths = []string{"runpodtest/testdata/openapi_v2.json"}

type openAPI struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas    map[string]any `json:"schemas"`
		Responses  map[string]any `json:"responses"`
		Parameters map[string]any `json:"parameters"`
	} `json:"components"`
	raw map[string]any
}

type operation struct {
	OperationID string           `json:"operationId"`
	Parameters  []map[string]any `json:"parameters"`
	RequestBody *struct {
		Required bool                      `json:"required"`
		Content  map[string]map[string]any `json:"content"`
	} `json:"requestBody"`
	Responses map[string]map[string]any `json:"responses"`
}

var (
	specOnce sync.Once
	specDoc  *openAPI
	specErr  error
	specFile string
)

func readSpec() (*openAPI, string, error) {
	specOnce.Do(func() {
		for _, p := range specPaths {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			var d openAPI
			if err := json.Unmarshal(b, &d); err != nil {
				specErr = fmt.Errorf("%s: %w", p, err)
				return
			}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			if err := dec.Decode(&d.raw); err != nil {
				specErr = err
				return
			}
			specDoc, specFile = &d, p
			return
		}
		specErr = fmt.Errorf("OpenAPI document not found at %v", specPaths)
	})
	return specDoc, specFile, specErr
}

// loadSpec returns the document. Without it the test skips, unless
// REQUIRE_SHELLS=1 (as in CI), where a missing document is a failure.
func loadSpec(t testing.TB) *openAPI {
	t.Helper()
	d, _, err := readSpec()
	if err != nil {
		if os.Getenv("REQUIRE_SHELLS") == "1" {
			t.Fatalf("REQUIRE_SHELLS=1 but %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return d
}

// specOp finds the operation for method and a path relative to the base
// URL ("/pods/abc"), matching the document's templates ("/v2/pods/{id}").
func (d *openAPI) specOp(method, rel string) (tmpl string, op *operation, err error) {
	segs := strings.Split(strings.Trim("/v2"+rel, "/"), "/")
	var cands []string
	for p := range d.Paths {
		ps := strings.Split(strings.Trim(p, "/"), "/")
		if len(ps) != len(segs) {
			continue
		}
		ok := true
		for i := range ps {
			if !(strings.HasPrefix(ps[i], "{") && strings.HasSuffix(ps[i], "}")) && ps[i] != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return "", nil, fmt.Errorf("path %s is not in the OpenAPI document", rel)
	}
	// Prefer literal segments over templates (/registries/delegations over
	// /registries/{id}).
	sort.Slice(cands, func(i, j int) bool { return strings.Count(cands[i], "{") < strings.Count(cands[j], "{") })
	tmpl = cands[0]
	raw, ok := d.Paths[tmpl][strings.ToLower(method)]
	if !ok {
		return tmpl, nil, fmt.Errorf("%s %s is not an operation of the OpenAPI document", method, tmpl)
	}
	op = new(operation)
	if err := json.Unmarshal(raw, op); err != nil {
		return tmpl, nil, err
	}
	return tmpl, op, nil
}

// example returns the first example of op's response with the status.
func (d *openAPI) example(method, tmpl string, status int) ([]byte, error) {
	raw := d.raw["paths"].(map[string]any)[tmpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	resp := raw["responses"].(map[string]any)[fmt.Sprint(status)].(map[string]any)
	ex := resp["content"].(map[string]any)["application/json"].(map[string]any)["examples"].(map[string]any)
	keys := make([]string, 0, len(ex))
	for k := range ex {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return json.Marshal(ex[keys[0]].(map[string]any)["value"])
}

// TestOpenAPIDocument makes sure the document loads and holds what the
// client relies on, so a stale or truncated copy is noticed.
func TestOpenAPIDocument(t *testing.T) {
	d := loadSpec(t)
	for _, c := range []struct{ method, path string }{
		{"POST", "/pods"}, {"GET", "/pods"}, {"GET", "/pods/x"}, {"DELETE", "/pods/x"},
		{"POST", "/pods/x/action"}, {"GET", "/network-volumes/x"}, {"PATCH", "/network-volumes/x"},
		{"GET", "/catalog/gpus"}, {"GET", "/catalog/gpus/x"},
	} {
		if _, _, err := d.specOp(c.method, c.path); err != nil {
			t.Error(err)
		}
	}
	// The validator must reject what the document forbids, or it proves
	// nothing.
	h := http.Header{"Authorization": {"Bearer " + testKey}, "Content-Type": {"application/json"}}
	for _, bad := range []string{
		`{"image":"x","gpu":{"id":"g"}}`,                                          // name missing
		`{"name":"n","image":"x","command":["a"]}`,                                // no such field
		`{"name":"n","image":"x","args":["a","b"]}`,                               // args is a string
		`{"name":"n","image":"x","cloud":"PRIVATE"}`,                              // not in enum
		`{"name":"n","image":"x","gpu":{"id":"g","count":0}}`,                     // count minimum 1
		`{"name":"n","image":"x","mounts":{"network":[{"volumeId":"v"}]}}`,        // path missing
		`{"name":"n","image":"x","mounts":{"persistent":{"size":5,"path":"/w"}}}`, // under 10 GB
	} {
		if errs := openapicheck.Exchange("POST", "/v2/pods", "", h, []byte(bad), 0, nil, nil); len(errs) == 0 {
			t.Errorf("the validator accepts the invalid createPod body %s", bad)
		}
	}
	good := `{"name":"n","image":"x","gpu":{"id":"g","count":1},"args":"'a'","mounts":{"network":[{"volumeId":"v","path":"/w"}]}}`
	if errs := openapicheck.Exchange("POST", "/v2/pods", "", h, []byte(good), 0, nil, nil); len(errs) > 0 {
		t.Errorf("the validator rejects a valid createPod body: %v", errs)
	}
	for _, bad := range []string{`{"name":"RUNPOD_X","value":"v"}`, `{"name":"1x","value":"v"}`, `{"name":"x","value":""}`, `{"name":"x"}`} {
		if errs := openapicheck.Exchange("POST", "/v2/account/secrets", "", h, []byte(bad), 0, nil, nil); len(errs) == 0 && !strings.Contains(bad, "RUNPOD") {
			t.Errorf("the validator accepts the invalid createSecret body %s", bad)
		}
	}
	ph := http.Header{"Content-Type": {"application/json"}}
	if errs := openapicheck.Exchange("GET", "/v2/pods", "limit=1000", h, nil, 200, ph, []byte(`{"pods":[]}`)); len(errs) == 0 {
		t.Error("the validator accepts a pod list without pagination")
	}
	if errs := openapicheck.Exchange("GET", "/v2/pods", "limit=5000", h, nil, 0, nil, nil); len(errs) == 0 {
		t.Error("the validator accepts limit=5000")
	}
}
