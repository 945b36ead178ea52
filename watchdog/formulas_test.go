package watchdog_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The differential test of the rules' arithmetic: the watchdog's own shell
// functions (its settings, span_end, cost_ask_at, sourced from the script
// as the pod runs it) and podenv's formulas, on the same inputs, give the
// same instants under every shell: the hard end (deadline plus extension),
// the boot and retrieve graces' ends, a stalled job's end, and the cost
// cap's snapshot. The shell reads the env podenv writes for the rules, so
// a zero's reading (a default, a hard deadline) is tested too.

// scriptFunctions returns the named function definitions of the watchdog
// script, verbatim, for a test to source: defining them runs nothing.
func scriptFunctions(t testing.TB, names ...string) string {
	t.Helper()
	src := watchdog.Script()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), "watchdog.sh")
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for _, st := range f.Stmts {
		if fd, ok := st.Cmd.(*syntax.FuncDecl); ok {
			defs[fd.Name.Value] = src[st.Pos().Offset():st.End().Offset()]
		}
	}
	var b strings.Builder
	for _, name := range names {
		def, ok := defs[name]
		if !ok {
			t.Fatalf("the watchdog script defines no function %s", name)
		}
		b.WriteString(def + "\n")
	}
	return b.String()
}

// formulaCase is one set of inputs: the run's rules, and the times (Unix
// seconds) the watchdog started, looks, saw the job end and asked for a
// stall snapshot; the pod's billing start, price and the earlier pods'
// spend, for the cost cap.
type formulaCase struct {
	rules                    podenv.Rules
	start, now, ended, asked int64
	billing                  int64
	price, earlier           float64
}

// settingVars are the env's variables the script's settings read.
var settingVars = []string{
	podenv.IntervalEnv, podenv.ProbeTriesEnv, podenv.ProbeWaitEnv, podenv.BootGraceEnv, podenv.RetrieveGraceEnv,
	podenv.LeaseTTLEnv, podenv.SnapshotLeadEnv, podenv.SnapshotWaitEnv, podenv.MaxExtensionEnv, podenv.KeepIdleEnv,
	podenv.PodVolumeGBEnv, podenv.VolumeGBEnv, podenv.DeadlineEnv,
}

// formulaScript reads one case a line (assignments), runs the script's
// settings and formulas on it, and prints the instants: each a time, or
// "-" for none, then 1 when it passed by now.
var formulaScript = `
while IFS= read -r line; do
  unset ` + strings.Join(settingVars, " ") + `
  eval "$line"
  start=$T_START
  settings
  n=$T_NOW
  out=
  if [ -n "$DEADLINE" ]; then
    if span_end "$DEADLINE" "$MAX_EXTENSION"; then p=1; else p=0; fi
    out="$span_end $p"
  else
    out="- 0"
  fi
  if span_end "$start" "$BOOT_GRACE"; then p=1; else p=0; fi
  out="$out $span_end $p"
  if span_end "$T_ENDED" "$RETRIEVE_GRACE"; then p=1; else p=0; fi
  out="$out $span_end $p"
  if span_end "$T_ASKED" "$SNAPSHOT_WAIT"; then p=1; else p=0; fi
  out="$out $span_end $p"
  snapshot_at=$T_SNAP
  cost_cap_at=$T_CAP
  cost_ask_at
  echo "$out ${cost_at:--}"
done
`

// key is any valid client key and claim: Env needs them.
const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV"

