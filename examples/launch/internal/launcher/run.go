package launcher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/overbrainer/overbrainer-go/examples/launch/demo"
	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// PodNamePrefix starts the name of every run's pod.
const PodNamePrefix = podenv.PodNamePrefix

// followFlags are the flags of every command that follows a run.
type followFlags struct {
	onFailure       string
	downOnInterrupt bool
	detach          bool
	startTimeout    time.Duration
	verdictTimeout  time.Duration
	hfTokenEnv      string
	// secrets are the job's secrets: name to the launcher's variable
	// that holds the value.
	secrets secretFlag
}

func (f *followFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.onFailure, "on-failure", "delete", "when the launcher cannot go on once the pod exists: delete it at once, or leave it to its watchdog (leave)")
	fs.BoolVar(&f.downOnInterrupt, "down-on-interrupt", false, "on Ctrl-C, collect what there is and delete the pod instead of detaching")
	fs.BoolVar(&f.detach, "detach", false, "on Ctrl-C before the job started, leave the pod to its watchdog (which deletes it after its boot grace) instead of deleting it")
	fs.DurationVar(&f.startTimeout, "start-timeout", 20*time.Minute, "how long to wait for the pod to run and answer SSH")
	fs.DurationVar(&f.verdictTimeout, "verdict-timeout", 10*time.Minute, "how long to wait for the watchdog's verdict")
	fs.StringVar(&f.hfTokenEnv, "hf-token-env", "", "name of this launcher's environment variable holding the HF token; the job gets it as HF_TOKEN over SSH only")
	fs.Var(&f.secrets, "secret", "NAME or NAME=VAR: the job gets NAME in its environment, from this launcher's variable VAR (default NAME), over SSH only: never in the pod's env, a file or a log (repeatable)")
}

// secretFlag collects --secret NAME and --secret NAME=VAR.
type secretFlag map[string]string

func (s *secretFlag) String() string { return "" }

func (s *secretFlag) Type() string { return "NAME[=VAR]" }

func (s *secretFlag) Set(v string) error {
	name, from, ok := strings.Cut(v, "=")
	if !ok {
		from = name
	}
	if err := guard.CheckSecretName(name); err != nil {
		return err
	}
	if !envName.MatchString(from) {
		return fmt.Errorf("%q is not a variable name", from)
	}
	if *s == nil {
		*s = secretFlag{}
	}
	if _, dup := (*s)[name]; dup {
		return fmt.Errorf("%s given twice", name)
	}
	(*s)[name] = from
	return nil
}

func (s *secretFlag) Append(v string) error { return s.Set(v) }

func (s *secretFlag) Replace(vs []string) error {
	*s = nil
	return setEach(s.Set, vs)
}

// GetSlice is each secret as NAME, or NAME=VAR when they differ: names of
// variables, never a value.
func (s *secretFlag) GetSlice() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(*s)) {
		if from := (*s)[name]; from != name {
			name += "=" + from
		}
		out = append(out, name)
	}
	return out
}

func (s *secretFlag) pairs() {}

// setEach sets each value in turn, stopping at the first refused.
func setEach(set func(string) error, vs []string) error {
	for _, v := range vs {
		if err := set(v); err != nil {
			return err
		}
	}
	return nil
}

// secretSources are the job's secrets, name to the launcher's variable,
// --hf-token-env's HF_TOKEN among them.
func (f *followFlags) secretSources() (map[string]string, error) {
	src := maps.Clone(f.secrets)
	if f.hfTokenEnv != "" {
		if _, dup := src["HF_TOKEN"]; dup {
			return nil, usagef("--hf-token-env and --secret HF_TOKEN both set HF_TOKEN")
		}
		if src == nil {
			src = map[string]string{}
		}
		src["HF_TOKEN"] = f.hfTokenEnv
	}
	return src, nil
}

// secretValues reads each secret from the launcher's environment; one
// unset or empty is an error naming its variable.
func (a *app) secretValues(src map[string]string) (map[string]string, error) {
	vals := make(map[string]string, len(src))
	for _, name := range slices.Sorted(maps.Keys(src)) {
		v := a.getenv(src[name])
		if v == "" {
			return nil, usagef("secret %s: the variable %s is empty or not set", name, src[name])
		}
		vals[name] = v
	}
	return vals, nil
}

