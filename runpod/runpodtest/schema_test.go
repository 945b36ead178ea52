package runpodtest

import (
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/testkit/openapicheck"
)

// checkSchema checks a JSON document against the named schema of the
// OpenAPI document's components.schemas (with internal/testkit/openapicheck, a
// JSON Schema 2020-12 validator) and fails the test with every violation.
func checkSchema(t testing.TB, name string, body []byte) {
	t.Helper()
	if errs := openapicheck.Schema(name, body); len(errs) > 0 {
		t.Errorf("%s does not match the schema:\n  %s\nbody: %.2000s", name, strings.Join(errs, "\n  "), body)
	}
}

// The validator must catch what it is for.
func TestSchemaCheckerCatchesViolations(t *testing.T) {
	cases := map[string][2]string{
		"missing required":     {"ErrorResponse", `{"title":"Not Found","status":404}`},
		"wrong type":           {"ErrorResponse", `{"title":"Not Found","status":"404","detail":"x"}`},
		"extra property":       {"PodActionRequest", `{"action":"stop","extra":1}`},
		"outside the enum":     {"PodActionRequest", `{"action":"explode"}`},
		"no pagination":        {"ListPodsResponse", `{"pods":[]}`},
		"secret name rule":     {"CreateSecretRequest", `{"name":"1x","value":"v"}`},
		"empty secret value":   {"CreateSecretRequest", `{"name":"x","value":""}`},
		"secret without dates": {"Secret", `{"id":"s","name":"x"}`},
	}
	for name, c := range cases {
		if errs := openapicheck.Schema(c[0], []byte(c[1])); len(errs) == 0 {
			t.Errorf("%s: %s passed %s", name, c[1], c[0])
		}
	}
	if errs := openapicheck.Schema("Secret", []byte(`{"id":"s","name":"x","createdAt":"2026-09-01T12:00:00Z","description":null,"valueLastUpdatedAt":null}`)); len(errs) > 0 {
		t.Errorf("a valid Secret refused: %v", errs)
	}
}
