package launcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/sweep"
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
	if a.inOtherProcess(r) {
		return nil, fmt.Errorf("run %s runs in the in-process emulator of the launcher that started it, which no other launcher can reach: "+
			"see it in that launcher's terminal (Ctrl-C there collects and deletes); runs started while \"launch local-server\" runs "+
			"can be seen with logs, ssh, stop and attach from other terminals", id)
	}
	if a.emulatorGone(r) {
		return nil, fmt.Errorf("run %s lived in a local emulator that has ended (an in-process one ends with its launcher, a local-server with its Ctrl-C), "+
			"and its pod with it: \"launch rm %s\" clears it; runs started while \"launch local-server\" runs can be attached", id, id)
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
	lock, err := a.lockRun(id, name)
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
	// command names others; needed only by a job not started yet, or
	// started again on a new pod by a recovery (--recover).
	src, err := ff.secretSources()
	if err != nil {
		return err
	}
	if len(src) == 0 {
		src = r.SecretSources()
	}
	var secrets map[string]string
	if (r.JobStarted.IsZero() || r.Recovery.Times > r.Recovery.Made) && !stop {
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

// lockRun takes run id's lock for the command verb; a run that another
// launcher follows is refused saying what works instead (a followedError).
func (a *app) lockRun(id, verb string) (*state.Lock, error) {
	lock, err := a.store.TryLock(id)
	if errors.Is(err, state.ErrBusy) {
		return nil, followedError{id: id, verb: verb}
	}
	return lock, err
}

// followedError is state.ErrBusy in words: what to do about it.
type followedError struct{ id, verb string }

func (e followedError) Error() string {
	return fmt.Sprintf("another launcher is following run %s (run or attach, in another terminal): "+
		"launch stop %s asks its job to checkpoint alongside it; to %s it here, end that launcher first (Ctrl-C detaches it)",
		e.id, e.id, e.verb)
}

func (e followedError) Unwrap() error { return state.ErrBusy }

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
	fs := a.newFlags("ls", "", `Lists this machine's runs with their pods (status, age, the worst case
planned before the create (the most the run may cost while its watchdog or
its launcher works; a bill above it is flagged, to be reported), estimated cost
(price x time; for a stopped pod with a pod volume, such as a kept pod its
watchdog stopped, its storage by the month), what Runpod billed once the pods are gone, the last watchdog
verdict seen, the rule by which the watchdog was seen deleting the pod,
explained below the table, or for a gone pod of a run left to its
watchdog the rules due by then, marked "?"), and the account's overbrainer pods that no local
run knows (orphans: "launch rm --all-orphans" removes them).`)
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
	if podsErr == nil {
		a.readBills(ctx, runs)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tPHASE\tPOD\tSTATUS\tAGE\tWORST CASE\tESTIMATED\tBILLED\tVERDICT\tDELETE REASON")
	var overBound []string
	var settling, anyDue bool
	var reasons []watchdog.DeleteReason
	for _, r := range runs {
		pod, live := byName[r.PodName]
		delete(byName, r.PodName)
		status, age, cost := "-", "-", "-"
		if !r.Created.IsZero() {
			age = since(now.Sub(r.Created))
		}
		switch {
		case a.inOtherProcess(r):
			// Its pod is in the emulator of the launcher that follows it.
			status = "in-process"
		case live && r.Keep && stoppedStorage(pod, r.PodVolumeGB) != "":
			// A kept pod its watchdog stopped: its pod volume bills on.
			status, cost = dash(statusText(pod.Status)), stoppedStorage(pod, r.PodVolumeGB)
		case live:
			status = dash(statusText(pod.Status))
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
		billed, more := billedText(r.Record, a.emulatorGone(r))
		settling = settling || more
		end := podEnd{rule: r.DeleteReason}
		if status == "gone" {
			end = endOf(r, cmp.Or(r.Ended, now))
		}
		worst, over := worstText(r.Record)
		if over != "" {
			billed += " (!)"
			overBound = append(overBound, over)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Phase, podID, status, age, worst, cost, billed, dash(r.Verdict), end.column())
		for _, reason := range append([]watchdog.DeleteReason{end.rule}, end.due...) {
			if reason != "" && !slices.Contains(reasons, reason) {
				reasons = append(reasons, reason)
			}
		}
		anyDue = anyDue || len(end.due) > 0
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
		// The pod's env says whether it is kept (only rm RUN deletes it):
		// read by podenv's reader, as the sweeper reads it.
		phase := "orphan"
		if env, err := podenv.Parse(p.Env); err != nil {
			phase = "orphan?" // an env no rule can read: the sweeper leaves it too
		} else if env.Keep {
			phase = "orphan,kept"
		}
		name, ok := podenv.RunIDOfPod(p.Name)
		if !ok {
			name = p.Name
		}
		cost := cmp.Or(stoppedStorage(p, 0), money(p.CostPerHr)+"/h")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(name), phase, dash(p.ID), dash(statusText(p.Status)), age, "-", cost, "-", "-", "-")
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
	for _, o := range overBound {
		if _, err := fmt.Fprintln(a.stdout, o); err != nil {
			return err
		}
	}
	if settling {
		if _, err := fmt.Fprintln(a.stdout, billNote); err != nil {
			return err
		}
	}
	if anyDue {
		if _, err := fmt.Fprintln(a.stdout, dueNote); err != nil {
			return err
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

// stoppedStorage is what a pod that no longer runs but keeps a pod volume
// (its own mounts say its size, else gb) costs a month, "" for any other
// pod: a kept pod stopped by its watchdog stays until rm.
func stoppedStorage(pod runpod.Pod, gb int) string {
	if !guard.Abandoned(pod.Status) {
		return ""
	}
	if m := pod.Mounts.Persistent; m != nil && m.SizeGB > 0 {
		gb = m.SizeGB
	}
	if gb <= 0 {
		return ""
	}
	return "~" + money(storageMonthly(gb)) + "/month (storage, est.)"
}

// dash is s, escaped (a pod wrote it), or "-" for nothing.
func dash(s string) string { return cmp.Or(termtext.Escape(s, false), "-") }

func cmdRm(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("rm", "RUN... | --all-orphans", `Deletes a run's pod (delete, then terminate, then stop as a last resort,
saying plainly when only a stop worked and the volume still bills) and its
host key secret. The run's local state and downloaded results stay. A run
whose job was started and whose results were not collected is refused
unless --force: use stop or attach. --all-orphans deletes, by the rules and
graces of "launch sweep", the overbrainer pods and secrets of runs that this
machine's state does not know (a kept pod, one that may be another
machine's live run and one it cannot judge are listed and left), and the
secret of a known run whose pod is gone and whose launcher is no longer
running (one killed before it cleaned up).`)
	orphans := fs.Bool("all-orphans", false, "delete the abandoned overbrainer pods and the secrets that no local run knows")
	force := fs.Bool("force", false, "delete a run's pod even when its results were not collected (they are lost)")
	var policy sweep.Policy
	policyFlags(fs, &policy)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := policy.Validate(); err != nil {
		return usagef("%v", err)
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
		return a.rmOrphans(ctx, policy)
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
	r, err := a.store.Load(id)
	if err == nil && !a.emulatorGone(r) {
		r, err = a.loadRun(id)
	}
	if err != nil {
		return err
	}
	lock, err := a.lockRun(id, "rm")
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if a.emulatorGone(r) {
		// Its pod and secret ended with their emulator: nothing to delete.
		r.Phase, r.Note = state.PhaseRemoved, "its local emulator ended"
		if err := a.store.Save(r); err != nil {
			return err
		}
		a.say("run %s: its local emulator has ended, and its pod with it: removed", id)
		return nil
	}
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
	rec, res, err := guard.Remove(ctx, a.api, r.Record, force, a.rmEvents(r.ID), guard.WithLogger(a.logger))
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
