package doctor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// shape is what this SDK knows of the objects an answer lists: the
// members of Runpod's OpenAPI text of 2026-09 (known), the ones the client
// relies on (required), and which of them are whole numbers.
type shape struct {
	envelope string // the member that holds the list; "" for one object
	known    []string
	required []string
	whole    []string
}

var podFields = shape{
	known: []string{"id", "name", "status", "actions", "image", "args", "entrypoint", "cmd", "disk", "mounts", "ports",
		"env", "registry", "gpu", "cpu", "cloud", "cluster", "dataCenterId", "cudaVersion", "ssh", "template", "cost", "locked",
		"runtime", "createdAt", "startedAt", "globalNetworking"},
	required: []string{"id", "name", "status", "env", "cost", "createdAt"},
	whole:    []string{"disk"},
}

// shapes are the answers Run reads, by path.
var shapes = map[string]shape{
	"/pods": {envelope: "pods", known: podFields.known, required: podFields.required, whole: podFields.whole},
	"/catalog/gpus": {envelope: "gpus",
		known:    []string{"availability", "community", "cudaVersions", "dataCenters", "id", "manufacturer", "maxCount", "memory", "name", "pool", "price", "secure"},
		required: []string{"id", "name", "memory", "secure", "community", "price", "maxCount"},
		whole:    []string{"memory", "maxCount"}},
	"/catalog/cpus": {envelope: "cpus",
		known:    []string{"availability", "dataCenters", "group", "id", "name", "price", "ramGbPerVcpu", "vcpu"},
		required: []string{"id", "vcpu", "price"}},
	"/account/secrets": {envelope: "secrets",
		known: []string{"createdAt", "description", "id", "name", "valueLastUpdatedAt"}, required: []string{"id", "name"}},
	"/registries": {envelope: "registries", known: []string{"id", "name"}, required: []string{"id", "name"}},
	"/network-volumes": {envelope: "networkVolumes",
		known: []string{"dataCenter", "id", "name", "size", "type"}, required: []string{"id", "name", "size", "dataCenter"},
		whole: []string{"size"}},
	"/billing/pods": {envelope: "records",
		known:    []string{"podId", "startTime", "endTime", "totalAmount", "gpuAmount", "cpuAmount", "diskAmount"},
		required: []string{"podId", "startTime", "endTime", "totalAmount"}},
}

// drift is what an answer holds that this SDK does not expect: bad
// breaks what the client relies on (a missing member, a whole number
// written as a fraction), unknown is only new.
type drift struct {
	bad, unknown []string
}

// shapeOf is the shape of the answers at path: a path of one pod
// ("/pods/ID") has a pod's. ok is false for a path not checked (the log
// stream among them).
func shapeOf(path string) (shape, bool) {
	if sh, ok := shapes[path]; ok {
		return sh, true
	}
	if strings.HasPrefix(path, "/pods/") && strings.Count(path, "/") == 2 {
		return podFields, true
	}
	return shape{}, false
}

// checked says the answers at path are held to a shape.
func checked(path string) bool {
	_, ok := shapeOf(path)
	return ok
}

// driftOf holds the answer body at path to its shape.
func driftOf(path string, body []byte) drift {
	sh, ok := shapeOf(path)
	if !ok {
		return drift{}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return drift{bad: []string{"the answer is no JSON: " + err.Error()}}
	}
	var items []any
	if sh.envelope == "" {
		items = []any{v}
	} else if m, ok := v.(map[string]any); ok {
		items, _ = m[sh.envelope].([]any)
	} else if a, ok := v.([]any); ok {
		items = a
	}
	var d drift
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			d.bad = appendOnce(d.bad, "an item is no object")
			continue
		}
		for _, f := range sh.required {
			if _, ok := m[f]; !ok {
				d.bad = appendOnce(d.bad, fmt.Sprintf("member %q missing", f))
			}
		}
		for _, f := range sh.whole {
			if n, ok := m[f].(json.Number); ok && strings.ContainsAny(n.String(), ".eE") {
				d.bad = appendOnce(d.bad, fmt.Sprintf("member %q is %s, not a whole number", f, n))
			}
		}
		for k := range m {
			if !slices.Contains(sh.known, k) {
				d.unknown = appendOnce(d.unknown, k)
			}
		}
	}
	slices.Sort(d.unknown)
	return d
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
