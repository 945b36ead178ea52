package doctor

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/overbrainer/overbrainer-go/runpod"
)

// OpenAPIPath is where the API serves its OpenAPI text, under the REST
// base URL (Runpod's docs: https://api.runpod.io/v2/openapi.json, as
// https://rest.runpod.io/v1/openapi.json for v1); the emulator serves its
// own there too.
const OpenAPIPath = "/openapi.json"

// usedOperations are the operations this SDK calls, "METHOD /path" under
// the base URL, as the OpenAPI text names them.
var usedOperations = []string{
	"GET /pods", "POST /pods", "GET /pods/{id}", "DELETE /pods/{id}", "POST /pods/{id}/action", "GET /pods/{id}/logs",
	"GET /catalog/gpus", "GET /catalog/gpus/{id}", "GET /catalog/cpus", "GET /catalog/datacenters",
	"GET /account/secrets", "POST /account/secrets", "PATCH /account/secrets/{id}", "DELETE /account/secrets/{id}",
	"GET /registries",
	"GET /network-volumes", "POST /network-volumes", "GET /network-volumes/{id}", "PATCH /network-volumes/{id}", "DELETE /network-volumes/{id}",
	"GET /billing/pods",
}

// usedRaw is the digest of our OpenAPI copy (runpod/runpodtest/testdata/
// openapi_v2.json) for usedOperations: TestOpenAPIDigest keeps it so
// (go test ./doctor -run TestOpenAPIDigest -update rewrites it).
//
//go:embed openapi_used.json
var usedRaw []byte

// apiDigest is, for each operation, its fields by path ("req.name",
// "res.pods[].id") with their JSON types ("string", "integer|null").
type apiDigest map[string]map[string]string

// sentFields are the request members this SDK sends, by operation: one
// the live text lacks is refused (the API rejects unknown members).
var sentFields = map[string][]string{
	"POST /pods": {"name", "image", "gpu", "gpu.id", "gpu.count", "gpu.minCudaVersion", "cpu", "cpu.id", "cpu.vcpuCount",
		"cloud", "disk", "mounts", "ports", "env", "args", "entrypoint", "cmd", "dataCenterIds", "registry"},
	"POST /pods/{id}/action":      {"action"},
	"POST /account/secrets":       {"name", "value", "description"},
	"PATCH /account/secrets/{id}": {"value", "description"},
	"POST /network-volumes":       {"name", "size", "dataCenter"},
}

// relied says the SDK relies on field of op: a member it sends, or one of
// an answer's members the client reads (the shapes' required ones).
func relied(op, field string) bool {
	if f, ok := strings.CutPrefix(field, "req."); ok {
		return slices.Contains(sentFields[op], f)
	}
	f, _ := strings.CutPrefix(field, "res.")
	method, path, _ := strings.Cut(op, " ")
	sh, ok := podFields, op == "POST /pods"
	if method == http.MethodGet {
		sh, ok = shapeOf(strings.Replace(path, "{id}", "x", 1))
	}
	if !ok {
		return false
	}
	if sh.envelope != "" {
		var in bool
		if f, in = strings.CutPrefix(f, sh.envelope+"[]."); !in {
			return f == sh.envelope
		}
	}
	return slices.Contains(sh.required, f)
}

// APIChange is one difference between the live OpenAPI text and ours, for
// an operation this SDK calls.
type APIChange struct {
	Operation string `json:"operation"`
	// Field is "req.NAME" or "res.PATH"; "" for the operation itself,
	// gone.
	Field string `json:"field,omitempty"`
	// Was and Now are the field's types ("" where it is absent).
	Was string `json:"was,omitempty"`
	Now string `json:"now,omitempty"`
	// Breaks says the SDK relies on what changed: an operation or a
	// field it uses is gone or of another type.
	Breaks bool `json:"breaks"`
}

func (c APIChange) String() string {
	what := c.Operation
	if c.Field != "" {
		what += " " + c.Field
	}
	switch {
	case c.Field == "":
		return what + " gone"
	case c.Was == "" && c.Now == "":
		return what + " new"
	case c.Was == "":
		return what + " new (" + c.Now + ")"
	case c.Now == "":
		return what + " gone"
	}
	return fmt.Sprintf("%s %s, was %s", what, c.Now, c.Was)
}

