package launcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// localEmulator is the --local Runpod: a runpodtest server with its pod
// runner, either in this process (it ends with it) or a local-server in
// another one.
type localEmulator struct {
	srv          *runpodtest.Server // nil for a local-server
	key, baseURL string
	shared       bool
}

// checkLocal says what stops the pod runner from running pods here, and
// installs missing tools when it can (root with apt-get): a fresh Debian
// machine then runs the quick start as it is.
func (a *app) checkLocal() error {
	if err := localpod.EnsureTools(a.say, a.stderr); err != nil {
		return fmt.Errorf("--local: %w", err)
	}
	return nil
}

// startLocal finds a running local-server or starts an emulator in this
// process.
func (a *app) startLocal(context.Context) (*localEmulator, error) {
	if info, ok := runpodtest.FindShared(a.store.Dir); ok {
		a.say("using the local-server at %s (pid %d)", info.URL, info.PID)
		a.local = &localEmulator{key: info.Key, baseURL: info.BaseURL(), shared: true}
		return a.local, nil
	}
	if err := a.checkLocal(); err != nil {
		return nil, err
	}
	opts, err := localOptions(a)
	if err != nil {
		return nil, err
	}
	srv := runpodtest.NewServer(opts...)
	a.local = &localEmulator{srv: srv, key: srv.APIKey(), baseURL: srv.BaseURL()}
	return a.local, nil
}

// close ends an in-process emulator: its pods end with it.
func (l *localEmulator) close(a *app) {
	if l.srv == nil {
		return
	}
	if n := len(l.srv.Billing()); n > 0 {
		a.say("the local emulator ends with this launcher: its %s terminated now", termtext.Count(int64(n), "pod is", "pods are"))
	}
	l.srv.Close()
}

// inProcess says the pods die with this process: detaching is impossible.
func (a *app) inProcess() bool { return a.local != nil && !a.local.shared }

// emulatorGone says run r lived in a local emulator that has ended (an
// in-process one, or a local-server since stopped): this launcher talks to
// another. The run's pod ended with it, and nothing more of it is billed.
func (a *app) emulatorGone(r *state.Run) bool {
	return a.otherEmulator(r) && !a.followed(r.ID)
}

// inOtherProcess says run r lives in the in-process emulator of the
// launcher that follows it: up, and out of this launcher's reach.
func (a *app) inOtherProcess(r *state.Run) bool {
	return a.otherEmulator(r) && a.followed(r.ID)
}

// otherEmulator says run r was made in a local emulator other than the
// one this launcher talks to.
func (a *app) otherEmulator(r *state.Run) bool {
	return r.Local && a.local != nil && r.APIURL != "" && r.APIURL != a.apiURL
}

// followed says a launcher holds run id's lock: it follows the run (and
// an in-process emulator lives as long as that launcher).
func (a *app) followed(id string) bool {
	lock, err := a.store.TryLock(id)
	if err != nil {
		return errors.Is(err, state.ErrBusy)
	}
	lock.Unlock()
	return false
}

func cmdLocalServer(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("local-server", "", `Keeps a local Runpod emulator (with its pod runner) running in the
foreground, so that "launch --local" commands in other terminals share it:
a run can then be detached with Ctrl-C and resumed with attach. Ctrl-C here
terminates every pod of the emulator.

--lose-after D loses each run's first pod D after it runs, as Runpod may
(its host fails: EXITED, its disk gone; or --lose-by restart: its
container restarts for maintenance), so that "run --recover" can be tried
here.`)
	loseAfter := fs.Duration("lose-after", 0, "lose each run's first pod this long after it runs (0: never), to try --recover")
	loseBy := fs.String("lose-by", "host", "how --lose-after loses a pod: host (its machine fails) or restart (its container restarts)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("local-server takes no arguments")
	}
	if *loseAfter < 0 || (*loseBy != "host" && *loseBy != "restart") {
		return usagef("--lose-after cannot be negative, and --lose-by is host or restart")
	}
	a.g.local = true
	if err := a.openStore(); err != nil {
		return err
	}
	if info, ok := runpodtest.FindShared(a.store.Dir); ok {
		return fmt.Errorf("a local-server is already running at %s (pid %d)", info.URL, info.PID)
	}
	if err := a.checkLocal(); err != nil {
		return err
	}
	opts, err := localOptions(a)
	if err != nil {
		return err
	}
	srv := runpodtest.NewServer(opts...)
	defer srv.Close()
	a.say("local Runpod emulator at %s; state in %s", srv.URL, a.store.Dir)
	a.say("run \"launch --local run\" in another terminal; Ctrl-C here ends the emulator and its pods")
	if *loseAfter > 0 {
		a.say("each run's first pod is lost %s after it runs (--lose-after, by %s)", *loseAfter, *loseBy)
		go a.losePods(ctx, srv, *loseAfter, *loseBy == "restart")
	}
	if err := runpodtest.ServeShared(ctx, a.store.Dir, srv); err != nil {
		return err
	}
	if n := len(srv.Billing()); n > 0 {
		a.say("terminating %s", termtext.Count(int64(n), "pod", "pods"))
	}
	return nil
}

// localOptions configure a local emulator: pods run, the launcher's state
// is hidden from them, and the default image has the ENTRYPOINT and CMD
// of Runpod's (NVIDIA's entrypoint, Runpod's /start.sh), as on Runpod.
// $OVERBRAINER_LOCAL_DRIFT makes it differ from Runpod's text the ways
// the live API may (runpodtest.ParseDrift), for tests of launch doctor.
func localOptions(a *app) ([]runpodtest.Option, error) {
	drift, err := runpodtest.ParseDrift(a.getenv(EnvLocalDrift))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvLocalDrift, err)
	}
	return []runpodtest.Option{
		runpodtest.WithPodRunner(), runpodtest.WithHiddenDirs(a.store.Dir),
		runpodtest.WithImage(guard.DefaultImage, localpod.RunpodPyTorchImage()),
		runpodtest.WithDrift(drift),
	}, nil
}

// EnvLocalDrift makes the local emulator differ from Runpod's text (see
// localOptions).
const EnvLocalDrift = "OVERBRAINER_LOCAL_DRIFT"

// losePods loses each run's first pod (the first of its name) after it
// has run for after: its host fails, or its container restarts.
func (a *app) losePods(ctx context.Context, srv *runpodtest.Server, after time.Duration, restart bool) {
	lost := map[string]bool{}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, p := range srv.Pods() {
			if lost[p.Name] || p.Status != runpodtest.StatusRunning || srv.Now().Sub(p.StartedAt) < after {
				continue
			}
			lost[p.Name] = true
			how, err := "its host failed", error(nil)
			if restart {
				how, err = "its container restarted", srv.RestartForMaintenance(p.ID)
			} else {
				err = srv.FailHost(p.ID)
			}
			if err != nil {
				a.say("--lose-after: pod %s: %v", p.ID, err)
				continue
			}
			a.say("lost pod %s (%s) on purpose: %s (--lose-after)", p.ID, p.Name, how)
		}
	}
}
