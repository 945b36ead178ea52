package runpodtest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// A small JSON Schema checker, enough for openapi_v2.json's schemas: $ref,
// allOf, anyOf, oneOf, type (with null), required, properties, items, enum,
// additionalProperties and unevaluatedProperties set to false. The fake's
// answers are checked against Runpod's own document with it.

var (
	openAPIOnce sync.Once
	openAPIDoc  map[string]any
	openAPIErr  error
)

func openAPISchemas(t testing.TB) map[string]any {
	t.Helper()
	openAPIOnce.Do(func() {
		raw, err := os.ReadFile("testdata/openapi_v2.json")
		if err != nil {
			openAPIErr = err
			return
		}
		openAPIErr = json.Unmarshal(raw, &openAPIDoc)
	})
	if openAPIErr != nil {
		t.Fatalf("openapi_v2.json: %v", openAPIErr)
	}
	return openAPIDoc["components"].(map[string]any)["schemas"].(map[string]any)
}

// checkSchema checks a JSON document against the named schema of
// components.schemas and fails the test with every violation.
func checkSchema(t testing.TB, name string, body []byte) {
	t.Helper()
	schemas := openAPISchemas(t)
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s: not JSON: %v: %s", name, err, body)
	}
	schema, ok := schemas[name]
	if !ok {
		t.Fatalf("no schema %s", name)
	}
	var errs []string
	validate(schemas, schema.(map[string]any), doc, "$", &errs)
	if len(errs) > 0 {
		t.Errorf("%s does not match the schema:\n  %s\nbody: %s", name, strings.Join(errs, "\n  "), body)
	}
}

func resolve(schemas map[string]any, s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		s = schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	}
}

// declared collects the property names a schema (and its allOf parts)
// declares, for unevaluatedProperties.
func declared(schemas map[string]any, s map[string]any, into map[string]bool) {
	s = resolve(schemas, s)
	if props, ok := s["properties"].(map[string]any); ok {
		for k := range props {
			into[k] = true
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, part := range all {
			declared(schemas, part.(map[string]any), into)
		}
	}
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func validate(schemas map[string]any, s map[string]any, v any, at string, errs *[]string) {
	s = resolve(schemas, s)
	bad := func(format string, args ...any) {
		*errs = append(*errs, at+": "+fmt.Sprintf(format, args...))
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, part := range all {
			validate(schemas, part.(map[string]any), v, at, errs)
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok {
			matched := 0
			for _, alt := range alts {
				var sub []string
				validate(schemas, alt.(map[string]any), v, at, &sub)
				if len(sub) == 0 {
					matched++
				}
			}
			if matched == 0 || (key == "oneOf" && matched > 1) {
				bad("%s matched %d alternatives", key, matched)
			}
		}
	}
	if typ, ok := s["type"]; ok {
		var types []string
		switch typ := typ.(type) {
		case string:
			types = []string{typ}
		case []any:
			for _, t := range typ {
				types = append(types, t.(string))
			}
		}
		got := jsonType(v)
		if !slices.Contains(types, got) && !(got == "integer" && slices.Contains(types, "number")) {
			bad("type %s, want %v", got, types)
			return
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		bad("%v is not one of %v", v, enum)
	}
	switch v := v.(type) {
	case map[string]any:
		if req, ok := s["required"].([]any); ok {
			for _, name := range req {
				if _, ok := v[name.(string)]; !ok {
					bad("missing required %s", name)
				}
			}
		}
		props, _ := s["properties"].(map[string]any)
		for name, val := range v {
			if ps, ok := props[name]; ok {
				validate(schemas, ps.(map[string]any), val, at+"."+name, errs)
			}
		}
		strictHere := s["additionalProperties"] == false
		strictAll := s["unevaluatedProperties"] == false
		if strictHere || strictAll {
			known := map[string]bool{}
			if strictAll {
				declared(schemas, s, known)
			} else {
				for k := range props {
					known[k] = true
				}
			}
			var extra []string
			for name := range v {
				if !known[name] {
					extra = append(extra, name)
				}
			}
			sort.Strings(extra)
			if len(extra) > 0 {
				bad("properties not allowed: %v", extra)
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, item := range v {
				validate(schemas, items, item, fmt.Sprintf("%s[%d]", at, i), errs)
			}
		}
	}
}

// The checker itself must catch what it is for.
func TestSchemaCheckerCatchesViolations(t *testing.T) {
	schemas := openAPISchemas(t)
	cases := map[string]string{
		"missing required": `{"title":"Not Found","status":404}`,
		"wrong type":       `{"title":"Not Found","status":"404","detail":"x"}`,
	}
	for name, body := range cases {
		var doc any
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		var errs []string
		validate(schemas, schemas["ErrorResponse"].(map[string]any), doc, "$", &errs)
		if len(errs) == 0 {
			t.Errorf("%s: %s passed", name, body)
		}
	}
	var doc any
	_ = json.Unmarshal([]byte(`{"action":"stop","extra":1}`), &doc)
	var errs []string
	validate(schemas, schemas["PodActionRequest"].(map[string]any), doc, "$", &errs)
	if len(errs) == 0 {
		t.Error("an extra property passed additionalProperties: false")
	}
	_ = json.Unmarshal([]byte(`{"action":"explode"}`), &doc)
	errs = nil
	validate(schemas, schemas["PodActionRequest"].(map[string]any), doc, "$", &errs)
	if len(errs) == 0 {
		t.Error("a value outside the enum passed")
	}
}