// goInstants is what podenv's formulas say of c, in the script's output
// form, and the line of assignments the script reads c from; ok is false
// when the rules make no valid env (nothing to compare).
func goInstants(c formulaCase) (want, line string, ok bool) {
	s := podenv.Settings{RunID: "r1", Workdir: "/w", AuthorizedKey: key, Claim: key, Rules: c.rules}
	env, err := s.Env()
	if err != nil {
		return "", "", false
	}
	var assign []string
	for _, name := range settingVars {
		if v, set := env[name]; set {
			assign = append(assign, name+"="+v)
		}
	}
	r, eff := c.rules, c.rules.EffectiveRules()
	at := func(t time.Time) string {
		if t.IsZero() {
			return "- 0"
		}
		passed := 0
		if c.now >= t.Unix() {
			passed = 1
		}
		return fmt.Sprintf("%d %d", t.Unix(), passed)
	}
	unix := func(s int64) time.Time { return time.Unix(s, 0) }
	// The graces are whole seconds here (Dues adds them as they are).
	fields := []string{
		at(r.HardEnd()),
		at(unix(c.start).Add(eff.BootGrace)),
		at(unix(c.ended).Add(eff.RetrieveGrace)),
		at(r.StallEnd(unix(c.asked))),
	}
	snap, capAt := "", ""
	cost := "-"
	if r.MaxCostUSD > 0 {
		// No price, no plan: the client writes none, and the script
		// finds none.
		plan, err := costplan.CostCap(r, unix(c.billing), c.price, c.earlier, 0)
		if err == nil && (plan.CostCapAt > math.MaxInt32 || plan.CostCapAt < 0) {
			// Past what the watchdog reads (10 digits, mksh's 32 bits):
			// the client's number is not one it takes.
			return "", "", false
		}
		if err == nil {
			snap, capAt = strconv.FormatInt(plan.SnapshotAt, 10), strconv.FormatInt(plan.CostCapAt, 10)
			cost = snap
		}
	}
	assign = append(assign, fmt.Sprintf("T_START=%d T_NOW=%d T_ENDED=%d T_ASKED=%d T_SNAP=%s T_CAP=%s",
		c.start, c.now, c.ended, c.asked, snap, capAt))
	return strings.Join(append(fields, cost), " "), strings.Join(assign, " "), true
}

// sameInstants compares the script's line with podenv's: equal, but for
// the cost cap's snapshot, which podenv never puts before the billing
// start while the script may count it earlier: both ask at once then.
func sameInstants(c formulaCase, got, want string) bool {
	if got == want {
		return true
	}
	g, w := strings.Fields(got), strings.Fields(want)
	if len(g) != len(w) || strings.Join(g[:len(g)-1], " ") != strings.Join(w[:len(w)-1], " ") {
		return false
	}
	gc, err1 := strconv.ParseInt(g[len(g)-1], 10, 64)
	wc, err2 := strconv.ParseInt(w[len(w)-1], 10, 64)
	return err1 == nil && err2 == nil && wc == c.billing && gc < wc
}

// checkFormulas runs the cases through the script under sh and compares
// each instant with podenv's.
func checkFormulas(t *testing.T, sh shtest.Shell, cases []formulaCase) {
	t.Helper()
	var lines, wants []string
	var kept []formulaCase
	for _, c := range cases {
		if want, line, ok := goInstants(c); ok {
			lines, wants, kept = append(lines, line), append(wants, want), append(kept, c)
		}
	}
	if len(kept) == 0 {
		return
	}
	script := scriptFunctions(t, "log", "number", "setting", "settings", "span_end", "cost_ask_at") + formulaScript
	res := shtest.Run(t, sh, script, shtest.Opts{Stdin: strings.Join(lines, "\n") + "\n"})
	got := strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n")
	if res.Code != 0 || len(got) != len(kept) {
		t.Fatalf("%s: exit %d, %d lines for %d cases:\n%s\nstderr: %s", sh.Name, res.Code, len(got), len(kept), res.Stdout, res.Stderr)
	}
	for i, c := range kept {
		if !sameInstants(c, got[i], wants[i]) {
			t.Errorf("%s: %s\n  the watchdog: %s\n  podenv:       %s\n  (hard end, boot grace, retrieve grace, stall, each with passed; cost snapshot)",
				sh.Name, lines[i], got[i], wants[i])
		}
	}
}

// base is a time for the cases: 2026-09-21.
const base = 1_790_000_000

