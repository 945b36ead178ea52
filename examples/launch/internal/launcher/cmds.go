package launcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// loadRun reads a run for attach, stop and rm, and checks that this
// launcher talks to the API the run's pod lives at.
func (a *app) loadRun(id string) (*state.Run, error) {
	r, err := a.store.Load(id)
	if err != nil {
		return nil, err
	}
	if r.Local && a.local == nil {
		return nil, fmt.Errorf("run %s lives in the local emulator: use --local", id)
	}
	if r.Local && a.inProcess() {
		return nil, fmt.Errorf("run %s lived in an in-process local emulator, which ended with its launcher (its pod is gone); "+
			"runs started while \"launch local-server\" runs can be attached", id)
	}
	if !r.Local && r.APIURL != "" && r.APIURL != a.apiURL {
		return nil, fmt.Errorf("run %s was created at %s, but this launcher talks to %s", id, r.APIURL, a.apiURL)
	}
	return r, nil
}

// resume is attach and stop: find the run's pod again and follow it.
func (a *app) resume(ctx context.Context, name string, args []string, stop bool) error {
	var ff followFlags
	wait := 30 * time.Minute
	about := `Finds the run's pod again (by its name, overbrainer-RUN), reconnects with
the run's saved key and pinned host key, and resumes where the run was: it
starts the job if it never started, then follows its output from where it
stopped, renewing the lease, and collects and deletes as run does.`
	if stop {
		about = `Asks the run's job for a checkpoint (snapshot.request, reason stop), waits
for it to end (at most --wait), then collects the results and deletes the
pod and the secret.`
	}
	fs := a.newFlags(name, "RUN", about)
	ff.register(fs)
	maxGB := fs.Float64("max-results-gb", 0, "a new cap on the download of the results, in GB (0: the run's)")
	if stop {
		fs.DurationVar(&wait, "wait", wait, "how long to wait for the job to checkpoint and end before collecting anyway")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("%s takes one run id", name)
	}
	if err := ff.check(); err != nil {
		return err
	}
	id := fs.Arg(0)
	if err := state.CheckID(id); err != nil {
		return usagef("%v", err)
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	r, err := a.loadRun(id)
	if err != nil {
		return err
	}
	lock, err := a.store.TryLock(id)
	if stop && errors.Is(err, state.ErrBusy) {
		// run or attach follows it in another terminal: the stop request
		// is enough, that launcher collects.
		return a.stopFollowed(ctx, r)
	}
	if err != nil {
		return err
	}
	defer lock.Unlock()
	switch r.Phase {
	case state.PhaseDone, state.PhaseRemoved, state.PhaseFailed:
		if r.PodID == "" || r.Phase != state.PhaseFailed {
			return fmt.Errorf("run %s is %s: nothing to %s", id, r.Phase, name)
		}
	}
	r.Results.MaxGB = cmp.Or(max(*maxGB, 0), r.Results.MaxGB)
	// The job's secrets, from the variables its run named unless this
	// command names others; needed only by a job not started yet.
	src, err := ff.secretSources()
	if err != nil {
		return err
	}
	if len(src) == 0 {
		src = r.SecretSources()
	}
	var secrets map[string]string
	if r.JobStarted.IsZero() && !stop {
		if secrets, err = a.secretValues(src); err != nil {
			return err
		}
	}
	if r.PodID != "" {
		a.say("%s run %s: pod %s", name, id, r.PodID)
	}
	err = a.attach(ctx, r, followOpts{followFlags: ff, secrets: secrets, stop: stop, stopWait: wait})
	if errors.Is(err, guard.ErrNoPod) {
		a.say("run %s has no pod (it never got one, or it is gone): cleaning up", id)
		if err := a.remove(ctx, r, true); err != nil {
			return err
		}
		r.Phase = state.PhaseFailed
		return a.store.Save(r)
	}
	return err
}

// stopFollowed asks the job of a run that another launcher follows for a
// checkpoint. It saves nothing: the run's state is that launcher's.
func (a *app) stopFollowed(ctx context.Context, r *state.Run) error {
	if r.PodID == "" {
		return fmt.Errorf("run %s has no pod yet", r.ID)
	}
	d := &driver{a: a, r: r, o: followOpts{followFlags: followFlags{startTimeout: time.Minute, verdictTimeout: time.Minute, onFailure: "leave"}}}
	run, err := guard.Attach(ctx, a.api, r.Record, guard.WithEvents(d.event), guard.WithLeaveOnFailure(),
		guard.WithStartTimeout(time.Minute), guard.WithLogger(a.logger))
	if err != nil {
		return err
	}
	defer run.Close()
	d.run = run
	if st := run.State(); !st.Started() || st.Ended() {
		return fmt.Errorf("run %s has no running job: the launcher following it finishes it", r.ID)
	}
	if err := d.requestStop(ctx); err != nil {
		return err
	}
	a.say("another launcher follows run %s: it collects the results once the job has checkpointed", r.ID)
	return nil
}

func cmdAttach(ctx context.Context, a *app, args []string) error {
	return a.resume(ctx, "attach", args, false)
}

func cmdStop(ctx context.Context, a *app, args []string) error {
	return a.resume(ctx, "stop", args, true)
}

func cmdLs(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("ls", "", `Lists this machine's runs with their pods (status, age, cost so far, the
last watchdog verdict seen, the rule by which the watchdog was seen deleting
the pod, explained below the table), and the account's overbrainer pods that
no local run knows (orphans: "launch rm --all-orphans" removes them).`)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("ls takes no arguments")
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	runs, err := a.store.List()
	if err != nil {
		return err
	}
	pods, podsErr := a.api.ListPods(ctx, runpod.ListPodsOptions{NamePrefix: PodNamePrefix})
	if podsErr != nil {
		a.say("listing pods: %v (showing the local state only)", podsErr)
	}
	byName := map[string]runpod.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tPHASE\tPOD\tSTATUS\tAGE\tCOST\tVERDICT\tDELETE REASON")
	var reasons []watchdog.DeleteReason
	for _, r := range runs {
		pod, live := byName[r.PodName]
		delete(byName, r.PodName)
		status, age, cost := "-", "-", "-"
		if !r.Created.IsZero() {
			age = since(now.Sub(r.Created))
		}
		switch {
		case live:
			status = guard.StatusText(pod.Status)
			perHr := pod.CostPerHr
			if perHr == 0 {
				perHr = r.CostPerHr
			}
			cost = "~" + money(costplan.Spent(perHr, r.BillingStart, now))
		case r.CostUSD > 0:
			status = "gone"
			cost = "~" + money(r.CostUSD)
		case podsErr == nil && r.PodID != "":
			status = "gone"
		}
		podID := r.PodID
		if podID == "" {
			podID = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Phase, podID, status, age, cost, dash(r.Verdict), dash(string(r.DeleteReason)))
		if r.DeleteReason != "" && !slices.Contains(reasons, r.DeleteReason) {
			reasons = append(reasons, r.DeleteReason)
		}
	}
	orphans := make([]runpod.Pod, 0, len(byName))
	for _, p := range byName {
		orphans = append(orphans, p)
	}
	sort.Slice(orphans, func(i, j int) bool { return orphans[i].CreatedAt.Before(orphans[j].CreatedAt) })
	for _, p := range orphans {
		age := "-"
		if !p.CreatedAt.IsZero() {
			age = since(now.Sub(p.CreatedAt))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s/h\t%s\t%s\n", dash(strings.TrimPrefix(p.Name, PodNamePrefix)), "orphan", dash(p.ID), guard.StatusText(p.Status), age, money(p.CostPerHr), "-", "-")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Why the failed runs failed, then the reasons in words, once each.
	for _, r := range runs {
		if r.Phase == state.PhaseFailed && r.Note != "" {
			if _, err := fmt.Fprintf(a.stdout, "%s failed: %s\n", r.ID, termtext.Escape(r.Note, false)); err != nil {
				return err
			}
		}
	}
	slices.Sort(reasons)
	for _, reason := range reasons {
		if _, err := fmt.Fprintf(a.stdout, "%s: %s\n", reason, reason.Summary()); err != nil {
			return err
		}
	}
	return nil
}

// dash is s, escaped (a pod wrote it), or "-" for nothing.
func dash(s string) string { return cmp.Or(termtext.Escape(s, false), "-") }

func cmdRm(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("rm", "RUN... | --all-orphans", `Deletes a run's pod (delete, then terminate, then stop as a last resort,
saying plainly when only a stop worked and the volume still bills) and its
host key secret. The run's local state and downloaded results stay. A run
whose job was started and whose results were not collected is refused
unless --force: use stop or attach. --all-orphans deletes the overbrainer
pods of runs that this machine's state does not know only when they are
provably abandoned (EXITED or ERROR; the others are listed), the secrets
of runs without a pod, and the secret of a known run whose pod is gone and
whose launcher is no longer running (one killed before it cleaned up).`)
	orphans := fs.Bool("all-orphans", false, "delete the abandoned overbrainer pods and the secrets that no local run knows")
	force := fs.Bool("force", false, "delete a run's pod even when its results were not collected (they are lost)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *orphans == (fs.NArg() > 0) {
		return usagef("rm takes run ids, or --all-orphans")
	}
	for _, id := range fs.Args() {
		if err := state.CheckID(id); err != nil {
			return usagef("%v", err)
		}
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	if *orphans {
		return a.rmOrphans(ctx)
	}
	failed := false
	for _, id := range fs.Args() {
		if err := a.rmRun(ctx, id, *force); err != nil {
			a.say("rm %s: %v", id, err)
			failed = true
		}
	}
	if failed {
		return &exitError{code: ExitFailed}
	}
	return nil
}

func (a *app) rmRun(ctx context.Context, id string, force bool) error {
	r, err := a.loadRun(id)
	if err != nil {
		return err
	}
	lock, err := a.store.TryLock(id)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	err = a.remove(ctx, r, force)
	if errors.Is(err, guard.ErrNotCollected) {
		err = fmt.Errorf("%w: use \"launch stop %s\" (checkpoint, collect, delete) or \"launch attach %s\"; --force deletes it with its results", err, id, id)
	}
	return err
}

// rmEvents says what a delete without a follow reports, as a run would.
func (a *app) rmEvents(id string) guard.Option {
	return guard.WithEvents((&driver{a: a, r: &state.Run{Record: guard.Record{ID: id}}}).event)
}

// remove deletes a run's pod and secret without following it.
func (a *app) remove(ctx context.Context, r *state.Run, force bool) error {
	opts := []guard.Option{a.rmEvents(r.ID), guard.WithLogger(a.logger)}
	if force {
		opts = append(opts, guard.WithForce())
	}
	rec, res, err := guard.Remove(ctx, a.api, r.Record, opts...)
	r.Record = rec
	if serr := a.store.Save(r); serr != nil {
		return serr
	}
	switch {
	case res == runpod.Stopped:
		return fmt.Errorf("pod %s was only stopped: its volume still bills", r.PodID)
	case err != nil:
		return err
	}
	return nil
}

// secretPrefix is what every run's host key secret name starts with.
var secretPrefix = podenv.HostKeySecretName("")

func (a *app) rmOrphans(ctx context.Context) error {
	runs, err := a.store.List()
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, r := range runs {
		known[r.ID] = true
	}
	pods, err := a.api.ListPods(ctx, runpod.ListPodsOptions{NamePrefix: PodNamePrefix})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	secrets, err := a.api.ListSecrets(ctx)
	if err != nil {
		return fmt.Errorf("listing secrets: %w", err)
	}
	failed, n := false, 0
	for _, p := range pods {
		id := strings.TrimPrefix(p.Name, PodNamePrefix)
		if known[id] {
			continue
		}
		n++
		a.say("orphan pod %s (%s, %s)", p.ID, p.Name, p.Status)
		res, err := guard.RemoveOrphan(ctx, a.api, p, a.rmEvents(id), guard.WithLogger(a.logger))
		if errors.Is(err, guard.ErrNotAbandoned) {
			a.say("left: %v (look at it with \"launch ls\")", err)
		} else if err != nil || res.StillBilling() {
			failed = true // said by the events, an unconfirmed delete too
		}
	}
	// A pod still holding its run's name keeps its secret (a pod that
	// restarts reads it again; RemoveOrphan deleted those of the
	// abandoned ones); a terminated pod does not.
	podOf := map[string]bool{}
	for _, p := range pods {
		if p.Status != runpod.StatusTerminated {
			podOf[strings.TrimPrefix(p.Name, PodNamePrefix)] = true
		}
	}
	for _, s := range secrets {
		id, ok := strings.CutPrefix(s.Name, secretPrefix)
		if !ok || podOf[id] {
			continue
		}
		if known[id] {
			// A launcher killed between creating the secret and cleaning
			// up leaves it behind: the run is known, its pod is gone and
			// no launcher holds its lock. A held lock means a live
			// launcher that will remove the secret itself.
			lock, err := a.store.TryLock(id)
			if err != nil {
				continue
			}
			err = a.api.DeleteSecret(ctx, s.ID)
			lock.Unlock()
			n++
			if err != nil && !errors.Is(err, runpod.ErrNotFound) {
				a.say("could not delete secret %s of run %s (its pod is gone): %v", s.Name, id, err)
				failed = true
				continue
			}
			a.say("secret %s of run %s deleted (its pod is gone)", s.Name, id)
			continue
		}
		n++
		if err := a.api.DeleteSecret(ctx, s.ID); err != nil && !errors.Is(err, runpod.ErrNotFound) {
			a.say("could not delete orphan secret %s: %v", s.Name, err)
			failed = true
			continue
		}
		a.say("orphan secret %s deleted", s.Name)
	}
	if n == 0 {
		a.say("no orphan pods or secrets")
	}
	if failed {
		return &exitError{code: ExitFailed, msg: "some orphans are left"}
	}
	return nil
}
