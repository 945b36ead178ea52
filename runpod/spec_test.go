package runpod

// This file loads Runpod's OpenAPI document and checks requests and
// responses against it, so the client cannot drift from the real API. The
// schema checker covers the JSON Schema keywords the document uses.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// specPaths are where the OpenAPI document may be: beside the repository
// root in CI (../shared next to the clone), or the shared directory of the
// development machine.
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

// checkQuery reports query parameters the operation does not declare.
func (d *openAPI) checkQuery(op *operation, names []string) []string {
	declared := map[string]bool{}
	for _, p := range op.Parameters {
		if ref, ok := p["$ref"].(string); ok {
			if q, ok := d.Components.Parameters[strings.TrimPrefix(ref, "#/components/parameters/")].(map[string]any); ok {
				p = q
			}
		}
		if p["in"] == "query" {
			declared[fmt.Sprint(p["name"])] = true
		}
	}
	var bad []string
	for _, n := range names {
		if !declared[n] {
			bad = append(bad, "undeclared query parameter "+n)
		}
	}
	return bad
}

// requestSchema is the JSON schema of op's request body, nil if none.
func (op *operation) requestSchema() any {
	if op.RequestBody == nil {
		return nil
	}
	return op.RequestBody.Content["application/json"]["schema"]
}

