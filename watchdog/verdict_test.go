package watchdog_test

import (
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

func TestParseVerdict(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line string
		want watchdog.Verdict
	}{
		{"", watchdog.Verdict{}},
		{"\n", watchdog.Verdict{}},
		{"ready\n", watchdog.Verdict{Ready: true}},
		{" ready\r\n", watchdog.Verdict{Ready: true}},
		{"ready\nfailed x\n", watchdog.Verdict{Ready: true}},
		{"failed\n", watchdog.Verdict{Failed: true}},
		{"failed unreachable\n", watchdog.Verdict{Failed: true, Reason: "unreachable"}},
		{"failed http_401", watchdog.Verdict{Failed: true, Reason: "http_401"}},
		{"failed bootstrap: host_key_mismatch\n", watchdog.Verdict{Failed: true, Bootstrap: true, Reason: "host_key_mismatch"}},
		{"failed bootstrap:unknown", watchdog.Verdict{Failed: true, Bootstrap: true, Reason: "unknown"}},
		{"failed bootstrap:", watchdog.Verdict{Failed: true, Bootstrap: true}},
		{"failed bootstrapped", watchdog.Verdict{Failed: true, Reason: "bootstrapped"}},
		{"Ready", watchdog.Verdict{Other: "Ready"}},
		{"readyish", watchdog.Verdict{Other: "readyish"}},
		{"failedx", watchdog.Verdict{Other: "failedx"}},
		{"degraded disk\n", watchdog.Verdict{Other: "degraded disk"}},
	} {
		got := watchdog.ParseVerdict(c.line)
		if got != c.want {
			t.Errorf("ParseVerdict(%q) = %+v, want %+v", c.line, got, c.want)
		}
		if back := watchdog.ParseVerdict(got.String()); back != got {
			t.Errorf("ParseVerdict(%q).String() = %q reads back as %+v", c.line, got.String(), back)
		}
	}
}

// scriptVerdicts returns every line the watchdog can write as its verdict:
// the words of its `verdict` calls, a "$result" standing for every value
// the script assigns to result. A variable in them takes each of the
// values in samples, and its :- default.
func scriptVerdicts(t *testing.T, samples map[string][]string) []string {
	t.Helper()
	f := parsedScript(t)
	var calls, results []*syntax.Word
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) == 2 && n.Args[0].Lit() == "verdict" {
				calls = append(calls, n.Args[1])
			}
		case *syntax.Assign:
			if n.Name != nil && n.Name.Value == "result" && n.Value != nil {
				results = append(results, n.Value)
			}
		}
		return true
	})
	var lines []string
	for _, w := range calls {
		words := []*syntax.Word{w}
		if pe, ok := onlyParam(w); ok && pe.Param.Value == "result" {
			words = results
		}
		for _, w := range words {
			lines = append(lines, expand(t, w.Parts, samples)...)
		}
	}
	return lines
}

// onlyParam is the expansion of a word that is nothing but "$name".
func onlyParam(w *syntax.Word) (*syntax.ParamExp, bool) {
	if len(w.Parts) == 1 {
		if dq, ok := w.Parts[0].(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
			pe, ok := dq.Parts[0].(*syntax.ParamExp)
			return pe, ok && pe.Exp == nil
		}
	}
	return nil, false
}

// expand returns every string that parts can make with the samples.
func expand(t *testing.T, parts []syntax.WordPart, samples map[string][]string) []string {
	t.Helper()
	out := []string{""}
	for _, p := range parts {
		var alts []string
		switch p := p.(type) {
		case *syntax.Lit:
			alts = []string{p.Value}
		case *syntax.SglQuoted:
			alts = []string{p.Value}
		case *syntax.DblQuoted:
			alts = expand(t, p.Parts, samples)
		case *syntax.ParamExp:
			alts = samples[p.Param.Value]
			if p.Exp != nil && p.Exp.Op == syntax.DefaultUnsetOrNull {
				alts = append(slices.Clone(alts), expand(t, p.Exp.Word.Parts, samples)...)
			} else if p.Exp != nil || p.Repl != nil || p.Slice != nil || p.Length {
				t.Fatalf("a verdict expands $%s in a way this test does not know", p.Param.Value)
			}
			if len(alts) == 0 {
				t.Fatalf("a verdict holds $%s, which this test has no sample of", p.Param.Value)
			}
		default:
			t.Fatalf("a verdict holds a %T, which this test cannot expand", p)
		}
		var next []string
		for _, head := range out {
			for _, a := range alts {
				next = append(next, head+a)
			}
		}
		out = next
	}
	return out
}

// Every verdict the script can write parses as ready or as a failure, and
// String writes it back as the script does.
func TestEveryScriptVerdictParses(t *testing.T) {
	t.Parallel()
	samples := map[string][]string{
		"code":        {"401", "503"},
		"boot_reason": bootstrap.Reasons(),
	}
	lines := scriptVerdicts(t, samples)
	// The walk finds what is known to be there, so an empty result cannot
	// pass for "all parse".
	for _, known := range []string{"ready", "failed unreachable", "failed http_503", "failed bootstrap: unknown", "failed bootstrap: " + bootstrap.ReasonHostKeyMismatch} {
		if !slices.Contains(lines, known) {
			t.Errorf("the script's verdicts %q lack %q", lines, known)
		}
	}
	for _, line := range lines {
		v := watchdog.ParseVerdict(line + "\n")
		switch {
		case v.Ready == v.Failed:
			t.Errorf("%q parses as %+v: neither ready nor failed", line, v)
		case v.Failed && v.Reason == "":
			t.Errorf("%q parses as a failure without a reason", line)
		case v.Bootstrap != strings.HasPrefix(line, "failed bootstrap: "):
			t.Errorf("%q parses as %+v", line, v)
		case v.String() != line:
			t.Errorf("%q parses as %+v, written back as %q", line, v, v.String())
		}
	}
}

// A verdict read back from its String is itself, and String never breaks
// the one-line file.
func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{"", "ready\n", "failed http_429", "failed bootstrap: x y", "failed  bootstrap:  z ", "x\r\ny", "failed \t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		v := watchdog.ParseVerdict(line)
		s := v.String()
		if strings.Contains(s, "\n") {
			t.Fatalf("ParseVerdict(%q).String() = %q has a newline", line, s)
		}
		if back := watchdog.ParseVerdict(s); back != v {
			t.Fatalf("ParseVerdict(%q) = %+v, its String %q reads back as %+v", line, v, s, back)
		}
	})
}
