package launcher

import (
	"context"
	"fmt"
	"os"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podssh"
)

func cmdSSH(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("ssh", "RUN [-- COMMAND [ARG...]]", `Opens a shell on the run's pod (host key pinned) on a terminal that follows
this one's size, or runs COMMAND, each word as it is, and exits with its
status. It starts in the run directory with the job's variables
($OVERBRAINER_RUN_DIR, $OVERBRAINER_OUTPUTS, the pod's environment), never
its secrets. Prints the ssh -F line of the OpenSSH files it writes in the
state.`)
	if err := parse(fs, args); err != nil {
		return err
	}
	// The command's words come after "--", flags or not.
	if at := fs.ArgsLenAtDash(); at > 1 || (at < 0 && fs.NArg() > 1) {
		return usagef("one run id, then the command after --")
	}
	r, err := a.openRun(ctx, fs, false)
	if err != nil {
		return err
	}
	run, err := guard.Attach(ctx, a.api, r.Record, guard.WithLeaveOnFailure(), guard.WithStartTimeout(time.Minute), guard.WithLogger(a.logger))
	if err != nil {
		return err
	}
	defer run.Close()
	cfg, err := run.WriteSSHConfig(ctx, a.store.RunPath(r.ID))
	if err != nil {
		return err
	}
	a.say("with OpenSSH: %s", cfg.Command)
	words := fs.Args()[1:]
	o := podssh.ShellOptions{Command: podssh.JoinArgs(words), Stdin: os.Stdin, Stdout: a.stdout, Stderr: a.stderr}
	if len(words) == 0 {
		if restore, err := podssh.AttachTerminal(os.Stdin, &o); err == nil {
			defer restore()
		}
	}
	err = run.Shell(ctx, o)
	if code, ok := podssh.ExitStatus(err); ok {
		return &exitError{code: code}
	}
	return err
}

// openRun loads the run fs names first (and only, when only), not ended.
func (a *app) openRun(ctx context.Context, fs *flag.FlagSet, only bool) (*state.Run, error) {
	if fs.NArg() == 0 || (only && fs.NArg() > 1) {
		return nil, usagef("one run id is needed, first")
	}
	if err := a.open(ctx); err != nil {
		return nil, err
	}
	r, err := a.loadRun(fs.Arg(0))
	if err == nil && !r.Ended.IsZero() {
		err = fmt.Errorf("run %s has ended (%s): its pod is gone", r.ID, r.Phase)
	}
	return r, err
}

func cmdCancel(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("cancel", "RUN", `Stops the run's job at once, with no checkpoint (TERM to its group, KILL 2 s
later), collects what there is, deletes the pod (unless --keep-pod).`)
	if err := parse(fs, args); err != nil {
		return err
	}
	r, err := a.openRun(ctx, fs, true)
	if err != nil {
		return err
	}
	lock, err := a.lockRun(r.ID, "cancel")
	if err != nil {
		return err
	}
	defer lock.Unlock()
	d := &driver{a: a, r: r, o: followOpts{followFlags: followFlags{startTimeout: 2 * time.Minute, verdictTimeout: 2 * time.Minute}}}
	defer d.closePodLog()
	run, err := guard.Attach(ctx, a.api, r.Record, d.options()...)
	if d.run = run; err != nil {
		return d.stopped(ctx, err)
	}
	defer run.Close()
	res, err := run.Cancel(ctx)
	if err != nil {
		return d.stopped(ctx, err)
	}
	a.say("%s", cancelText(res))
	// A job that ended by itself gives its status; a stopped one, or none, is no failure.
	if err := d.end(ctx, run.End()); err != nil && (res == guard.CancelEnded || d.failed != nil) {
		return err
	}
	return nil
}

// cancelText says what a cancel found and did.
func cancelText(r guard.CancelResult) string {
	switch r {
	case guard.CancelStopped:
		return "job cancelled: its process group was stopped, without a checkpoint"
	case guard.CancelEnded:
		return "the job had ended already: nothing to stop"
	case guard.CancelNoJob:
		return "no job was started: nothing to stop"
	}
	return "cancel: " + string(r)
}
