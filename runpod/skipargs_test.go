package runpod

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// clearPodArgs drops the start command of each pod of a decoded page
// where withoutArgs does (in the top-level array, or in an array member of
// the top-level object): a string args becomes "", an array cmd or
// entrypoint becomes [].
func clearPodArgs(v any) {
	clear := func(arr any) {
		list, _ := arr.([]any)
		for _, e := range list {
			if pod, ok := e.(map[string]any); ok {
				if _, isString := pod["args"].(string); isString {
					pod["args"] = ""
				}
				for _, k := range []string{"cmd", "entrypoint"} {
					if _, isArray := pod[k].([]any); isArray {
						pod[k] = []any{}
					}
				}
			}
		}
	}
	switch t := v.(type) {
	case []any:
		clear(t)
	case map[string]any:
		for _, m := range t {
			clear(m)
		}
	}
}

// checkWithoutArgs: the page read after withoutArgs is the page read as
// is, its pods' args emptied. Of a page that is not JSON nothing is
// asserted but that it comes back no longer: what is wrong inside a pod's
// args is dropped with them.
func checkWithoutArgs(t *testing.T, page string) {
	t.Helper()
	got := string(withoutArgs([]byte(page)))
	// The page as it comes off the wire: in byte-sized writes, and in
	// two at every cut of a short page, the same.
	cuts := [][]int{nil}
	for i := 0; i <= len(page); i++ {
		cuts[0] = append(cuts[0], i)
		if len(page) <= 256 {
			cuts = append(cuts, []int{i, len(page)})
		}
	}
	for _, ends := range cuts {
		var d argsDropper
		from := 0
		for _, end := range ends {
			_, _ = d.Write([]byte(page[from:end]))
			from = end
		}
		if string(d.out) != got {
			t.Fatalf("%q written in writes ending at %v: %q, at once %q", page, ends, d.out, got)
		}
	}
	if !json.Valid([]byte(page)) {
		if len(got) > len(page) {
			t.Errorf("withoutArgs(%q) = %q: longer", page, got)
		}
		return
	}
	want, have := readAny(t, page), readAny(t, got)
	clearPodArgs(want)
	if !reflect.DeepEqual(have, want) {
		t.Errorf("withoutArgs(%q) = %q, read as %v, want %v", page, got, have, want)
	}
}

func readAny(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("reading %q: %v", s, err)
	}
	return v
}

func TestWithoutArgs(t *testing.T) {
	for _, page := range []string{
		`{"pods":[{"id":"a","args":"bash -c 'echo \"hi\\\\\" there'","env":{"args":"kept","x":"\"args\":\"y\""}},{"args":"","id":"b"}],"pagination":{"nextCursor":"b","hasNextPage":true}}`,
		`[{"id":"a","args" : "x\\"}, {"id":"b","args":null,"name":"args"}]`,
		` { "pods" : [ { "mounts" : { "args" : "kept" } , "args" : "gone\u0022" } ] } `,
		`{"pods":[],"args":"kept: not in a pod"}`,
		`[[{"args":"kept: not a pod"}]]`,
		`{"pods":[{"args":["not","a","string"]}]}`,
		`{"pods":[{"id":"a","entrypoint":["bash","-c"],"cmd":["echo \"]}[{\" done"],"args":"{\"cmd\":[\"x\"]}","env":{"cmd":"kept"}}],"pagination":{"hasNextPage":false}}`,
		`[{"cmd" : [ ["nested", {"a":"]"}], 1, null ] , "entrypoint":[]}, {"cmd":null,"entrypoint":"not an array"}]`,
		`{"pods":[{"mounts":{"cmd":["kept"]},"cmd":["gone"]}],"entrypoint":["kept: not in a pod"]}`,
		`{"pods":[{"cmd":["unterminated"}]}`,
		`{"pods":[{"cmd":["mismatched"}]]}`,
		`{"pods":[{"args":"unterminated}]}`,
		`{"pods":[{"args":"x"}]`,
		`]`,
		``,
	} {
		checkWithoutArgs(t, page)
	}
}

func FuzzWithoutArgs(f *testing.F) {
	f.Add(`{"pods":[{"id":"a","args":"x\\\"y","env":{"args":"k"}}],"pagination":{}}`)
	f.Add(`[{"args":"a"},{"args":1}]`)
	f.Add(`{"pods":[{"cmd":["a\"]"],"entrypoint":[["b"]]}]}`)
	f.Fuzz(checkWithoutArgs)
}