// diffAPI compares the live text's digest with ours: what is gone or
// retyped breaks when the SDK relies on it; what is new never does.
func diffAPI(ours, live apiDigest) []APIChange {
	var out []APIChange
	for _, op := range slices.Sorted(maps.Keys(ours)) {
		lf, ok := live[op]
		if !ok {
			out = append(out, APIChange{Operation: op, Breaks: true})
			continue
		}
		of := ours[op]
		for _, f := range slices.Sorted(maps.Keys(of)) {
			if now, ok := lf[f]; !ok || now != of[f] {
				out = append(out, APIChange{Operation: op, Field: f, Was: of[f], Now: now, Breaks: relied(op, f)})
			}
		}
		for _, f := range slices.Sorted(maps.Keys(lf)) {
			if _, ok := of[f]; !ok {
				out = append(out, APIChange{Operation: op, Field: f, Now: lf[f]})
			}
		}
	}
	return out
}

// digestOf reads an OpenAPI text and keeps, for each of ops, the fields of
// its JSON request body and of its first 2xx JSON answer, with their
// types. An operation the text lacks is left out.
func digestOf(text []byte, ops []string) (apiDigest, error) {
	var doc struct {
		Paths      map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(text, &doc); err != nil {
		return nil, fmt.Errorf("not an OpenAPI text: %w", err)
	}
	if doc.Paths == nil {
		return nil, fmt.Errorf("not an OpenAPI text: no paths")
	}
	// The paths may carry the base URL's own path (/v2) or not.
	prefix := ""
	for p := range doc.Paths {
		if strings.HasPrefix(p, "/v2/") {
			prefix = "/v2"
			break
		}
	}
	dg := apiDigest{}
	for _, op := range ops {
		method, path, _ := strings.Cut(op, " ")
		item, _ := doc.Paths[prefix+path].(map[string]any)
		o, ok := item[strings.ToLower(method)].(map[string]any)
		if !ok {
			continue
		}
		w := walker{schemas: doc.Components.Schemas, fields: map[string]string{}}
		if rb, ok := o["requestBody"].(map[string]any); ok {
			w.walk(jsonSchema(rb), "req", nil)
		}
		resps, _ := o["responses"].(map[string]any)
		for _, code := range slices.Sorted(maps.Keys(resps)) {
			if strings.HasPrefix(code, "2") {
				if r, ok := resps[code].(map[string]any); ok {
					w.walk(jsonSchema(r), "res", nil)
				}
				break
			}
		}
		dg[op] = w.fields
	}
	return dg, nil
}

// jsonSchema is the application/json schema of a request body or answer.
func jsonSchema(body map[string]any) any {
	content, _ := body["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	return media["schema"]
}

// maxDepth bounds how deep the digest follows nested objects.
const maxDepth = 6

type walker struct {
	schemas map[string]any
	fields  map[string]string
}

// walk records the schema's fields under prefix; stack holds the $refs
// being followed (a schema that holds itself is followed once).
func (w *walker) walk(s any, prefix string, stack []string) {
	m, ok := s.(map[string]any)
	if !ok || len(stack) > maxDepth {
		return
	}
	if ref, ok := m["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		if slices.Contains(stack, name) {
			return
		}
		w.walk(w.schemas[name], prefix, append(stack, name))
		return
	}
	for _, k := range []string{"allOf", "oneOf", "anyOf"} {
		if subs, ok := m[k].([]any); ok {
			for _, sub := range subs {
				w.walk(sub, prefix, stack)
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			field := prefix + "." + name
			if t := w.typeOf(p, stack); t != "" || w.fields[field] == "" {
				w.fields[field] = t
			}
			w.walk(p, field, stack)
		}
	}
	if items, ok := m["items"]; ok {
		w.walk(items, prefix+"[]", stack)
	}
}

// typeOf is a schema's JSON type ("string", "integer|null"), through its
// $ref and allOf; "" when it names none.
func (w *walker) typeOf(s any, stack []string) string {
	m, ok := s.(map[string]any)
	if !ok || len(stack) > maxDepth {
		return ""
	}
	if ref, ok := m["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		if slices.Contains(stack, name) {
			return "object"
		}
		return w.typeOf(w.schemas[name], append(stack, name))
	}
	var types []string
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	}
	if len(types) == 0 {
		for _, k := range []string{"allOf", "oneOf", "anyOf"} {
			subs, _ := m[k].([]any)
			for _, sub := range subs {
				if t := w.typeOf(sub, stack); t != "" {
					types = append(types, strings.Split(t, "|")...)
				}
			}
		}
	}
	if n, _ := m["nullable"].(bool); n {
		types = append(types, "null")
	}
	slices.Sort(types)
	return strings.Join(slices.Compact(types), "|")
}