func (f *followFlags) check() error {
	if f.onFailure != "delete" && f.onFailure != "leave" {
		return usagef("--on-failure is delete or leave, not %q", f.onFailure)
	}
	if f.startTimeout <= 0 || f.verdictTimeout <= 0 {
		return usagef("--start-timeout and --verdict-timeout must be positive")
	}
	return nil
}

type runFlags struct {
	follow followFlags

	job, cmd, out       string
	resumeFrom          string
	image, gpu, cloud   string
	registryAuth        string
	gpuCount, diskGB    int
	minVRAM             int
	maxPrice            float64
	dataCenter, minCUDA string
	volumeGB, maxVolGB  int
	networkVolume       string
	noVolumeCaches      bool
	volumePath          string
	workdir             string
	maxHours            float64
	// rules are the run's rules and the watchdog's knobs, set by their
	// flags but for Deadline (--max-hours) and HardDeadline: a zero
	// --max-extension is the flag's word for a hard deadline (which
	// podenv's Rules say with HardDeadline, a zero MaxExtension there
	// being the default hour).
	rules          podenv.Rules
	keepIdle       time.Duration // KeepIdle, or KeepUnbounded when zero
	waitForGPU     time.Duration
	recoverN       int
	recoverOnError bool
	pullEvery      time.Duration

	poll, leaseEvery time.Duration
	// podEnv adds variables to the pod's env (tests: OVERBRAINER_SSHD...).
	podEnv  envFlag
	results guard.Results
	money   moneyFlags
	dryRun  bool
}

// envFlag collects NAME=VALUE flags.
type envFlag map[string]string

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (e *envFlag) String() string { return "" }

func (e *envFlag) Type() string { return "NAME=VALUE" }

func (e *envFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || !envName.MatchString(name) {
		return errors.New("want NAME=VALUE")
	}
	if name == podenv.HostKeyEnv {
		return fmt.Errorf("%s is the run's own", name)
	}
	if *e == nil {
		*e = envFlag{}
	}
	(*e)[name] = value
	return nil
}

func (e *envFlag) Append(v string) error { return e.Set(v) }

func (e *envFlag) Replace(vs []string) error {
	*e = nil
	return setEach(e.Set, vs)
}

func (e *envFlag) GetSlice() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(*e)) {
		out = append(out, name+"="+(*e)[name])
	}
	return out
}

func (e *envFlag) pairs() {}

// stallFlag is --stall-after: a positive duration turns the stall rule
// on; off or 0 leaves it off, the zero of podenv.Rules.StallAfter.
type stallFlag struct{ d *time.Duration }

func (s stallFlag) String() string {
	if s.d == nil || *s.d == 0 {
		return "off"
	}
	return s.d.String()
}

func (s stallFlag) Type() string { return "duration|off" }

func (s stallFlag) Set(v string) error {
	if v == "off" {
		*s.d = 0
		return nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return errors.New("want a duration, or off")
	case d < 0:
		return errors.New("want a positive duration, or off (0)")
	}
	*s.d = d
	return nil
}

