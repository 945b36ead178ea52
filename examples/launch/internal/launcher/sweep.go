package launcher

import (
	"context"
	"encoding/json"

	"github.com/overbrainer/overbrainer-go/guard"
)

func cmdSweep(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("sweep", "", `Judges every overbrainer pod and host-key secret of the account from the
API alone, and deletes those with no reason to exist: EXITED or ERROR
pods, pods never RUNNING within their boot grace, pods past their
deadline plus extension or past their cost cap (each plus --margin), and
secrets whose pod is gone. It needs no local state: run it anywhere, as
often as you like, any number at once.`)
	dry := fs.Bool("dry-run", false, "say what would be deleted and why, delete nothing")
	every := fs.Duration("every", 0, "sweep again every period until interrupted (at least 1m against Runpod)")
	asJSON := fs.Bool("json", false, "write one JSON line per decision")
	var p guard.SweepPolicy
	fs.DurationVar(&p.ExitedGrace, "exited-grace", guard.DefaultExitedGrace, "how long an EXITED or ERROR pod is left")
	fs.DurationVar(&p.Margin, "margin", guard.DefaultSweepMargin, "added to each pod's own times, so its watchdog acts first")
	fs.DurationVar(&p.SecretGrace, "secret-grace", guard.DefaultSecretGrace, "how long a run's secret outlives its pod")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("sweep takes no arguments")
	}
	if err := p.Validate(); err != nil {
		return usagef("%v", err)
	}
	// The state directory only for the local emulator: a sweeper in a
	// container needs none.
	if a.g.local || a.getenv(EnvAPIKey) == "" {
		if err := a.openStore(); err != nil {
			return err
		}
	}
	if err := a.connectAPI(ctx); err != nil {
		return err
	}
	if err := guard.CheckSweepPeriod(*every, a.apiURL); err != nil {
		return usagef("%v", err)
	}
	p.DryRun = *dry
	enc := json.NewEncoder(a.stdout)
	failed := false
	each := func(rep guard.Report, err error) {
		for _, d := range rep.Decisions {
			if *asJSON {
				_ = enc.Encode(d)
			} else if d.Delete || d.Rule == guard.RuleUnmarked || *dry {
				a.say("%s", d)
			}
		}
		if err != nil {
			a.say("sweep: %v", err)
		}
		if !*asJSON {
			a.say("sweep: %d pods, %d secrets, %d deleted", rep.Pods, rep.Secrets, rep.Deleted())
		}
		failed = err != nil
	}
	if *every == 0 {
		each(guard.Sweep(ctx, a.api, p))
	} else if err := guard.SweepEvery(ctx, a.api, p, *every, each); ctx.Err() == nil {
		return err
	}
	if failed {
		return &exitError{code: ExitFailed}
	}
	return nil
}
