package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkGetPod/client-2         	    2070	    300000 ns/op	   13033 B/op	     152 allocs/op
BenchmarkGetPod/bare-2           	    2859	    200000 ns/op	   10299 B/op	     130 allocs/op
BenchmarkGetPod/client-2         	    2070	    100000 ns/op	   13033 B/op	     152 allocs/op
BenchmarkGetPod/bare-2           	    2859	    100000 ns/op	   10299 B/op	     130 allocs/op
BenchmarkGetPod/client-2         	    2070	    200000 ns/op	   13033 B/op	     152 allocs/op
BenchmarkMarkerReaction/retrieved-2 	       1	2139706112 ns/op	        50 s-max/reaction	         2 s-min/reaction	         30 s/reaction	         6.000 samples
--- SKIP: BenchmarkBootToReady
    bootstrap_bench_test.go:71: BootToReady runs as root (private namespaces)
BenchmarkLaunch/x
    launch_test.go:222: no run command (yet)
--- SKIP: BenchmarkLaunch/x
BenchmarkLaunchesUnderQuota/200
    quota_test.go:80: failed run at follow: run 7: SSH lost
    quota_test.go:80: failed run at follow: run 9: SSH lost
    quota_test.go:80: failed run at delete: run 3: unconfirmed
BenchmarkLaunchesUnderQuota/200-2 	       1	         3.000 failed-runs
PASS
`

func parse(t *testing.T) *Results {
	t.Helper()
	res := &Results{Values: map[string]map[string][]float64{}, Skips: map[string]string{}}
	raw, err := Parse(strings.NewReader(sample), res)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 7 {
		t.Errorf("%d raw lines, want 7", len(raw))
	}
	return res
}

func TestSummarize(t *testing.T) {
	res := parse(t)
	s := Summarize(res, "BenchmarkGetPod/client", "ns/op")
	if !s.Present || s.N != 3 || s.Median != 200000 || s.Min != 100000 || s.Max != 300000 {
		t.Errorf("client ns/op: %+v", s)
	}
	if s := Summarize(res, "BenchmarkGetPod/bare", "ns/op"); s.Median != 150000 || s.N != 2 {
		t.Errorf("bare ns/op (even count): %+v", s)
	}
	// One run sampling six reactions: the spread is the companions'.
	m := Summarize(res, "BenchmarkMarkerReaction/retrieved", "s/reaction")
	if m.Median != 30 || m.Min != 2 || m.Max != 50 || m.N != 6 {
		t.Errorf("marker: %+v", m)
	}
	b := Summarize(res, "BenchmarkBootToReady/bootstrap", "s/ready")
	if b.Present || !strings.Contains(b.MissingWhy, "runs as root") {
		t.Errorf("a skipped parent's sub-benchmark: %+v", b)
	}
	// With -test.v the message comes before the --- SKIP line.
	if l := Summarize(res, "BenchmarkLaunch/x", "s"); l.MissingWhy != "skip: no run command (yet)" {
		t.Errorf("verbose skip: %q", l.MissingWhy)
	}
}

func TestEvaluate(t *testing.T) {
	res := parse(t)
	rows := evaluate(res, []Spec{
		{Measure: "time", Bench: "BenchmarkGetPod/client", Unit: "ns/op", Base: "BenchmarkGetPod/bare",
			Limit: 1.3, OnRatio: true},
		{Measure: "allocs", Bench: "BenchmarkGetPod/client", Unit: "allocs/op", Base: "BenchmarkGetPod/bare",
			Limit: 1.3, OnRatio: true},
		{Measure: "marker", Bench: "BenchmarkMarkerReaction/retrieved", Unit: "s/reaction", Limit: 62},
		{Measure: "absent", Bench: "BenchmarkNothing", Unit: "x", Limit: 1},
		{Measure: "info", Bench: "BenchmarkGetPod/client", Unit: "B/op"},
	})
	want := []string{"MISSED", "ok", "ok", "n/a", ""}
	for i, r := range rows {
		if r.Verdict != want[i] {
			t.Errorf("%s: verdict %q, want %q (ratio %v)", r.Measure, r.Verdict, want[i], r.Ratio)
		}
	}
	if r := rows[0].Ratio; r < 1.33 || r > 1.34 {
		t.Errorf("ratio %v, want 200000/150000", r)
	}
	// Paired: client 300000, 100000 (and an unpaired third) against bare
	// 200000, 100000 would be 1.5 and 1; with three values on one side
	// only, the ratio of medians stands.
	paired := evaluate(res, []Spec{{Bench: "BenchmarkGetPod/client", Unit: "ns/op", Base: "BenchmarkGetPod/bare", Paired: true}})
	if paired[0].Ratio < 1.33 || paired[0].Ratio > 1.34 {
		t.Errorf("paired ratio with unequal counts: %v", paired[0].Ratio)
	}
	res.Values["BenchmarkGetPod/client"]["ns/op"] = []float64{300000, 100000}
	paired = evaluate(res, []Spec{{Bench: "BenchmarkGetPod/client", Unit: "ns/op", Base: "BenchmarkGetPod/bare", Paired: true}})
	if paired[0].Ratio != 1.25 {
		t.Errorf("paired ratio %v, want median(1.5, 1) = 1.25", paired[0].Ratio)
	}
	var out bytes.Buffer
	markdownTable(&out, rows)
	if !strings.Contains(out.String(), "|  | time |  | 200000 | 100000–300000 (n=3) | 150000 | 1.33× | **MISSED** |") {
		t.Errorf("markdown:\n%s", out.String())
	}
	// A missed goal is listed; an absolute one with its same-run baseline,
	// which tells a slow machine from a slow watchdog.
	abs := evaluate(res, []Spec{{Measure: "abs", Bench: "BenchmarkGetPod/client", Unit: "ns/op", Base: "BenchmarkGetPod/bare", Limit: 100000}})
	out.Reset()
	writeMarkdown(&out, Meta{}, append(rows[:1:1], abs...), res, nil)
	for _, want := range []string{
		"Goals missed in this run: time (: 1.33×); abs (: 200000; its baseline 150000 here, ratio 1.33×).",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// The runs a benchmark logged as failed are listed with their step and
// reason, and counted by step.
func TestFailedRunsListed(t *testing.T) {
	res := parse(t)
	var b bytes.Buffer
	writeFailed(&b, res)
	for _, want := range []string{"**BenchmarkLaunchesUnderQuota/200**: 3 failed (1 at delete, 2 at follow).",
		"- at follow: run 7: SSH lost\n", "- at delete: run 3: unconfirmed\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
	if s := Summarize(res, "BenchmarkLaunchesUnderQuota/200", "failed-runs"); !s.Present || s.Median != 3 {
		t.Errorf("failed-runs: %+v", s)
	}
}
