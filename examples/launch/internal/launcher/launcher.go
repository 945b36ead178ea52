package launcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	flag "github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Environment variables the launcher reads.
const (
	EnvAPIKey = "RUNPOD_API_KEY"
	EnvAPIURL = podenv.APIURLEnv
)

// Exit statuses.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// userAgent is what the launcher's API calls say they are.
const userAgent = "overbrainer-launch/" + podenv.Version

// usageError is a bad command line: the usage is shown and the exit is 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// app is one invocation of the launcher.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	g              globalFlags

	store *state.Store
	api   *runpod.Client
	// logger is the API client's and guard's: warnings, and with -v every
	// call.
	logger *slog.Logger
	// local is the in-process emulator of --local, nil otherwise; a
	// local-server in another process is reached like Runpod.
	local   *localEmulator
	apiURL  string
	sayMu   sync.Mutex
	liveLen int // length of the progress line on a terminal, to erase it
	tty     bool
	// usageLine is the command's one-line usage, shown with a bad command
	// line.
	usageLine string

	// transport, when set, carries the API client's requests (sweep's
	// metrics count them).
	transport http.RoundTripper
}

type globalFlags struct {
	local    bool
	stateDir string
	apiURL   string
	verbose  bool
}

// register adds the global flags to fs. A command's flag set has them too,
// so they may come after the command name; the values parsed before it are
// the defaults there.
func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&g.local, "local", g.local, "use the local Runpod emulator (the default when "+EnvAPIKey+" is not set); needs root, sshd and curl")
	fs.StringVar(&g.stateDir, "state-dir", g.stateDir, "where runs are kept (default: $"+state.EnvDir+", or overbrainer/launch in the user's config directory)")
	fs.StringVar(&g.apiURL, "api-url", g.apiURL, "Runpod REST v2 base URL (default: $"+EnvAPIURL+" or "+runpod.DefaultBaseURL+")")
	fs.BoolVarP(&g.verbose, "verbose", "v", g.verbose, "log every API call")
}

// Main runs the launcher with the command line args (without the program
// name) and returns its exit status. SIGINT and SIGTERM end the current
// command the way its documentation says (run detaches); a second one exits
// at once.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for range sigs {
			n++
			if n == 1 {
				fmt.Fprintln(stderr, "\nlaunch: interrupted (once more to quit at once)")
				cancel()
				continue
			}
			fmt.Fprintln(stderr, "launch: interrupted twice: quitting now; a pod that exists stays under its watchdog")
			os.Exit(ExitInterrupted)
		}
	}()
	return run(ctx, args, stdout, stderr, os.Getenv)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv, tty: isTerminal(stderr)}
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a.g.register(fs)
	// The global flags stop at the command's name: what follows is the
	// command's, whose own flag set takes the global flags again.
	fs.SetInterspersed(false)
	fs.Usage = func() { a.usage(fs) }
	a.usageLine = "launch [global flags] COMMAND [flags] [args]"
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		a.sayUsage("launch", err.Error())
		return ExitUsage
	}
	if fs.NArg() == 0 {
		a.usage(fs)
		return ExitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	cmd, ok := commands[name]
	if !ok {
		if name == "help" {
			a.usage(fs)
			return ExitOK
		}
		a.sayUsage("launch", fmt.Sprintf("unknown command %q", name))
		return ExitUsage
	}
	err := cmd(ctx, a, rest)
	a.close()
	var ue *usageError
	var ex *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		a.sayUsage("launch "+name, ue.msg)
		return ExitUsage
	case errors.As(err, &ex):
		if ex.msg != "" {
			a.say("%s", ex.msg)
		}
		return ex.code
	}
	a.say("error: %v", err)
	return ExitFailed
}

// sayUsage says what is wrong with the command line, with the usage line.
func (a *app) sayUsage(cmd, msg string) {
	fmt.Fprintf(a.stderr, "%s: %s\nusage: %s\n(%s -h for help)\n", cmd, msg, a.usageLine, cmd)
}

// exitError ends a command with a status and a last message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return fmt.Sprintf("exit %d: %s", e.code, e.msg) }

var commands = map[string]func(context.Context, *app, []string) error{
	"run":          cmdRun,
	"attach":       cmdAttach,
	"stop":         cmdStop,
	"cancel":       cmdCancel,
	"ssh":          cmdSSH,
	"ls":           cmdLs,
	"logs":         cmdLogs,
	"rm":           cmdRm,
	"sweep":        cmdSweep,
	"budget":       cmdBudget,
	"local-server": cmdLocalServer,
	"gpus":         cmdGPUs,
	"datacenters":  cmdDataCenters,
	"volumes":      cmdVolumes,
	"registries":   cmdRegistries,
	"doctor":       cmdDoctor,
}

func (a *app) usage(fs *flag.FlagSet) {
	fmt.Fprintf(a.stderr, `usage: launch [global flags] COMMAND [flags] [args]

Runs a job on a Runpod GPU pod that deletes itself when its purpose is over:
a watchdog on the pod deletes it at the deadline (unless this client still
holds the lease), at the cost cap, when the job never started, or once the
results are collected or abandoned.

Commands:
  run [-f FILE]  create a pod, run a job on it, follow it, collect, delete
                 (FILE: a YAML run file of its flags, kept with your job)
  attach RUN     reconnect to a run's pod and resume following it
  stop RUN       ask the job for a checkpoint, wait for it, then collect
  cancel RUN     stop the job at once (no checkpoint), collect, delete
  ssh RUN        a shell or a command on the run's pod (-- CMD ARG...)
  ls             list the runs and their pods
  logs RUN       show the job's output (--follow: until it ends; --pod: the
                 pod's setup and watchdog log)
  rm RUN         delete a run's pod and secret (rm --all-orphans: the
                 pods and secrets of runs this machine does not know)
  sweep          delete every abandoned overbrainer pod of the account,
                 judged from the API alone (for fleets: no local state)
  budget         what the account's guarded runs may still spend at most,
                 summed (run --budget refuses a run past a budget)
  local-server   keep a local Runpod emulator running for --local commands
                 from other terminals
  gpus           the GPU catalog with prices and live stock
  datacenters    the data centers and the GPU types they stock
  volumes        the network volumes (volumes create NAME: make one)
  registries     the account's container registry credentials (run
                 --registry-auth ID pulls a private image with one)
  doctor         prove what runs rely on against this account, with one
                 short-lived pod (before your first real run)

Without %s, commands use the local emulator (--local).
"launch COMMAND -h" shows a command's flags.

Global flags:
`, EnvAPIKey)
	printDefaults(fs)
}