var formulaTable = []formulaCase{
	// Every zero: the defaults, no deadline, no cap.
	{start: base, now: base + 1800, ended: base + 100, asked: base + 200},
	// A deadline with the default extension (a zero), the hour.
	{rules: podenv.Rules{Deadline: time.Unix(base+7200, 0)}, start: base, now: base + 10800, ended: base, asked: base},
	// A hard deadline: the hard end is the deadline, passed at it.
	{rules: podenv.Rules{Deadline: time.Unix(base+60, 0), HardDeadline: true}, start: base, now: base + 60, ended: base, asked: base},
	// A deadline with fractions: the pod counts the deadline's second and
	// the extension rounded up.
	{rules: podenv.Rules{Deadline: time.Unix(base+3600, 900e6), MaxExtension: 90*time.Minute + time.Millisecond, SnapshotWait: 2500 * time.Millisecond},
		start: base, now: base + 9001, ended: base + 10, asked: base + 9000},
	// Graces set, one passed by now, one not.
	{rules: podenv.Rules{Deadline: time.Unix(base+86400, 0), BootGrace: 5 * time.Minute, RetrieveGrace: 7 * time.Minute},
		start: base, now: base + 300, ended: base + 1, asked: base},
	// A cost cap: $10 at $0.69/h, $4 of it spent by an earlier pod.
	{rules: podenv.Rules{Deadline: time.Unix(base+86400, 0), MaxCostUSD: 10}, start: base, now: base + 3600, ended: base, asked: base,
		billing: base, price: 0.69, earlier: 4},
	// A cap shorter than the snapshot lead: asked at once.
	{rules: podenv.Rules{MaxCostUSD: 0.01, Keep: true}, start: base, now: base, ended: base, asked: base, billing: base + 5, price: 3},
	// A lead of a fraction of a second, the pod's whole second.
	{rules: podenv.Rules{MaxCostUSD: 1, SnapshotLead: 1500 * time.Millisecond}, start: base, now: base, ended: base, asked: base,
		billing: base, price: 3600 / 20.7},
}

// The table, under every shell, in a normal test run.
func TestFormulasAreTheWatchdogs(t *testing.T) {
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		checkFormulas(t, sh, formulaTable)
	})
}

// The same comparison, on inputs the fuzzer picks: times around 2026,
// durations of up to a day and a half (the extension, the lead and the
// wait with milliseconds), graces in whole seconds, a cap and a price in
// cents. Every shell runs each input; one that is missing fails under
// REQUIRE_SHELLS=1.
func FuzzFormulas(f *testing.F) {
	for _, c := range formulaTable {
		f.Add(c.rules.Deadline.UnixMilli()-base*1000, int64(c.rules.MaxExtension/time.Millisecond), c.rules.HardDeadline,
			int64(c.rules.SnapshotLead/time.Millisecond), int64(c.rules.SnapshotWait/time.Millisecond),
			uint32(c.rules.BootGrace/time.Second), uint32(c.rules.RetrieveGrace/time.Second),
			c.now-base, c.ended-base, c.asked-base, c.billing-base, uint32(c.rules.MaxCostUSD*100), uint32(c.price*100), uint32(c.earlier*100))
	}
	f.Fuzz(func(t *testing.T, deadlineMs, extMs int64, hard bool, leadMs, waitMs int64, boot, retrieve uint32,
		now, ended, asked, billing int64, capCents, priceCents, earlierCents uint32) {
		const day = 86400
		ms := func(v int64, limit uint64) time.Duration { return time.Duration(uint64(v)%limit) * time.Millisecond }
		c := formulaCase{start: base, now: base + now%(3*day), ended: base + ended%(3*day), asked: base + asked%(3*day),
			billing: base + billing%day, price: float64(priceCents%100000) / 100, earlier: float64(earlierCents%100000) / 100}
		if deadlineMs != 0 {
			c.rules.Deadline = time.UnixMilli(base*1000 + deadlineMs%(3*day*1000))
		}
		c.rules.HardDeadline = hard
		if !hard {
			c.rules.MaxExtension = ms(extMs, 36*3600*1000)
		}
		c.rules.SnapshotLead, c.rules.SnapshotWait = ms(leadMs, 36*3600*1000), ms(waitMs, 36*3600*1000)
		c.rules.BootGrace = time.Duration(boot%(2*day)) * time.Second
		c.rules.RetrieveGrace = time.Duration(retrieve%(2*day)) * time.Second
		c.rules.MaxCostUSD = float64(capCents%100000) / 100
		for _, sh := range shtest.All() {
			if !sh.Available() {
				if shtest.Required() {
					t.Fatalf("REQUIRE_SHELLS=1 but %s is missing", sh.Name)
				}
				continue
			}
			checkFormulas(t, sh, []formulaCase{c})
		}
	})
}
