package launcher

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/sweep"
)

// Environment variables of the money flags: each is its flag's default.
const (
	EnvBudget        = "OVERBRAINER_BUDGET_USD"
	EnvSweeperEvery  = "OVERBRAINER_SWEEPER_EVERY"
	EnvSweeperMargin = "OVERBRAINER_SWEEPER_MARGIN"
)

// moneyFlags are the flags of what a run may cost: the budget across the
// account's runs, and the sweeper the user says runs over the account
// (for the third bound of the worst case).
type moneyFlags struct {
	budget        float64
	sweeperEvery  time.Duration
	sweeperMargin time.Duration
}

func (m *moneyFlags) register(fs *flag.FlagSet, sweeper bool) {
	fs.Float64Var(&m.budget, "budget", 0, "refuse a run that would take what the account's guarded runs may still spend at most (their worst cases left) past this many USD (default $"+EnvBudget+"; 0: no budget)")
	if sweeper {
		fs.DurationVar(&m.sweeperEvery, "sweeper-every", 0, "a sweeper runs over the account this often (launch sweep --every; default $"+EnvSweeperEvery+"): the worst case if the pod's watchdog dies counts on it (0: none, that case is unbounded)")
		fs.DurationVar(&m.sweeperMargin, "sweeper-margin", sweep.DefaultMargin, "that sweeper's --margin (default $"+EnvSweeperMargin+" or "+sweep.DefaultMargin.String()+")")
	}
}

// fromEnv takes each flag not given on the command line from its
// variable, before a run file's values (which win over it) are applied.
func (m *moneyFlags) fromEnv(a *app, fs *flag.FlagSet) error {
	if v := a.getenv(EnvBudget); v != "" && !fs.Changed("budget") {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return usagef("%s=%q is not a number of USD", EnvBudget, v)
		}
		m.budget = f
	}
	for _, d := range []struct {
		flag, env string
		to        *time.Duration
	}{{"sweeper-every", EnvSweeperEvery, &m.sweeperEvery}, {"sweeper-margin", EnvSweeperMargin, &m.sweeperMargin}} {
		if fs.Lookup(d.flag) == nil || fs.Changed(d.flag) {
			continue
		}
		if v := a.getenv(d.env); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil {
				return usagef("%s=%q is not a duration", d.env, v)
			}
			*d.to = x
		}
	}
	return nil
}

// check refuses a negative budget or sweeper.
func (m *moneyFlags) check() error {
	switch {
	case math.IsNaN(m.budget) || math.IsInf(m.budget, 0) || m.budget < 0:
		return usagef("--budget must be a positive number of USD, or 0 for none")
	case m.sweeperEvery < 0 || m.sweeperMargin < 0:
		return usagef("--sweeper-every and --sweeper-margin cannot be negative")
	}
	return nil
}

// sweeper is the sweeper said to run, nil for none.
func (m *moneyFlags) sweeper() *podenv.Sweeper {
	if m.sweeperEvery == 0 {
		return nil
	}
	return &podenv.Sweeper{Every: m.sweeperEvery, Margin: m.sweeperMargin}
}

// boundText words one bound.
func boundText(b podenv.Bound, perHr float64) string {
	if b.Unbounded {
		return "unbounded"
	}
	// Rounded up to the minute: a worst case errs on the high side.
	d := b.For
	if r := d % time.Minute; r > 0 {
		d += time.Minute - r
	}
	if perHr <= 0 {
		return fmt.Sprintf("for up to %s at the pod's price (unknown now)", d)
	}
	return fmt.Sprintf("%s for up to %s at %s/h", costplan.MoneyUp(b.USD), d, money(perHr))
}

