package launcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	flag "github.com/spf13/pflag"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/sweep"
	"github.com/overbrainer/overbrainer-go/sweep/sweepmetrics"
)

// policyFlags are the sweeper's graces, for sweep and rm --all-orphans.
func policyFlags(fs *flag.FlagSet, p *sweep.Policy) {
	fs.DurationVar(&p.ExitedGrace, "exited-grace", sweep.DefaultExitedGrace, "how long an EXITED or ERROR pod is left (a restart passes through EXITED)")
	fs.DurationVar(&p.Margin, "margin", sweep.DefaultMargin, "added to each pod's own times, so that its watchdog acts first")
	fs.DurationVar(&p.SecretGrace, "secret-grace", sweep.DefaultSecretGrace, "how long a run's secret outlives its pod")
}

func cmdSweep(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("sweep", "", "Deletes the account's abandoned overbrainer pods and host-key secrets, judged\nfrom the API alone; it needs no local state (see the README's \"Fleets\").\nA pod it cannot judge (a field missing, unreadable or unknown) is listed with\nthe reason and left; so is a kept pod that stopped (its storage bills).")
	dry, asJSON := fs.Bool("dry-run", false, "say what would be deleted and why, and what cannot be judged; delete nothing"), fs.Bool("json", false, "write one JSON line per decision")
	every := fs.Duration("every", 0, "sweep again every period until interrupted (at least 1m against Runpod)")
	metricsAddr := fs.String("metrics-addr", "", "with --every: serve Prometheus metrics at /metrics on this address (e.g. :9090; port 0 picks one, which is printed)")
	p := &sweep.Policy{}
	policyFlags(fs, p)
	var m moneyFlags
	m.register(fs, false)
	if err := parse(fs, args); err != nil || fs.NArg() > 0 {
		return cmp.Or(err, usagef("sweep takes no arguments"))
	}
	if err := cmp.Or(m.fromEnv(a, fs), m.check()); err != nil {
		return err
	}
	// A sweep is for an account: without a key it would sweep an
	// emulator started for it, which has nothing to sweep, and say
	// all is well.
	if !a.g.local && a.getenv(EnvAPIKey) == "" {
		return usagef("sweep needs %s (it sweeps a Runpod account); --local sweeps the local emulator", EnvAPIKey)
	}
	if *metricsAddr != "" && *every == 0 {
		return usagef("--metrics-addr needs --every: a single sweep ends before anything scrapes it")
	}
	if a.g.local {
		if err := a.openStore(); err != nil { // the local emulator's only
			return err
		}
	}
	var metrics *sweepmetrics.Metrics
	if *metricsAddr != "" {
		m, stop, err := a.serveMetrics(*metricsAddr)
		if err != nil {
			return err
		}
		defer stop()
		metrics = m
	}
	if err := a.connectAPI(ctx); err != nil {
		return err
	}
	if err := cmp.Or(p.Validate(), sweep.CheckPeriod(*every, a.apiURL)); err != nil {
		return usagef("%v", err)
	}
	p.DryRun = *dry
	failed := false
	each := func(rep sweep.Report, err error) {
		if metrics != nil {
			metrics.Observe(rep, err)
		}
		if werr := rep.Write(a.stdout, *asJSON, *dry, err); werr != nil || (err != nil && *asJSON) {
			a.say("sweep: %v", cmp.Or(err, werr))
		}
		failed = err != nil
		a.sayOverBudget(rep, m.budget)
	}
	if *every == 0 {
		each(sweep.Once(ctx, a.api, *p))
	} else if err := sweep.Every(ctx, a.api, *p, *every, each); ctx.Err() == nil {
		return err
	}
	if failed {
		return &exitError{code: ExitFailed}
	}
	return nil
}