// maxOpenAPI bounds what is read of the live OpenAPI text.
const maxOpenAPI = 32 << 20

// openAPI fetches the API's OpenAPI text and diffs it against ours, for
// the operations and fields this SDK uses.
func (d *doc) openAPI(ctx context.Context) {
	const meaning = "the API still offers what this SDK calls, as our copy of its text (2026-09) says"
	url := d.c.BaseURL() + OpenAPIPath
	text, status, err := d.get(ctx, url)
	switch {
	case status == http.StatusNotFound:
		d.add(CheckOpenAPI, ResultSkipped, "no OpenAPI text at "+url, "not compared: the checks above prove what runs call")
		return
	case err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled):
		d.failed(ctx, CheckOpenAPI, err, "")
		return
	case err != nil:
		d.add(CheckOpenAPI, ResultWarn, fmt.Sprintf("%s: %v", url, err), "not compared: the checks above prove what runs call")
		return
	}
	ours := apiDigest{}
	if err := json.Unmarshal(usedRaw, &ours); err != nil {
		d.add(CheckOpenAPI, ResultFail, "our digest: "+err.Error(), "a broken build")
		return
	}
	live, err := digestOf(text, slices.Sorted(maps.Keys(ours)))
	if err != nil {
		d.add(CheckOpenAPI, ResultWarn, url+": "+err.Error(), "not compared: the checks above prove what runs call")
		return
	}
	changes := diffAPI(ours, live)
	d.rep.APIChanges = changes
	if len(changes) == 0 {
		d.add(CheckOpenAPI, ResultOK, fmt.Sprintf("%d operations, their fields as in ours", len(ours)), meaning)
		return
	}
	// What breaks first, then what is only new.
	sorted := slices.Clone(changes)
	slices.SortStableFunc(sorted, func(a, b APIChange) int {
		if a.Breaks == b.Breaks {
			return 0
		}
		if a.Breaks {
			return -1
		}
		return 1
	})
	var shown []string
	for _, c := range sorted[:min(len(sorted), 6)] {
		shown = append(shown, c.String())
	}
	detail := fmt.Sprintf("%d change(s): %s", len(changes), strings.Join(shown, "; "))
	if len(sorted) > len(shown) {
		detail += fmt.Sprintf("; and %d more (--json lists them)", len(sorted)-len(shown))
	}
	if sorted[0].Breaks {
		d.add(CheckOpenAPI, ResultFail, detail, "what this SDK calls or reads is gone or of another type in the live text: runs may fail where it is used")
		return
	}
	d.add(CheckOpenAPI, ResultWarn, detail, "the live text adds to ours (drift): nothing this SDK uses changed")
}

// get reads url with the account key, through the doctor's transport.
func (d *doc) get(ctx context.Context, url string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+d.o.Key)
	req.Header.Set("Accept", "application/json")
	if d.o.UserAgent != "" {
		req.Header.Set("User-Agent", d.o.UserAgent)
	}
	hc := &http.Client{Timeout: runpod.DefaultTimeout, Transport: d.rec}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxOpenAPI))
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, fmt.Errorf("status %d", resp.StatusCode)
	}
	return b, resp.StatusCode, err
}