// sayWorstCase prints the run's worst case, one line per bound, before
// anything is created.
func (a *app) sayWorstCase(w podenv.WorstCase, kept bool) {
	why := ""
	switch {
	case kept:
		why = ": a kept pod (--keep-pod) runs until launch rm, or until --keep-idle without use once its job is over"
	case w.Follow.Unbounded:
		why = ": no deadline and no cost cap"
	}
	a.say("worst case while this launcher follows: %s%s", boundText(w.Follow, w.CostPerHr), why)
	a.say("worst case if this launcher dies: %s%s", boundText(w.Watchdog, w.CostPerHr), cmp.Or(why, ", ended by its watchdog (the deadline plus its extension, the cost cap once armed, the boot grace)"))
	switch {
	case w.NoSweeper:
		a.say("worst case if its watchdog dies too: unbounded: no sweeper (say one runs: --sweeper-every or $%s)", EnvSweeperEvery)
	default:
		a.say("worst case if its watchdog dies too: %s%s", boundText(w.Sweeper, w.CostPerHr), cmp.Or(why, ", ended by the sweeper (its period and margin past the pod's own rules)"))
	}
	if w.StorageUSDPerMonth > 0 {
		a.say("storage that outlives the pod: ~%s a month until removed (a network volume, a kept pod's volume)", money(w.StorageUSDPerMonth))
	}
}

// committed is what the account's guarded pods may still spend at most,
// read from the API alone as the sweeper reads it (a sweep that deletes
// nothing), with the pods nothing bounds.
func (a *app) committed(ctx context.Context) (sweep.Report, error) {
	rep, err := sweep.Once(ctx, a.api, sweep.Policy{DryRun: true})
	// A dry run deletes nothing: its error is a listing's, the pods' or,
	// which the sum does not need, the secrets'.
	if err != nil && rep.SecretsSkipped == "" {
		return rep, fmt.Errorf("listing the account's guarded pods for the budget: %w", err)
	}
	return rep, nil
}