// hiddenFlags are left out of the usage: test and tuning knobs, documented
// in the README.
var hiddenFlags = map[string]bool{
	"api-url": true, "poll": true, "lease-every": true, "snapshot-lead": true, "start-timeout": true, "verdict-timeout": true,
	"watchdog-interval": true, "lease-ttl": true, "snapshot-wait": true, "probe-tries": true, "probe-wait": true, "pod-env": true,
}

// printDefaults prints the flags' help without the hidden flags.
func printDefaults(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) { f.Hidden = f.Hidden || hiddenFlags[f.Name] })
	fs.PrintDefaults()
}

// newFlags makes a command's flag set, with the global flags accepted after
// the command name too. Flags and arguments may come in any order; "--"
// ends the flags.
func (a *app) newFlags(name, args, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("launch "+name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	a.g.register(fs)
	a.usageLine = strings.TrimSpace("launch " + name + " [flags] " + args)
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, "usage: %s\n\n%s\n\nFlags:\n", a.usageLine, about)
		printDefaults(fs)
	}
	return fs
}

// parse parses a command's flags: a bad flag or value is a usage error
// (exit 2), -h the command's help.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil && !errors.Is(err, flag.ErrHelp) {
		return usagef("%v", err)
	} else if err != nil {
		return err
	}
	return nil
}

// say prints one of the launcher's own lines on stderr.
func (a *app) say(format string, args ...any) {
	a.sayMu.Lock()
	defer a.sayMu.Unlock()
	a.clearLiveLocked()
	fmt.Fprintf(a.stderr, "launch: "+format+"\n", args...)
}

// live shows a progress line: rewritten in place on a terminal, printed when
// it changes otherwise.
func (a *app) live(last *string, line string) {
	a.sayMu.Lock()
	defer a.sayMu.Unlock()
	if a.tty {
		a.clearLiveLocked()
		line = a.fit("launch: " + line)
		fmt.Fprint(a.stderr, line)
		a.liveLen = len(line)
		return
	}
	// Off a terminal only the part before the first " | " (what changes
	// seldom) decides whether the line is new.
	key, _, _ := strings.Cut(line, " | ")
	if key != *last {
		*last = key
		fmt.Fprintln(a.stderr, "launch: "+line)
	}
}

func (a *app) clearLiveLocked() {
	if a.liveLen > 0 {
		fmt.Fprint(a.stderr, "\r"+strings.Repeat(" ", a.liveLen)+"\r")
		a.liveLen = 0
	}
}

// isTerminal says w is a terminal (not /dev/null, another character
// device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// open sets up the state directory and the API client, after the command's
// flags are parsed.
func (a *app) open(ctx context.Context) error {
	if err := a.openStore(); err != nil {
		return err
	}
	return a.connectAPI(ctx)
}

func (a *app) openStore() error {
	dir := a.g.stateDir
	if dir == "" {
		var err error
		if dir, err = state.DefaultDir(); err != nil {
			return err
		}
	}
	st, err := state.Open(dir)
	if err != nil {
		return err
	}
	a.store = st
	return nil
}

// connectAPI picks Runpod or the local emulator and makes the client.
func (a *app) connectAPI(ctx context.Context) error {
	key := a.getenv(EnvAPIKey)
	apiURL := cmp.Or(a.g.apiURL, a.getenv(EnvAPIURL))
	if a.g.local || key == "" {
		if !a.g.local {
			a.say("no %s: using the local Runpod emulator (--local)", EnvAPIKey)
		}
		l, err := a.startLocal(ctx)
		if err != nil {
			return err
		}
		key, apiURL = l.key, l.baseURL
	}
	level := slog.LevelWarn
	if a.g.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	a.logger = logger
	opts := []runpod.Option{runpod.WithUserAgent(userAgent), runpod.WithLogger(logger)}
	if apiURL != "" {
		opts = append(opts, runpod.WithBaseURL(apiURL))
	}
	if a.transport != nil {
		opts = append(opts, runpod.WithHTTPClient(&http.Client{Timeout: runpod.DefaultTimeout, Transport: a.transport}))
	}
	c, err := runpod.New(key, opts...)
	if err != nil {
		return err
	}
	a.api = c
	a.apiURL = c.BaseURL()
	return nil
}

func (a *app) close() {
	if a.local != nil {
		a.local.close(a)
		a.local = nil
	}
}

// money formats USD with enough digits for the cents of a short run.
func money(usd float64) string { return costplan.Money(usd) }

// statusText is a pod's status, saying so when a pod that no longer runs
// still bills.
func statusText(s runpod.PodStatus) string {
	if guard.Abandoned(s) {
		return string(s) + " (still billing)"
	}
	return string(s)
}

// splitList reads a flag's list "A,B,C", trimming each; empty entries are
// dropped (nil for "").
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// since formats a duration to the second.
func since(d time.Duration) string {
	return d.Round(time.Second).String()
}