// register defines run's flags: the command line's, and the keys of a run
// file (see runfile.go), in the order a printed run file shows them.
func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.job, "job", "", "the job's directory, uploaded to the pod (default: the built-in demo job)")
	fs.StringVar(&f.cmd, "cmd", "", "the job's command, run by sh in the job's directory (default with the demo: "+demo.Command+")")
	fs.StringVar(&f.resumeFrom, "resume-from", "", "an earlier run whose collected outputs (its checkpoint) are uploaded into this job's outputs before it starts, so that it continues from there")
	fs.StringVar(&f.out, "out", "", "where to download the results (default: the run's state directory)")
	fs.StringVar(&f.image, "image", guard.DefaultImage, "the pod's container image")
	fs.StringVar(&f.registryAuth, "registry-auth", "", "for a private image: the id of the account's registry credential to pull it with (see launch registries)")
	fs.StringVar(&f.gpu, "gpu", guard.DefaultGPU, "GPU type ids to try in order, 'A,B,C', or auto: those in stock, cheapest first (see launch gpus)")
	fs.IntVar(&f.minVRAM, "min-vram", 0, "with --gpu auto: at least this many GB of VRAM")
	fs.Float64Var(&f.maxPrice, "max-price", 0, "with --gpu auto: at most this USD/h per GPU")
	fs.StringVar(&f.dataCenter, "data-center", "", "data center ids 'A,B', or auto: those that stock the type (default: any)")
	fs.StringVar(&f.minCUDA, "min-cuda", "", "lowest CUDA version of the host's driver, or none (default: "+guard.DefaultMinCUDA+" with the default image)")
	fs.IntVar(&f.gpuCount, "gpu-count", 1, "number of GPUs")
	fs.StringVar(&f.cloud, "cloud", "SECURE", "SECURE or COMMUNITY")
	fs.IntVar(&f.diskGB, "disk-gb", 50, "container disk in GB")
	fs.IntVar(&f.volumeGB, "volume-gb", 0, "a pod volume of this size in GB at --volume-path (0: none)")
	fs.StringVar(&f.networkVolume, "network-volume", "", "id of a network volume to mount at --volume-path (grown by 25% when 92% of its usable part is used, up to --max-volume-gb)")
	fs.IntVar(&f.maxVolGB, "max-volume-gb", 0, "the largest the network volume may grow to, in GB (0: it never grows, and a full one asks the job for a disk snapshot)")
	fs.BoolVar(&f.noVolumeCaches, "no-volume-caches", false, "keep the job's HF_HOME, TORCH_HOME and PIP_CACHE_DIR off the network volume (by default they are under its .cache/)")
	fs.StringVar(&f.volumePath, "volume-path", guard.DefaultVolumePath, "where the volume is mounted")
	fs.StringVar(&f.workdir, "workdir", "", "directory of run directories on the pod (default: --volume-path/overbrainer)")
	fs.Float64Var(&f.maxHours, "max-hours", 4, "deadline, in hours from the pod's create (a --wait-for-gpu wait does not count): the watchdog deletes the pod then unless this launcher still holds the lease")
	fs.IntVar(&f.recoverN, "recover", 0, "when the pod is lost under the job (its host failed, its container restarted) or a new pod's setup fails, go on up to this many times, within the deadline and the cost cap: on the same pod when its volume kept the run directory through a container restart, else on a new pod, one pod at a time, the job resumed from the newest outputs pulled (from the lost pod, or every --pull-every; from its outputs on the --network-volume)")
	fs.BoolVar(&f.recoverOnError, "recover-on-error", false, "with --recover, recover a job that exited non-zero by itself too, from the outputs it left")
	fs.DurationVar(&f.pullEvery, "pull-every", 0, "while the job runs, download its outputs so far this often into the run's state, for --recover (0: never)")
	fs.DurationVar(&f.waitForGPU, "wait-for-gpu", 0, "when no GPU type can be had for want of capacity, wait up to this long for one, looking again every 10s to 2m, with no pod meanwhile (0: fail at once)")
	fs.DurationVar(&f.rules.MaxExtension, "max-extension", podenv.DefaultMaxExtension, "how long past the deadline this launcher's lease may hold the pod (0: the deadline is hard)")
	fs.Float64Var(&f.rules.MaxCostUSD, "max-cost-usd", 0, "cost cap in USD: a snapshot is asked at 95% (or --snapshot-lead before), the pod is deleted at 100% (0: none)")
	fs.Var(stallFlag{&f.rules.StallAfter}, "stall-after", "turns the stall rule on: a job that has not moved this long (no new output, no new line in $OVERBRAINER_PROGRESS, no file changed under its outputs, less than a tenth of a core of CPU, no GPU busy by --min-gpu-util) is asked for a snapshot, its lease is no longer renewed, and its watchdog deletes the pod when it still has not moved a --snapshot-wait later (off or 0: nothing is deleted for a stall; the launcher only warns after "+since(podenv.StallWarnAfter)+" without movement)")
	fs.IntVar(&f.rules.MinGPUUtil, "min-gpu-util", 0, "for the stall rule and its warning, a GPU at least this busy (percent, by nvidia-smi on the pod, where it exists) counts as the job moving (0: the GPU does not count)")
	fs.BoolVar(&f.rules.Keep, "keep-pod", false, "once the job started, neither the launcher nor the watchdog's rules delete the pod, but for --keep-idle: remove it with launch rm")
	fs.DurationVar(&f.keepIdle, "keep-idle", podenv.DefaultKeepIdle, "with --keep-pod: once the job ended, the watchdog stops the pod (with a --volume-gb pod volume, which stays until launch rm) or deletes it (without) after this long with no SSH session open on it, no process of anyone's using CPU, no GPU busy (--min-gpu-util) and no launcher following it (0: never, only launch rm)")
	fs.DurationVar(&f.rules.BootGrace, "boot-grace", podenv.DefaultBootGrace, "the watchdog deletes the pod if no job started this long after it booted")
	fs.DurationVar(&f.rules.RetrieveGrace, "retrieve-grace", podenv.DefaultRetrieveGrace, "the watchdog deletes the pod this long after the job ended if nobody collected the results (a download in progress holds it)")
	fs.DurationVar(&f.poll, "poll", 2*time.Second, "how often the job's state and output are read")
	fs.DurationVar(&f.leaseEvery, "lease-every", 5*time.Minute, "how often the lease is renewed while the job's output progresses")
	fs.DurationVar(&f.rules.SnapshotLead, "snapshot-lead", podenv.DefaultSnapshotLead, "how long before the cost cap or the deadline a snapshot is asked for")
	fs.DurationVar(&f.rules.Interval, "watchdog-interval", 0, "the watchdog's tick (default 60s)")
	fs.DurationVar(&f.rules.LeaseTTL, "lease-ttl", 0, "how long a lease holds for the watchdog (default 15m)")
	fs.DurationVar(&f.rules.SnapshotWait, "snapshot-wait", 0, "how long the watchdog waits for a snapshot it asked for (default 15m)")
	fs.IntVar(&f.rules.ProbeTries, "probe-tries", 0, "the watchdog's API probe attempts (default 5)")
	fs.DurationVar(&f.rules.ProbeWait, "probe-wait", 0, "the wait between the watchdog's probe attempts (default 10s)")
	fs.Var(&f.podEnv, "pod-env", "NAME=VALUE added to the pod's env (repeatable; for tests)")
	fs.Float64Var(&f.results.MaxGB, "max-results-gb", guard.DefaultMaxResultsGB, "the download of the results stops past this many GB, the pod (the only copy) left to its retrieve grace")
	fs.BoolVar(&f.results.RequireOutputs, "require-outputs", false, "a job that leaves no file in its outputs directory fails the run (exit 1)")
	fs.StringArrayVar(&f.results.Exclude, "exclude", nil, "files and directories whose base name matches the glob `PATTERN` stay on the pod, not downloaded (repeatable; e.g. 'ckpt-*')")
	f.follow.register(fs)
	f.money.register(fs, true)
	markPaths(fs, "job", "out")
}

