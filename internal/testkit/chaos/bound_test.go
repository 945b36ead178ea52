package chaos_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// worstLine is one of the worst cases the launcher prints before its
// create, when it has a figure in dollars: its case, and the figure.
var worstLine = regexp.MustCompile(`worst case ([^:\n]*): \$([0-9.]+) for up to `)

// launcherDies is the case of a cell whose launcher is killed: its
// watchdog's bound.
const launcherDies = "if this launcher dies"

// worstPrinted is the worst case in dollars the launcher printed for the
// case given, or, for "", the largest it printed (whichever of its guards
// failed, the bill must stay under it).
func worstPrinted(out, which string) (usd float64, ok bool) {
	for _, m := range worstLine.FindAllStringSubmatch(out, -1) {
		if v, err := strconv.ParseFloat(m[2], 64); err == nil && (which == "" || m[1] == which) {
			usd, ok = max(usd, v), true
		}
	}
	return usd, ok
}

// bills is the suite's largest bill over its worst case, every cell's.
var bills struct {
	sync.Mutex
	worst       float64
	at          string
	cells, past int
}

// checkBill holds the cell's bill (the fake's, over all its pods, once
// they ended) to the worst case its launcher printed before the create
// for it: a killed launcher's, its watchdog's bound; else the larger of
// that and the following launcher's. A cell whose worst case is
// unbounded (a kept pod) has no figure to hold.
func (e *env) checkBill(l *launcher) {
	t, c := e.t, e.c
	out := l.output()
	which := ""
	if c.fault == "kill" {
		which = launcherDies
	}
	bound, ok := worstPrinted(out, which)
	switch {
	case !ok && len(e.srv.Pods()) == 0:
		return
	case !ok && strings.Contains(out, "worst case while this launcher follows: unbounded"):
		t.Logf("worst case unbounded: no bound to hold the bill to")
		return
	case !ok:
		c.err = "no worst case printed"
		t.Errorf("the launcher made a pod but printed no worst case before its create")
		return
	}
	c.bill, c.bound = e.srv.TotalUSD(), bound
	t.Logf("billed $%.6f of a worst case of $%.6f (%.4f)", c.bill, c.bound, c.bill/c.bound)
	bills.Lock()
	bills.cells++
	if r := c.bill / c.bound; r > bills.worst || bills.at == "" {
		bills.worst, bills.at = r, t.Name()
	}
	if c.bill > c.bound {
		bills.past++
	}
	bills.Unlock()
	if c.bill > c.bound {
		c.err = "billed past its worst case"
		t.Errorf("the fake billed $%.6f, past the worst case of $%.6f the launcher printed", c.bill, c.bound)
	}
}

// recordBills adds the suite's figure of bills against worst cases.
func recordBills() {
	bills.Lock()
	defer bills.Unlock()
	if bills.cells == 0 {
		return
	}
	figures.Lock()
	defer figures.Unlock()
	figures.list = append(figures.list, figure{"worst case", "largest bill / worst case printed before the create, every cell",
		fmt.Sprintf("%.4f (%s); %d cells, billed past it: %d (must be 0)", bills.worst, bills.at, bills.cells, bills.past)})
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
