package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Spec is one row of the summary: a benchmark metric, its baseline from the
// same run, and the goal it is held to.
type Spec struct {
	Part, Measure string
	Bench, Unit   string
	// Base and BaseUnit name the baseline; empty Base means none. BaseUnit
	// defaults to Unit.
	Base, BaseUnit string
	// Scale converts the metric to Show, the unit displayed.
	Scale float64
	Show  string
	// Goal is the goal as stated; Limit is the largest value (or, with
	// OnRatio, ratio to the baseline) that meets it; 0 is no check.
	Goal    string
	Limit   float64
	OnRatio bool
	// Paired: the i-th value and the i-th baseline value come from the same
	// invocation, so the ratio is the median of the per-invocation ratios,
	// which cancels load that drifts between invocations.
	Paired bool
}

// Row is a Spec with what the run measured.
type Row struct {
	Spec
	Val, BaseVal Stat
	Ratio        float64 // 0 when there is no baseline value
	Verdict      string  // "ok", "MISSED", "" (no goal) or "n/a" (not measured)
}

func evaluate(res *Results, specs []Spec) []Row {
	rows := make([]Row, 0, len(specs))
	for _, s := range specs {
		if s.Scale == 0 {
			s.Scale = 1
		}
		if s.BaseUnit == "" {
			s.BaseUnit = s.Unit
		}
		r := Row{Spec: s, Val: Summarize(res, s.Bench, s.Unit)}
		if s.Base != "" {
			r.BaseVal = Summarize(res, s.Base, s.BaseUnit)
			if r.Val.Present && r.BaseVal.Present && r.BaseVal.Median != 0 {
				r.Ratio = r.Val.Median / r.BaseVal.Median
			}
			v, b := res.get(s.Bench, s.Unit), res.get(s.Base, s.BaseUnit)
			if s.Paired && len(v) > 0 && len(v) == len(b) && !slices.Contains(b, 0) {
				ratios := make([]float64, len(v))
				for i := range v {
					ratios[i] = v[i] / b[i]
				}
				slices.Sort(ratios)
				r.Ratio = median(ratios)
			}
		}
		switch {
		case !r.Val.Present:
			r.Verdict = "n/a"
		case s.Limit == 0:
		case s.OnRatio && r.Ratio == 0:
			r.Verdict = "n/a"
		case s.OnRatio && r.Ratio <= s.Limit, !s.OnRatio && r.Val.Median <= s.Limit:
			r.Verdict = "ok"
		default:
			r.Verdict = "MISSED"
		}
		rows = append(rows, r)
	}
	return rows
}

// num formats v with about three significant digits.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case v == math.Trunc(v) && a < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

func (r Row) cells() []string {
	unit := func(s string) string {
		if r.Show == "" {
			return s
		}
		return s + " " + r.Show
	}
	val, spread, base, ratio := short(r.Val.MissingWhy), "", "", ""
	if r.Val.Present {
		val = unit(num(r.Val.Median * r.Scale))
		spread = fmt.Sprintf("%s–%s (n=%d)", num(r.Val.Min*r.Scale), num(r.Val.Max*r.Scale), r.Val.N)
	}
	if r.Base != "" {
		if r.BaseVal.Present {
			base = unit(num(r.BaseVal.Median * r.Scale))
		} else {
			base = short(r.BaseVal.MissingWhy)
		}
	}
	if r.Ratio != 0 {
		ratio = num(r.Ratio) + "×"
	}
	return []string{r.Part, r.Measure, r.Goal, val, spread, base, ratio, r.Verdict}
}

// short is the first word of why a measure is missing ("skip: msg" is
// "skipped"); the reasons are listed in full under the table.
func short(why string) string {
	switch {
	case strings.HasPrefix(why, "skip"):
		return "skipped"
	case strings.HasPrefix(why, "fail"):
		return "failed"
	}
	return why
}

// missing lists, once each, why measures are missing.
func missing(rows []Row) []string {
	var out []string
	seen := map[string]bool{}
	add := func(bench string, st Stat) {
		if st.Present || seen[st.MissingWhy] || st.MissingWhy == "not run" {
			return
		}
		seen[st.MissingWhy] = true
		out = append(out, strings.TrimPrefix(bench, "Benchmark")+": "+st.MissingWhy)
	}
	for _, r := range rows {
		add(r.Bench, r.Val)
		if r.Base != "" {
			add(r.Base, r.BaseVal)
		}
	}
	return out
}

var header = []string{"part", "measure", "goal", "median", "spread", "baseline", "ratio", "goal met"}

// printTable writes the rows as an aligned text table.
func printTable(w io.Writer, rows []Row) {
	table := [][]string{header}
	for _, r := range rows {
		table = append(table, r.cells())
	}
	widths := make([]int, len(header))
	for _, row := range table {
		for i, c := range row {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, row := range table {
		var b strings.Builder
		for i, c := range row {
			if i == len(row)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			if pad := widths[i] - len([]rune(c)); pad > 0 {
				b.WriteString(strings.Repeat(" ", pad))
			}
			b.WriteString("  ")
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	for _, m := range missing(rows) {
		fmt.Fprintln(w, "  n/a "+m)
	}
}

// markdownTable writes the rows as a Markdown table.
func markdownTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat("---|", len(header)))
	for _, r := range rows {
		c := r.cells()
		for i := range c {
			c[i] = strings.ReplaceAll(c[i], "|", `\|`)
		}
		if c[7] == "MISSED" {
			c[7] = "**MISSED**"
		}
		fmt.Fprintln(w, "| "+strings.Join(c, " | ")+" |")
	}
	if m := missing(rows); len(m) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Not measured:")
		fmt.Fprintln(w)
		for _, l := range m {
			fmt.Fprintln(w, "- "+l)
		}
	}
}