// holders names the runs that hold a budget, the largest first.
func holders(ds []sweep.Decision) string {
	ds = slices.Clone(ds)
	slices.SortFunc(ds, func(x, y sweep.Decision) int { return cmp.Compare(y.LeftUSD, x.LeftUSD) })
	var out []string
	for _, d := range ds {
		switch {
		case d.NoBound || d.Rule == sweep.RuleCannotJudge:
			out = append(out, fmt.Sprintf("%s (%s: unbounded)", dash(d.RunID), dash(d.PodID)))
		case d.LeftUSD > 0:
			out = append(out, fmt.Sprintf("%s (%s: %s)", dash(d.RunID), dash(d.PodID), money(d.LeftUSD)))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// holding are the pod decisions that hold part of the budget.
func holding(rep sweep.Report) []sweep.Decision {
	var out []sweep.Decision
	for _, d := range rep.Decisions {
		if d.Secret == "" && d.Rule != sweep.RuleUnmarked && (d.LeftUSD > 0 || d.NoBound || d.Rule == sweep.RuleCannotJudge) {
			out = append(out, d)
		}
	}
	return out
}

// checkBudget refuses (exit 2) a run whose worst case w would take what
// the account's runs may still spend past budget.
func (a *app) checkBudget(ctx context.Context, budget float64, w podenv.WorstCase) error {
	need := w.Guarded()
	if need.Unbounded {
		return &exitError{code: ExitUsage, msg: fmt.Sprintf("budget: this run's worst case is unbounded (a kept pod, or no deadline and no cost cap): --budget %s cannot hold it; nothing created", money(budget))}
	}
	rep, err := a.committed(ctx)
	if err != nil {
		return err
	}
	usd, unbounded := rep.Committed()
	switch {
	case len(unbounded) > 0:
		return &exitError{code: ExitUsage, msg: fmt.Sprintf("budget: runs of this account have no bound on what they spend, so --budget %s cannot be kept: %s; nothing created",
			money(budget), holders(unbounded))}
	case usd+need.USD > budget:
		return &exitError{code: ExitUsage, msg: fmt.Sprintf("budget: this run may cost %s at most, and the account's runs may still spend %s: %s, past --budget %s; held by %s; nothing created",
			money(need.USD), money(usd), money(usd+need.USD), money(budget), holders(holding(rep)))}
	}
	a.say("budget: %s of --budget %s is committed (this run's worst case %s included)", money(usd+need.USD), money(budget), money(need.USD))
	return nil
}

// overBudget says, once the run's pod exists, whether the pods made up to
// it (in the order of their creation, the same for every launcher) take
// the committed sum past budget: two launchers racing for the last
// dollars both passed checkBudget, and only the newer pod must go. It
// returns what holds the budget then.
func (a *app) overBudget(ctx context.Context, budget float64, podID string) (over bool, sum float64, held string, err error) {
	rep, err := a.committed(ctx)
	if err != nil {
		return false, 0, "", err
	}
	var pods []sweep.Decision
	for _, d := range rep.Decisions {
		if d.Secret == "" && d.Rule != sweep.RuleUnmarked {
			pods = append(pods, d)
		}
	}
	// The oldest first (the greatest age at this one reading), then by id.
	slices.SortFunc(pods, func(x, y sweep.Decision) int { return cmp.Or(cmp.Compare(y.Age, x.Age), cmp.Compare(x.PodID, y.PodID)) })
	i := slices.IndexFunc(pods, func(d sweep.Decision) bool { return d.PodID == podID })
	if i < 0 {
		return false, 0, "", fmt.Errorf("budget: this run's pod %s is not among the account's guarded pods", podID)
	}
	before := pods[:i+1]
	usd, unbounded := sweep.Report{Decisions: before}.Committed()
	return len(unbounded) > 0 || usd > budget, usd, holders(holding(sweep.Report{Decisions: pods[:i]})), nil
}

func cmdBudget(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("budget", "", `Lists the account's guarded pods (from the API alone, as "launch sweep"
reads them) with what each may still spend at most by its own rules (its
worst case left, while its watchdog or a launcher works), and their sum:
the money the account has committed. With --budget, what is left of it.`)
	var m moneyFlags
	m.register(fs, false)
	if err := parse(fs, args); err != nil || fs.NArg() > 0 {
		return cmp.Or(err, usagef("budget takes no arguments"))
	}
	if err := cmp.Or(m.fromEnv(a, fs), m.check()); err != nil {
		return err
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	rep, err := a.committed(ctx)
	if err != nil {
		return err
	}
	var rows [][]any
	for _, d := range holding(rep) {
		left := money(d.LeftUSD)
		if d.NoBound || d.Rule == sweep.RuleCannotJudge {
			left = "unbounded"
		}
		rows = append(rows, []any{dash(d.RunID), dash(d.PodID), dash(string(d.Status)), left})
	}
	a.table("no guarded pod may spend more", "RUN\tPOD\tSTATUS\tMAY STILL SPEND", rows)
	usd, unbounded := rep.Committed()
	total := money(usd)
	if len(unbounded) > 0 {
		total += fmt.Sprintf(", and %d unbounded", len(unbounded))
	}
	fmt.Fprintf(a.stdout, "committed: %s\n", total)
	if m.budget > 0 {
		if len(unbounded) > 0 || usd > m.budget {
			fmt.Fprintf(a.stdout, "budget: %s, passed: a run is refused\n", money(m.budget))
		} else {
			fmt.Fprintf(a.stdout, "budget: %s, %s left\n", money(m.budget), money(m.budget-usd))
		}
	}
	return nil
}

// sayOverBudget says when a sweep's committed sum passes the budget
// (none: 0) the sweeper was given.
func (a *app) sayOverBudget(rep sweep.Report, budget float64) {
	usd, unbounded := rep.Committed()
	if budget <= 0 || (usd <= budget && len(unbounded) == 0) {
		return
	}
	a.say("sweep: the account's guarded pods may still spend %s (and %d nothing bounds), past --budget %s: held by %s",
		money(usd), len(unbounded), money(budget), holders(holding(rep)))
}

// worstText is the WORST CASE column of a run (the larger of its bounds
// while its watchdog or this launcher works), and, when Runpod billed it
// more than that, the loud line that says so: the bound failed.
func worstText(r guard.Record) (col, over string) {
	if r.WorstCase == nil {
		return "-", ""
	}
	b := r.WorstCase.Guarded()
	if b.Unbounded {
		return "unbounded", ""
	}
	col = money(b.USD)
	if r.Bill != nil && r.Bill.USD > b.USD {
		over = fmt.Sprintf("RUN %s BILLED %s, ABOVE ITS WORST CASE OF %s: a bug of ours or a change of Runpod's; please report it (%s), with \"launch ls\" and the run's state directory",
			r.ID, money(r.Bill.USD), money(b.USD), reportURL)
	}
	return col, over
}

// reportURL is where a bill above its worst case is reported.
const reportURL = "https://github.com/overbrainer/overbrainer-go/issues"
