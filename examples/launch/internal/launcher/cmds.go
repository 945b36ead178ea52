package launcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// deletePod deletes the run's pod with the client's fallbacks and says
// plainly how far it got.
func (a *app) deletePod(ctx context.Context, r *state.Run) runpod.DeleteResult {
	if r.PodID == "" {
		return runpod.Deleted
	}
	res, err := a.api.DeletePod(ctx, r.PodID)
	switch res {
	case runpod.Deleted:
		a.say("pod %s deleted", r.PodID)
	case runpod.Terminated:
		a.say("pod %s terminated (the delete call failed, the terminate action worked)", r.PodID)
	case runpod.Stopped:
		a.say("pod %s could only be STOPPED, not deleted: it no longer runs, but its volume STILL BILLS. "+
			"Remove it with \"launch rm %s\" or in the Runpod console (Pods, then Terminate). %v", r.PodID, r.ID, err)
	default:
		a.say("pod %s could NOT be deleted: %v. It still bills until its watchdog deletes it; retry with \"launch rm %s\"", r.PodID, err, r.ID)
	}
	return res
}

// deleteSecret deletes the run's host key secret, found by name when its id
// is unknown.
func (a *app) deleteSecret(ctx context.Context, r *state.Run) {
	id := r.SecretID
	if id == "" {
		s, err := a.api.FindSecret(ctx, r.SecretName)
		if errors.Is(err, runpod.ErrNotFound) {
			return
		}
		if err != nil {
			a.say("looking for secret %s: %v", r.SecretName, err)
			return
		}
		id = s.ID
	}
	if err := a.api.DeleteSecret(ctx, id); err != nil && !errors.Is(err, runpod.ErrNotFound) {
		a.say("could not delete secret %s: %v; retry with \"launch rm %s\"", r.SecretName, err, r.ID)
		return
	}
	r.SecretID = ""
	a.say("secret %s deleted", r.SecretName)
}

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

var errNoPodYet = errors.New("the run has no pod")

