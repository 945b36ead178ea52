package chaos_test

import (
	"regexp"
	"strconv"
)

// worstLine is one of the worst cases the launcher prints before its
// create, when it has a figure in dollars.
var worstLine = regexp.MustCompile(`worst case [^:\n]*: \$([0-9.]+) for up to `)

// worstPrinted is the largest worst case in dollars the launcher printed:
// whichever of its guards failed in the cell, the bill must stay under it.
func worstPrinted(out string) (usd float64, ok bool) {
	for _, m := range worstLine.FindAllStringSubmatch(out, -1) {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil {
			usd, ok = max(usd, v), true
		}
	}
	return usd, ok
}

// checkBill holds the cell's bill (the fake's, over all its pods) to the
// worst case its launcher printed before the create.
func (e *env) checkBill(l *launcher) {
	t, c := e.t, e.c
	bound, ok := worstPrinted(l.output())
	if !ok {
		c.err = "no worst case printed"
		t.Errorf("the launcher printed no worst case in dollars before its create")
		return
	}
	c.bill, c.bound = e.srv.TotalUSD(), bound
	t.Logf("billed $%.6f of a worst case of $%.6f (%.4f)", c.bill, c.bound, c.bill/c.bound)
	if c.bill > c.bound {
		c.err = "billed past its worst case"
		t.Errorf("the fake billed $%.6f, past the worst case of $%.6f the launcher printed", c.bill, c.bound)
	}
}

// billRatios is the matrix's largest bill over its worst case, its cell,
// and how many cells passed their worst case.
func billRatios(cells []*cell) (worst float64, at string, past int) {
	at = "-"
	for _, c := range cells {
		if c.mutant != "" || !(c.bound > 0) {
			continue
		}
		if r := c.bill / c.bound; r > worst || at == "-" {
			worst, at = r, c.name()
		}
		if c.bill > c.bound {
			past++
		}
	}
	return worst, at, past
}