func (f *runFlags) check() error {
	if err := f.follow.check(); err != nil {
		return err
	}
	if err := f.money.check(); err != nil {
		return err
	}
	// What guard checks of the spec, checkSpec has it say by flag; but
	// guard reads a zero as its default, which these flags' zero is not.
	switch {
	case f.gpuCount == 0:
		return usagef("--gpu-count must be at least 1")
	case f.cloud == "":
		return usagef("--cloud is SECURE or COMMUNITY, not %q", f.cloud)
	case f.volumePath == "":
		return usagef("--volume-path must be absolute")
	case f.job != "" && f.cmd == "":
		return usagef("--job needs --cmd, the command that runs the job")
	case math.IsNaN(f.maxHours) || f.maxHours < 0 || f.maxHours > podenv.MaxDeadlineAhead.Hours():
		return usagef("--max-hours must be between 0 and %g (a year)", podenv.MaxDeadlineAhead.Hours())
	case f.keepIdle != podenv.DefaultKeepIdle && !f.rules.Keep:
		return usagef("--keep-idle needs --keep-pod: only a kept pod waits for its idle bound")
	}
	return nil
}

func cmdRun(ctx context.Context, a *app, args []string) error {
	var f runFlags
	fs := a.newFlags("run", "", `Creates a pod for a new run, waits for its watchdog's verdict, uploads and
starts the job, follows its output while renewing the lease, downloads the
results, deletes the pod and the secret, and prints what it cost. Ctrl-C
before the job started deletes the pod (unless --detach); once it runs,
Ctrl-C detaches (the pod goes on under its watchdog; "launch attach RUN"
resumes) unless --down-on-interrupt; with the in-process local emulator
the pod ends with the launcher. Before its create it warns when launch
doctor found, with this key, something runs rely on failing; without a
report for the key and this version, it first makes the doctor's
read-only checks and keeps them (`+EnvAccountCheck+`=off skips them).`)
	f.register(fs)
	var file string
	var printOnly bool
	fs.StringVarP(&file, "file", "f", "", "a YAML run file: each key one of these flags without --, e.g. max-hours: 6; flags given here win over it")
	fs.BoolVar(&printOnly, "print", false, "print the run (the run file and the flags merged) as a run file, and create nothing")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print what the run may cost at most (its worst cases) and create nothing")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("run takes no arguments, only flags (got %q)", fs.Arg(0))
	}
	// The environment's values are defaults: a run file's win over them.
	if err := f.money.fromEnv(a, fs); err != nil {
		return err
	}
	var rf *runFile
	if file != "" {
		var err error
		if rf, err = readRunFile(fs, file); err != nil {
			return err
		}
		if err := rf.apply(fs); err != nil {
			return err
		}
	}
	if err := f.check(); err != nil {
		return err
	}
	jobDir := f.job
	if fi, err := os.Stat(jobDir); jobDir != "" && (err != nil || !fi.IsDir()) {
		return usagef("--job %s is not a directory", jobDir)
	}
	secretEnv, err := f.follow.secretSources()
	if err != nil {
		return err
	}
	if printOnly {
		// Checked as the run would be, so that a printed run file is one
		// that launch run -f takes.
		now := time.Now()
		id, err := podenv.NewRunID(now)
		if err != nil {
			return err
		}
		if err := f.checkSpec(f.spec(id, jobDir, now, a.apiURL)); err != nil {
			return err
		}
		return printRun(a.stdout, fs, rf)
	}
	secrets, err := a.secretValues(secretEnv)
	if err != nil {
		return err
	}
	if fs.Changed("cmd") && strings.TrimSpace(f.cmd) == "" {
		return usagef("--cmd is empty: give the job's command (or leave --cmd out for the demo job)")
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	if err := a.checkGPUFlag(ctx, splitList(f.gpu)); err != nil {
		return err
	}
	a.accountCheck(ctx)

	now := time.Now()
	id, err := podenv.NewRunID(now)
	if err != nil {
		return err
	}
	r := &state.Run{
		Record:  guard.Record{ID: id, PodName: podenv.PodName(id), Phase: state.PhaseCreating},
		Created: now, Local: a.local != nil, SecretEnv: secretEnv, OutDir: f.out,
	}
	if r.OutDir == "" {
		r.OutDir = filepath.Join(a.store.RunPath(id), "results")
	} else if r.OutDir, err = filepath.Abs(r.OutDir); err != nil {
		return err
	}
	spec := f.spec(id, jobDir, now, a.apiURL)
	if jobDir == "" {
		// The demo job, written into the run's state directory so that an
		// attach before the job started can still upload it.
		spec.Job.Dir = filepath.Join(a.store.RunPath(id), "job")
	}
	if f.resumeFrom != "" {
		if spec.Job.ResumeFrom, err = a.resumeDir(f.resumeFrom); err != nil {
			return err
		}
	}
	spec.Job.Secrets = secrets
	spec.Recover.PullDir = a.pullDir(id)
	if err := f.checkSpec(spec); err != nil {
		return err
	}
	// What the run may cost at most, before any money is spent.
	// One that cannot be planned (a GPU type that does not exist) fails
	// the launch below all the same, saved as a failed run, unless there
	// is nothing to launch or a budget to keep.
	worst, err := guard.WorstCase(ctx, a.api, spec, f.money.sweeper())
	switch {
	case err != nil && (f.dryRun || f.money.budget > 0):
		return fmt.Errorf("planning the run's worst case: %w", err)
	case err != nil:
		a.say("worst case: cannot be planned: %v", err)
	default:
		a.sayWorstCase(worst, spec.Keep)
	}
	if f.dryRun {
		a.say("dry run: nothing created")
		return nil
	}
	if f.money.budget > 0 {
		if err := a.checkBudget(ctx, f.money.budget, worst); err != nil {
			return err
		}
	}
	r.JobDir, r.Command, r.ResumeFrom = spec.Job.Dir, spec.Job.Command, spec.Job.ResumeFrom
	if err := a.store.Create(r); err != nil {
		return err
	}
	if jobDir == "" {
		if err := demo.WriteTo(spec.Job.Dir); err != nil {
			return err
		}
	}
	lock, err := a.store.TryLock(id)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	a.say("run %s (state in %s)", id, a.store.RunPath(id))
	if spec.Job.ResumeFrom != "" {
		a.say("resuming from %s", resumeText(spec.Job.ResumeFrom))
	}
	return a.launch(ctx, r, spec, followOpts{followFlags: f.follow, secrets: secrets, poll: f.poll, leaseEvery: f.leaseEvery,
		budget: f.money.budget})
}