// findPod makes sure the run knows its pod's id, looking it up by name.
func (a *app) findPod(ctx context.Context, r *state.Run) error {
	if r.PodID != "" {
		return nil
	}
	pods, err := a.api.ListPods(ctx, runpod.ListPodsOptions{Name: r.PodName})
	if err != nil {
		return fmt.Errorf("looking for pod %s: %w", r.PodName, err)
	}
	if len(pods) == 0 {
		return errNoPodYet
	}
	p := pods[len(pods)-1]
	r.PodID = p.ID
	if r.BillingStart.IsZero() {
		// The launcher died between the create call and saving its
		// answer: the pod's own creation time is the best there is.
		r.BillingStart = p.CreatedAt
		if r.BillingStart.IsZero() {
			r.BillingStart = r.Created
		}
	}
	return a.store.Save(r)
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
	if stop {
		fs.DurationVar(&wait, "wait", wait, "how long to wait for the job to checkpoint and end before collecting anyway")
	}
	if err := fs.Parse(args); err != nil {
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
	if err := a.findPod(ctx, r); errors.Is(err, errNoPodYet) {
		a.say("run %s has no pod (it never got one, or it is gone): cleaning up", id)
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a.deleteSecret(cctx, r)
		r.Phase = state.PhaseFailed
		return a.store.Save(r)
	} else if err != nil {
		return err
	}
	if ff.hfTokenEnv == "" {
		ff.hfTokenEnv = r.HFTokenEnv
	}
	token := ""
	if ff.hfTokenEnv != "" {
		token = a.getenv(ff.hfTokenEnv)
	}
	a.say("%s run %s: pod %s", name, id, r.PodID)
	return a.follow(ctx, r, followOpts{followFlags: ff, hfToken: token, stop: stop, stopWait: wait})
}

// stopFollowed asks the job of a run that another launcher follows for a
// checkpoint.
func (a *app) stopFollowed(ctx context.Context, r *state.Run) error {
	if r.PodID == "" {
		return fmt.Errorf("run %s has no pod yet", r.ID)
	}
	d := &driver{a: a, r: r, exitCode: -1, o: followOpts{followFlags: followFlags{startTimeout: time.Minute}}}
	defer d.dropConn()
	if err := d.connect(ctx); err != nil {
		return err
	}
	st, _, err := d.poll(ctx, false)
	if err != nil {
		return err
	}
	if !st.Started() || st.Ended() {
		return fmt.Errorf("run %s has no running job: the launcher following it finishes it", r.ID)
	}
	if err := d.requestStop(ctx, st); err != nil {
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
	if err := fs.Parse(args); err != nil {
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
	var reasons []string
	for _, r := range runs {
		pod, live := byName[r.PodName]
		delete(byName, r.PodName)
		status, age, cost := "-", "-", "-"
		if !r.Created.IsZero() {
			age = since(now.Sub(r.Created))
		}
		switch {
		case live:
			status = string(pod.Status)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Phase, podID, status, age, cost, dash(r.Verdict), dash(r.DeleteReason))
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s/h\t%s\t%s\n", strings.TrimPrefix(p.Name, PodNamePrefix), "orphan", p.ID, p.Status, age, money(p.CostPerHr), "-", "-")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The reasons in words, once each.
	sort.Strings(reasons)
	for _, reason := range reasons {
		if _, err := fmt.Fprintf(a.stdout, "%s: %s\n", reason, shortDelete(reason)); err != nil {
			return err
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdRm(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("rm", "RUN... | --all-orphans", `Deletes a run's pod (delete, then terminate, then stop as a last resort,
saying plainly when only a stop worked and the volume still bills) and its
host key secret. The run's local state and downloaded results stay.
--all-orphans deletes the overbrainer pods and secrets of runs that this
machine's state does not know (runs of other machines included: look at
"launch ls" first), and the secret of a known run whose pod is gone and
whose launcher is no longer running (one killed before it cleaned up).`)
	orphans := fs.Bool("all-orphans", false, "delete every overbrainer pod and secret that no local run knows")
	if err := fs.Parse(args); err != nil {
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
		if err := a.rmRun(ctx, id); err != nil {
			a.say("rm %s: %v", id, err)
			failed = true
		}
	}
	if failed {
		return &exitError{code: ExitFailed}
	}
	return nil
}

func (a *app) rmRun(ctx context.Context, id string) error {
	r, err := a.loadRun(id)
	if err != nil {
		return err
	}
	lock, err := a.store.TryLock(id)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if err := a.findPod(ctx, r); err != nil && !errors.Is(err, errNoPodYet) {
		return err
	}
	res := a.deletePod(ctx, r)
	a.deleteSecret(ctx, r)
	switch res {
	case runpod.Deleted, runpod.Terminated:
		if r.Phase != state.PhaseDone {
			r.Phase = state.PhaseRemoved
		}
		if r.Ended.IsZero() && !r.BillingStart.IsZero() {
			r.Ended = time.Now()
			r.CostUSD = costplan.Spent(r.CostPerHr, r.BillingStart, r.Ended)
		}
	case runpod.Stopped:
		r.Phase = state.PhaseStopped
	default:
		if err := a.store.Save(r); err != nil {
			return err
		}
		return fmt.Errorf("pod %s was not deleted", r.PodID)
	}
	if err := a.store.Save(r); err != nil {
		return err
	}
	if res == runpod.Stopped {
		return fmt.Errorf("pod %s was only stopped: its volume still bills", r.PodID)
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
		res := a.deletePod(ctx, &state.Run{ID: id, PodID: p.ID})
		failed = failed || res.StillBilling()
	}
	// A known run's pod still holding its name keeps its secret (a pod
	// that restarts reads it again); a terminated pod does not.
	podOf := map[string]bool{}
	for _, p := range pods {
		if p.Status != runpod.StatusTerminated {
			podOf[strings.TrimPrefix(p.Name, PodNamePrefix)] = true
		}
	}
	for _, s := range secrets {
		id, ok := strings.CutPrefix(s.Name, secretPrefix)
		if !ok {
			continue
		}
		if known[id] {
			// A launcher killed between creating the secret and cleaning
			// up leaves it behind: the run is known, its pod is gone and
			// no launcher holds its lock. A held lock means a live
			// launcher that will remove the secret itself.
			if podOf[id] {
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