// responseSchema is the schema of op's answer with the given status; ok is
// false when the document does not list the status.
func (d *openAPI) responseSchema(op *operation, status int) (schema any, ok bool) {
	r, ok := op.Responses[fmt.Sprint(status)]
	if !ok {
		return nil, false
	}
	if ref, isRef := r["$ref"].(string); isRef {
		r, _ = d.Components.Responses[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
	}
	content, _ := r["content"].(map[string]any)
	for _, ct := range []string{"application/json", "application/problem+json"} {
		if m, ok := content[ct].(map[string]any); ok {
			return m["schema"], true
		}
	}
	return nil, true
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

// validate checks the JSON document b against schema and returns every
// violation.
func (d *openAPI) validate(schema any, b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	var errs []string
	d.check(schema, v, "$", &errs)
	return errs
}

func (d *openAPI) resolve(s any) map[string]any {
	m, _ := s.(map[string]any)
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok {
			break
		}
		m, _ = d.raw["components"].(map[string]any)["schemas"].(map[string]any)[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	}
	return m
}

func (d *openAPI) valid(schema, v any) bool {
	var errs []string
	d.check(schema, v, "$", &errs)
	return len(errs) == 0
}

// evaluated lists the properties a schema (with its allOf, and anyOf,
// oneOf and then branches that v satisfies) declares, for
// unevaluatedProperties.
func (d *openAPI) evaluated(schema any, v any, into map[string]bool) {
	s := d.resolve(schema)
	if s == nil {
		return
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for k := range props {
			into[k] = true
		}
	}
	for _, sub := range asList(s["allOf"]) {
		d.evaluated(sub, v, into)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		for _, sub := range asList(s[key]) {
			if d.valid(sub, v) {
				d.evaluated(sub, v, into)
			}
		}
	}
	if cond, ok := s["if"]; ok {
		if d.valid(cond, v) {
			d.evaluated(s["then"], v, into)
		} else {
			d.evaluated(s["else"], v, into)
		}
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) && !strings.ContainsAny(x.String(), ".eE") {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func (d *openAPI) check(schema, v any, at string, errs *[]string) {
	s := d.resolve(schema)
	if s == nil {
		return
	}
	fail := func(format string, a ...any) { *errs = append(*errs, at+": "+fmt.Sprintf(format, a...)) }

	if t, ok := s["type"]; ok {
		var types []string
		switch x := t.(type) {
		case string:
			types = []string{x}
		case []any:
			for _, y := range x {
				types = append(types, fmt.Sprint(y))
			}
		}
		got, match := jsonType(v), false
		for _, want := range types {
			if want == got || (want == "number" && got == "integer") {
				match = true
			}
		}
		if !match {
			fail("type %s, want %v", got, types)
			return
		}
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			if fmt.Sprint(x) == fmt.Sprint(v) {
				found = true
			}
		}
		if !found {
			fail("%v not in enum %v", v, e)
		}
	}
	if c, ok := s["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		fail("%v is not the constant %v", v, c)
	}
	for _, sub := range asList(s["allOf"]) {
		d.check(sub, v, at, errs)
	}
	if l := asList(s["anyOf"]); l != nil {
		ok := false
		for _, sub := range l {
			ok = ok || d.valid(sub, v)
		}
		if !ok {
			fail("matches none of anyOf")
		}
	}
	if l := asList(s["oneOf"]); l != nil {
		n := 0
		for _, sub := range l {
			if d.valid(sub, v) {
				n++
			}
		}
		if n != 1 {
			fail("matches %d of oneOf, want 1", n)
		}
	}
	if n, ok := s["not"]; ok && d.valid(n, v) {
		fail("matches a 'not' schema")
	}
	if cond, ok := s["if"]; ok {
		if d.valid(cond, v) {
			if th, ok := s["then"]; ok {
				d.check(th, v, at, errs)
			}
		} else if el, ok := s["else"]; ok {
			d.check(el, v, at, errs)
		}
	}
	switch x := v.(type) {
	case string:
		if n, ok := s["minLength"].(json.Number); ok {
			if m, _ := n.Int64(); int64(len([]rune(x))) < m {
				fail("string shorter than %d", m)
			}
		}
		if p, ok := s["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err == nil && !re.MatchString(x) {
				fail("%q does not match %s", x, p)
			}
		}
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339, x); err != nil {
				fail("%q is not a date-time", x)
			}
		}
	case json.Number:
		f, _ := x.Float64()
		if n, ok := s["minimum"].(json.Number); ok {
			if m, _ := n.Float64(); f < m {
				fail("%v below minimum %v", f, m)
			}
		}
		if n, ok := s["maximum"].(json.Number); ok {
			if m, _ := n.Float64(); f > m {
				fail("%v above maximum %v", f, m)
			}
		}
	case []any:
		if n, ok := s["maxItems"].(json.Number); ok {
			if m, _ := n.Int64(); int64(len(x)) > m {
				fail("%d items, at most %d allowed", len(x), m)
			}
		}
		if n, ok := s["minItems"].(json.Number); ok {
			if m, _ := n.Int64(); int64(len(x)) < m {
				fail("%d items, at least %d needed", len(x), m)
			}
		}
		if s["uniqueItems"] == true {
			seen := map[string]bool{}
			for _, it := range x {
				k := fmt.Sprint(it)
				if seen[k] {
					fail("duplicate item %v", it)
				}
				seen[k] = true
			}
		}
		if items, ok := s["items"]; ok {
			for i, it := range x {
				d.check(items, it, fmt.Sprintf("%s[%d]", at, i), errs)
			}
		}
	case map[string]any:
		for _, r := range asList(s["required"]) {
			if _, ok := x[fmt.Sprint(r)]; !ok {
				fail("required property %q missing", r)
			}
		}
		if n, ok := s["minProperties"].(json.Number); ok {
			if m, _ := n.Int64(); int64(len(x)) < m {
				fail("%d properties, at least %d needed", len(x), m)
			}
		}
		if dr, ok := s["dependentRequired"].(map[string]any); ok {
			for k, deps := range dr {
				if _, has := x[k]; has {
					for _, dep := range asList(deps) {
						if _, ok := x[fmt.Sprint(dep)]; !ok {
							fail("%q requires %q", k, dep)
						}
					}
				}
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, pv := range x {
			if ps, ok := props[k]; ok {
				d.check(ps, pv, at+"."+k, errs)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("property %q not allowed", k)
				}
			case map[string]any:
				d.check(ap, pv, at+"."+k, errs)
			}
		}
		if s["unevaluatedProperties"] == false {
			known := map[string]bool{}
			d.evaluated(s, v, known)
			for k := range x {
				if !known[k] {
					fail("property %q not allowed (unevaluated)", k)
				}
			}
		}
	}
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
	// The checker must reject what the document forbids, or it proves
	// nothing.
	_, op, err := d.specOp("POST", "/pods")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{"image":"x","gpu":{"id":"g"}}`,                                          // name missing
		`{"name":"n","gpu":{"id":"g"}}`,                                           // image missing without templateId
		`{"name":"n","image":"x","command":["a"]}`,                                // no such field
		`{"name":"n","image":"x","args":["a","b"]}`,                               // args is a string
		`{"name":"n","image":"x","cloud":"PRIVATE"}`,                              // not in enum
		`{"name":"n","image":"x","gpu":{"id":"g","count":0}}`,                     // count minimum 1
		`{"name":"n","image":"x","mounts":{"network":[{"volumeId":"v"}]}}`,        // path missing
		`{"name":"n","image":"x","mounts":{"persistent":{"size":5,"path":"/w"}}}`, // under 10 GB
	} {
		if errs := d.validate(op.requestSchema(), []byte(bad)); len(errs) == 0 {
			t.Errorf("the schema checker accepts the invalid createPod body %s", bad)
		}
	}
	good := `{"name":"n","image":"x","gpu":{"id":"g","count":1},"args":"'a'","mounts":{"network":[{"volumeId":"v","path":"/w"}]}}`
	if errs := d.validate(op.requestSchema(), []byte(good)); len(errs) > 0 {
		t.Errorf("the schema checker rejects a valid createPod body: %v", errs)
	}
}