// spec is the guarded run these flags ask for, as run id would start it at
// now; the job's secrets and the recovery's pull directory are the caller's.
func (f *runFlags) spec(id, jobDir string, now time.Time, apiURL string) guard.Spec {
	spec := guard.Spec{
		RunID: id, Job: guard.Job{Dir: jobDir, Command: f.cmd},
		Image: f.image, RegistryAuthID: f.registryAuth, GPUTypes: splitList(f.gpu), GPUCount: f.gpuCount, Cloud: runpod.CloudType(f.cloud),
		MinVRAMGB: f.minVRAM, MaxPricePerGPU: f.maxPrice, DataCenters: splitList(f.dataCenter), MinCUDA: f.minCUDA,
		DiskGB: f.diskGB, VolumeGB: f.volumeGB, NetworkVolumeID: f.networkVolume, MaxVolumeGB: f.maxVolGB, NoVolumeCaches: f.noVolumeCaches,
		VolumePath: f.volumePath, Workdir: f.workdir,
		Rules:          f.rules,
		WatchdogAPIURL: apiURL, PodEnv: f.podEnv, Results: f.results,
		CapacityWait: f.waitForGPU, DeadlineFromCreate: true,
	}
	spec.HardDeadline = spec.MaxExtension == 0
	if spec.Keep {
		spec.KeepIdle, spec.KeepUnbounded = f.keepIdle, f.keepIdle == 0
	}
	if f.maxHours > 0 {
		spec.Deadline = now.Add(time.Duration(f.maxHours * float64(time.Hour))).Truncate(time.Second)
	}
	if jobDir == "" && spec.Job.Command == "" {
		spec.Job.Command = demo.Command
	}
	spec.Recover = guard.Recovery{Times: f.recoverN, OnError: f.recoverOnError, PullEvery: f.pullEvery}
	return spec
}

// resumeDir is the collected outputs of run id, for --resume-from; a run
// that has none is refused, saying how to get them.
func (a *app) resumeDir(id string) (string, error) {
	prior, err := a.store.Load(id)
	if err != nil {
		return "", usagef("--resume-from: %v", err)
	}
	dir := filepath.Join(prior.OutDir, guard.OutputsDir)
	if n, _, err := podssh.TreeSize(dir); err != nil || n == 0 {
		return "", usagef("--resume-from %s: the run has no collected outputs in %s: collect them first (launch stop %s, or launch attach %s)", id, dir, id, id)
	}
	return dir, nil
}
