// Command report turns the raw `go test -bench` output that bench/run.sh
// collects into the summary table: for each measure its goal, the median of
// the runs with their spread, the baseline measured in the same run and the
// ratio to it. With -write it also regenerates bench/RESULTS.md.
//
//	go run ./bench/report -in DIR [-write bench/RESULTS.md]
//
// DIR holds the benchmark outputs (*.txt) and meta.env, the KEY=VALUE lines
// run.sh records about the run (command, date, machine, load).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "", "directory of benchmark outputs and meta.env")
	write := flag.String("write", "", "also write the Markdown report to this file")
	flag.Parse()
	if *in == "" {
		fmt.Fprintln(os.Stderr, "report: -in DIR is required")
		os.Exit(2)
	}
	res, raw, err := readDir(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	meta := readMeta(filepath.Join(*in, "meta.env"))
	rows := evaluate(res, partsRun(specs, meta))
	printTable(os.Stdout, rows)
	if *write != "" {
		f, err := os.Create(*write)
		if err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
		writeMarkdown(f, meta, rows, res, raw)
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", *write)
	}
}

// Results maps a benchmark name (without its -GOMAXPROCS suffix) to its
// metrics, each with every value reported; Skips maps a name to why it was
// skipped or failed.
type Results struct {
	Values map[string]map[string][]float64
	Skips  map[string]string
	// Failed holds, per benchmark, its runs' failures as it logged them
	// (failedRunLog): "STEP: ERROR".
	Failed map[string][]string
}

// failedRunLog starts a benchmark's log line of a failed run (bench's
// BenchmarkLaunchesUnderQuota).
const failedRunLog = "failed run at "

func (r *Results) get(name, unit string) []float64 { return r.Values[name][unit] }

var (
	procsSuffix = regexp.MustCompile(`-\d+$`)
	skipLine    = regexp.MustCompile(`^\s*--- (SKIP|FAIL): (\S+)`)
)

// Parse reads `go test -bench` output. Result lines are
// "BenchmarkName-N  iterations  value unit  value unit ...".
func Parse(r io.Reader, res *Results) (raw []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	// A skip or failure's message follows its "--- SKIP" line, or, with
	// -test.v, precedes it.
	pending, lastMsg, running := "", "", ""
	for sc.Scan() {
		line := sc.Text()
		// With -test.v, a benchmark's name comes alone on a line before
		// its log lines.
		if f := strings.Fields(line); len(f) == 1 && strings.HasPrefix(f[0], "Benchmark") {
			running = f[0]
		}
		if msg, ok := message(line); ok && strings.HasPrefix(msg, failedRunLog) && running != "" {
			if res.Failed == nil {
				res.Failed = map[string][]string{}
			}
			res.Failed[running] = append(res.Failed[running], strings.TrimPrefix(msg, failedRunLog))
			continue
		}
		if m := skipLine.FindStringSubmatch(line); m != nil {
			pending = procsSuffix.ReplaceAllString(m[2], "")
			res.Skips[pending] = strings.ToLower(m[1])
			if lastMsg != "" {
				res.Skips[pending] += ": " + lastMsg
			}
			lastMsg = ""
			continue
		}
		if msg, ok := message(line); ok {
			if pending != "" && !strings.Contains(res.Skips[pending], ": ") {
				res.Skips[pending] += ": " + msg
			} else if pending == "" && lastMsg == "" {
				lastMsg = msg
			}
			continue
		}
		pending, lastMsg = "", ""
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procsSuffix.ReplaceAllString(f[0], "")
		if res.Values[name] == nil {
			res.Values[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			res.Values[name][f[i+1]] = append(res.Values[name][f[i+1]], v)
		}
		raw = append(raw, line)
	}
	return raw, sc.Err()
}

// message is the text of a test log line ("    file.go:12: text").
func message(line string) (string, bool) {
	if !strings.HasPrefix(line, "    ") {
		return "", false
	}
	msg := strings.TrimSpace(line)
	if file, after, ok := strings.Cut(msg, ": "); ok && strings.Contains(file, ".go:") {
		return after, true
	}
	return "", false
}

func readDir(dir string) (*Results, []string, error) {
	res := &Results{Values: map[string]map[string][]float64{}, Skips: map[string]string{}, Failed: map[string][]string{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(files)
	var raw []string
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return nil, nil, err
		}
		lines, err := Parse(f, res)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", file, err)
		}
		raw = append(raw, lines...)
	}
	return res, raw, nil
}

// Meta is run.sh's description of the run, in the order written.
type Meta struct {
	Keys   []string
	Values map[string]string
}

func readMeta(path string) Meta {
	m := Meta{Values: map[string]string{}}
	b, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			continue
		}
		if _, dup := m.Values[k]; !dup {
			m.Keys = append(m.Keys, k)
		}
		m.Values[k] = v
	}
	return m
}

// partsRun keeps the specs of the parts meta.env says were run (all of
// them when it does not say).
func partsRun(specs []Spec, meta Meta) []Spec {
	parts := strings.Fields(meta.Values["parts"])
	if len(parts) == 0 {
		return specs
	}
	var out []Spec
	for _, s := range specs {
		if slices.Contains(parts, s.Part) {
			out = append(out, s)
		}
	}
	return out
}

// Stat summarizes a measure's values.
type Stat struct {
	N                 int
	Median, Min, Max  float64
	Present           bool
	MissingWhy        string
	CompanionSpreadOK bool
}

// Summarize returns the median and spread of unit's values for name. When
// the benchmark also reports "<prefix>-min/<rest>" and "<prefix>-max/<rest>"
// (one run that sampled several reactions at once), the spread covers them
// and N counts the "samples" metric.
func Summarize(res *Results, name, unit string) Stat {
	vals := slices.Clone(res.get(name, unit))
	if len(vals) == 0 {
		why := res.Skips[name]
		if why == "" {
			// A parent skipped or failed takes its sub-benchmarks along.
			for n, w := range res.Skips {
				if strings.HasPrefix(name, n+"/") {
					why = w
				}
			}
		}
		if why == "" {
			why = "not run"
		}
		return Stat{MissingWhy: why}
	}
	slices.Sort(vals)
	s := Stat{N: len(vals), Median: median(vals), Min: vals[0], Max: vals[len(vals)-1], Present: true}
	if pre, rest, ok := strings.Cut(unit, "/"); ok {
		mins, maxs := res.get(name, pre+"-min/"+rest), res.get(name, pre+"-max/"+rest)
		if len(mins) > 0 && len(maxs) > 0 {
			s.Min, s.Max = slices.Min(mins), slices.Max(maxs)
			s.CompanionSpreadOK = true
			if n := res.get(name, "samples"); len(n) > 0 {
				s.N = 0
				for _, v := range n {
					s.N += int(v)
				}
			}
		}
	}
	return s
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