// rmOrphans deletes, by the sweeper's rules and graces, the abandoned pods
// and secrets of runs this machine's state does not know, and the secret
// of a known run whose pod is gone and whose launcher is no longer
// running (one killed before it cleaned up).
func (a *app) rmOrphans(ctx context.Context, p sweep.Policy) error {
	runs, err := a.store.List()
	if err != nil {
		return err
	}
	known, needed := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		// A recovery on a network volume left under way (the lost pod
		// gone, the new one not running yet) needs the run's host key
		// secret: the next pod's only claim on the run directory there.
		// attach finishes it.
		known[r.ID], needed[r.ID] = true, r.NetworkVolumeID != "" && r.Recovery.Replacing != ""
	}
	p.Skip = func(id string) bool { return known[id] }
	rep, err := sweep.Once(ctx, a.api, p)
	if rep.Pods == 0 && err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	failed, n := err != nil, 0
	for _, d := range rep.Decisions {
		switch {
		case d.Told():
			a.say("%s", d)
		case d.Secret == "":
			// Maybe another machine's live run.
			a.say("%s (look at it with \"launch ls\")", d)
		default:
			continue
		}
		n++
	}
	if rep.SecretsSkipped != "" {
		a.say("secrets not swept: %s", rep.SecretsSkipped)
	} else if nk, kerr := a.rmKnownSecrets(ctx, known, needed); kerr != nil {
		failed = true
	} else {
		n += nk
	}
	if n == 0 {
		a.say("no orphan pods or secrets")
	}
	if failed {
		return &exitError{code: ExitFailed, msg: "some orphans are left"}
	}
	return nil
}

// rmKnownSecrets deletes the secret of each known run whose pod is gone
// and whose lock is free: a launcher killed between creating the secret
// and cleaning up leaves it behind. A held lock means a live launcher
// that will remove the secret itself. A needed secret (a recovery on a
// network volume left under way) is left, and so is every secret while a
// listed pod's name cannot be read (it may be that run's pod): each is
// said.
func (a *app) rmKnownSecrets(ctx context.Context, known, needed map[string]bool) (int, error) {
	// The sweep left the known runs out: their pods and secrets are
	// listed again here.
	pods, err := a.api.ListPods(ctx, runpod.ListPodsOptions{NamePrefix: podenv.PodNamePrefix, SkipArgs: true})
	if err != nil {
		return 0, fmt.Errorf("listing pods: %w", err)
	}
	secrets, err := a.api.ListSecrets(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing secrets: %w", err)
	}
	// A pod still holding its run's name keeps its secret (a pod that
	// restarts reads it again); a terminated pod does not. A pod whose
	// name could not be read may be any run's.
	podOf := map[string]bool{}
	var unnamed *runpod.PodReadError
	for _, p := range pods {
		if id, ok := podenv.RunIDOfPod(p.Name); ok && p.Status != runpod.StatusTerminated {
			podOf[id] = true
		}
		if p.Unreadable != nil && p.Name == "" && p.Status != runpod.StatusTerminated {
			unnamed = p.Unreadable
		}
	}
	var errs []error
	n := 0
	for _, s := range secrets {
		id, ok := podenv.RunIDOfSecret(s.Name)
		if !ok || !known[id] || podOf[id] {
			continue
		}
		if unnamed != nil {
			a.say("secret %s of run %s left: a listed pod whose name could not be read may be its run's (%s)", dash(s.Name), id, dash(unnamed.Error()))
			n++
			continue
		}
		if needed[id] {
			a.say("secret %s of run %s left: a recovery on its network volume stands, which needs it (\"launch attach %s\" finishes it, \"launch rm %s\" removes it)",
				dash(s.Name), id, id, id)
			n++
			continue
		}
		lock, err := a.store.TryLock(id)
		if err != nil {
			continue
		}
		err = a.api.DeleteSecret(ctx, s.ID)
		lock.Unlock()
		n++
		if err != nil && !errors.Is(err, runpod.ErrNotFound) {
			a.say("could not delete secret %s of run %s (its pod is gone): %v", dash(s.Name), id, err)
			errs = append(errs, err)
			continue
		}
		a.say("secret %s of run %s deleted (its pod is gone)", dash(s.Name), id)
	}
	return n, errors.Join(errs...)
}
