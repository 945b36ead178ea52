package launcher

import (
	"cmp"
	"context"

	"github.com/overbrainer/overbrainer-go/guard"
)

func cmdSweep(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("sweep", "", "Deletes the account's abandoned overbrainer pods and host-key secrets, judged\nfrom the API alone; it needs no local state (see the README's \"Fleets\").")
	dry, asJSON := fs.Bool("dry-run", false, "say what would be deleted and why; delete nothing"), fs.Bool("json", false, "write one JSON line per decision")
	every := fs.Duration("every", 0, "sweep again every period until interrupted (at least 1m against Runpod)")
	p := guard.SweepPolicy{}
	fs.DurationVar(&p.ExitedGrace, "exited-grace", guard.DefaultExitedGrace, "how long an EXITED or ERROR pod is left")
	fs.DurationVar(&p.Margin, "margin", guard.DefaultSweepMargin, "added to each pod's own times, so that its watchdog acts first")
	fs.DurationVar(&p.SecretGrace, "secret-grace", guard.DefaultSecretGrace, "how long a run's secret outlives its pod")
	if err := parse(fs, args); err != nil || fs.NArg() > 0 {
		return cmp.Or(err, usagef("sweep takes no arguments"))
	}
	if a.g.local || a.getenv(EnvAPIKey) == "" {
		if err := a.openStore(); err != nil { // the local emulator's only
			return err
		}
	}
	if err := a.connectAPI(ctx); err != nil {
		return err
	}
	if err := cmp.Or(p.Validate(), guard.CheckSweepPeriod(*every, a.apiURL)); err != nil {
		return usagef("%v", err)
	}
	p.DryRun = *dry
	failed := false
	each := func(rep guard.Report, err error) {
		if werr := rep.Write(a.stdout, *asJSON, *dry, err); werr != nil || (err != nil && *asJSON) {
			a.say("sweep: %v", cmp.Or(err, werr))
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
