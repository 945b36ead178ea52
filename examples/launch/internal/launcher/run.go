package launcher

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/examples/launch/demo"
	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Defaults of run's flags for real Runpod.
const (
	DefaultImage      = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
	DefaultGPU        = "NVIDIA GeForce RTX 4090"
	DefaultVolumePath = "/workspace"
	PodNamePrefix     = "overbrainer-"
)

// The watchdog's defaults that the client must agree with.
const (
	defaultLeaseTTL     = 15 * time.Minute
	defaultSnapshotLead = 15 * time.Minute
)

// followFlags are the flags of every command that follows a run.
type followFlags struct {
	onFailure       string
	downOnInterrupt bool
	startTimeout    time.Duration
	verdictTimeout  time.Duration
	hfTokenEnv      string
}

func (f *followFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.onFailure, "on-failure", "delete", "when the launcher cannot go on once the pod exists: delete it at once, or leave it to its watchdog (leave)")
	fs.BoolVar(&f.downOnInterrupt, "down-on-interrupt", false, "on Ctrl-C, collect what there is and delete the pod instead of detaching")
	fs.DurationVar(&f.startTimeout, "start-timeout", 20*time.Minute, "how long to wait for the pod to run and answer SSH")
	fs.DurationVar(&f.verdictTimeout, "verdict-timeout", 10*time.Minute, "how long to wait for the watchdog's verdict")
	fs.StringVar(&f.hfTokenEnv, "hf-token-env", "", "name of this launcher's environment variable holding the HF token; the job gets it as HF_TOKEN over SSH only")
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

	job, cmd, out     string
	image, gpu, cloud string
	gpuCount, diskGB  int
	volumeGB          int
	networkVolume     string
	volumePath        string
	workdir           string
	maxHours          float64
	maxCostUSD        float64
	keep              bool
	bootGrace         time.Duration
	retrieveGrace     time.Duration

	poll, leaseEvery time.Duration
	snapshotLead     time.Duration
	// The watchdog's knobs, added to the pod's env when set.
	wdInterval, leaseTTL, snapshotWait, probeWait time.Duration
	probeTries                                    int
	// podEnv adds variables to the pod's env (tests: OVERBRAINER_SSHD...).
	podEnv envFlag
}

// envFlag collects NAME=VALUE flags.
type envFlag map[string]string

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (e *envFlag) String() string { return "" }

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

func (f *runFlags) register(fs *flag.FlagSet) {
	f.follow.register(fs)
	fs.StringVar(&f.job, "job", "", "the job's directory, uploaded to the pod (default: the built-in demo job)")
	fs.StringVar(&f.cmd, "cmd", "", "the job's command, run by sh in the job's directory (default with the demo: "+demo.Command+")")
	fs.StringVar(&f.out, "out", "", "where to download the results (default: the run's state directory)")
	fs.StringVar(&f.image, "image", DefaultImage, "the pod's container image")
	fs.StringVar(&f.gpu, "gpu", DefaultGPU, "GPU type id")
	fs.IntVar(&f.gpuCount, "gpu-count", 1, "number of GPUs")
	fs.StringVar(&f.cloud, "cloud", "SECURE", "SECURE or COMMUNITY")
	fs.IntVar(&f.diskGB, "disk-gb", 50, "container disk in GB")
	fs.IntVar(&f.volumeGB, "volume-gb", 0, "a pod volume of this size in GB at --volume-path (0: none)")
	fs.StringVar(&f.networkVolume, "network-volume", "", "id of a network volume to mount at --volume-path (grown by 25% when 92% of its usable part is used)")
	fs.StringVar(&f.volumePath, "volume-path", DefaultVolumePath, "where the volume is mounted")
	fs.StringVar(&f.workdir, "workdir", "", "directory of run directories on the pod (default: --volume-path/overbrainer)")
	fs.Float64Var(&f.maxHours, "max-hours", 4, "deadline, in hours from now: the watchdog deletes the pod then unless this launcher still holds the lease")
	fs.Float64Var(&f.maxCostUSD, "max-cost-usd", 0, "cost cap in USD: a snapshot is asked at 95% (or --snapshot-lead before), the pod is deleted at 100% (0: none)")
	fs.BoolVar(&f.keep, "keep-pod", false, "once the job started, the watchdog never deletes the pod, and neither does the launcher: remove it with launch rm")
	fs.DurationVar(&f.bootGrace, "boot-grace", podenv.DefaultBootGrace, "the watchdog deletes the pod if no job started this long after it booted")
	fs.DurationVar(&f.retrieveGrace, "retrieve-grace", podenv.DefaultRetrieveGrace, "the watchdog deletes the pod this long after the job ended if nobody collected the results (a download in progress holds it)")
	fs.DurationVar(&f.poll, "poll", 2*time.Second, "how often the job's state and output are read")
	fs.DurationVar(&f.leaseEvery, "lease-every", 5*time.Minute, "how often the lease is renewed while the job's output progresses")
	fs.DurationVar(&f.snapshotLead, "snapshot-lead", defaultSnapshotLead, "how long before the cost cap or the deadline a snapshot is asked for")
	fs.DurationVar(&f.wdInterval, "watchdog-interval", 0, "the watchdog's tick (default 60s)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 0, "how long a lease holds for the watchdog (default 15m)")
	fs.DurationVar(&f.snapshotWait, "snapshot-wait", 0, "how long the watchdog waits for a snapshot it asked for (default 15m)")
	fs.IntVar(&f.probeTries, "probe-tries", 0, "the watchdog's API probe attempts (default 5)")
	fs.DurationVar(&f.probeWait, "probe-wait", 0, "the wait between the watchdog's probe attempts (default 10s)")
	fs.Var(&f.podEnv, "pod-env", "NAME=VALUE added to the pod's env (repeatable; for tests)")
}

func (f *runFlags) check() error {
	if err := f.follow.check(); err != nil {
		return err
	}
	switch {
	case f.job != "" && f.cmd == "":
		return usagef("--job needs --cmd, the command that runs the job")
	case f.gpuCount < 1:
		return usagef("--gpu-count must be at least 1")
	case f.cloud != string(runpod.SecureCloud) && f.cloud != string(runpod.CommunityCloud):
		return usagef("--cloud is SECURE or COMMUNITY, not %q", f.cloud)
	case f.volumeGB < 0 || f.diskGB < 0:
		return usagef("sizes cannot be negative")
	case f.volumeGB > 0 && f.networkVolume != "":
		return usagef("--volume-gb and --network-volume exclude each other")
	case !path.IsAbs(f.volumePath):
		return usagef("--volume-path must be absolute")
	case f.workdir != "" && !path.IsAbs(f.workdir):
		return usagef("--workdir must be absolute")
	case math.IsNaN(f.maxHours) || f.maxHours < 0 || f.maxHours > 24*365:
		return usagef("--max-hours must be between 0 and a year")
	case f.maxHours == 0 && !f.keep:
		return usagef("--max-hours 0 (no deadline) needs --keep-pod: without a deadline nothing would end a hung job")
	case math.IsNaN(f.maxCostUSD) || f.maxCostUSD < 0:
		return usagef("--max-cost-usd cannot be negative")
	case f.poll <= 0 || f.leaseEvery <= 0 || f.snapshotLead < 0:
		return usagef("--poll and --lease-every must be positive")
	}
	ttl := f.leaseTTL
	if ttl == 0 {
		ttl = defaultLeaseTTL
	}
	if f.leaseEvery >= ttl {
		return usagef("--lease-every (%s) must be shorter than the lease's TTL (%s)", f.leaseEvery, ttl)
	}
	return nil
}

// watchdogEnv is the watchdog's knobs for the pod's env (podenv emits the
// settings of a run, not these).
func (f *runFlags) watchdogEnv() map[string]string {
	env := map[string]string{"OVERBRAINER_SNAPSHOT_LEAD": seconds(f.snapshotLead)}
	set := func(name string, d time.Duration) {
		if d > 0 {
			env[name] = seconds(d)
		}
	}
	set("OVERBRAINER_INTERVAL", f.wdInterval)
	set("OVERBRAINER_LEASE_TTL", f.leaseTTL)
	set("OVERBRAINER_SNAPSHOT_WAIT", f.snapshotWait)
	set("OVERBRAINER_PROBE_WAIT", f.probeWait)
	if f.probeTries > 0 {
		env["OVERBRAINER_PROBE_TRIES"] = strconv.Itoa(f.probeTries)
	}
	return env
}

// seconds rounds up to whole seconds, so that a positive knob never becomes 0.
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}

func cmdRun(ctx context.Context, a *app, args []string) error {
	var f runFlags
	fs := a.newFlags("run", "", `Creates a pod for a new run, waits for its watchdog's verdict, uploads and
starts the job, follows its output while renewing the lease, downloads the
results, deletes the pod and the secret, and prints what it cost. Ctrl-C
detaches (the pod goes on under its watchdog; "launch attach RUN" resumes)
unless --down-on-interrupt; with the in-process local emulator the pod ends
with the launcher.`)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("run takes no arguments, only flags (got %q)", fs.Arg(0))
	}
	if err := f.check(); err != nil {
		return err
	}
	jobDir := f.job
	if jobDir != "" {
		fi, err := os.Stat(jobDir)
		if err != nil || !fi.IsDir() {
			return usagef("--job %s is not a directory", jobDir)
		}
		if jobDir, err = filepath.Abs(jobDir); err != nil {
			return err
		}
	}
	hfToken, err := a.hfToken(f.follow.hfTokenEnv)
	if err != nil {
		return err
	}
	if err := a.open(ctx); err != nil {
		return err
	}

	now := time.Now()
	id, err := state.NewID(now)
	if err != nil {
		return err
	}
	r := &state.Run{
		ID: id, Created: now, Local: a.local != nil, APIURL: a.apiURL,
		PodName: PodNamePrefix + id, SecretName: podenv.HostKeySecretName(id),
		JobDir: jobDir, Command: f.cmd, HFTokenEnv: f.follow.hfTokenEnv,
		MaxCostUSD: f.maxCostUSD, Keep: f.keep, BootGrace: f.bootGrace, RetrieveGrace: f.retrieveGrace,
		Poll: f.poll, LeaseEvery: f.leaseEvery, SnapshotLead: f.snapshotLead,
		Phase: state.PhaseCreating,
	}
	r.OutDir = f.out
	if r.OutDir == "" {
		r.OutDir = filepath.Join(a.store.RunPath(id), "results")
	} else if r.OutDir, err = filepath.Abs(r.OutDir); err != nil {
		return err
	}
	if f.maxHours > 0 {
		r.Deadline = now.Add(time.Duration(f.maxHours * float64(time.Hour))).Truncate(time.Second)
	}
	workdir := f.workdir
	if workdir == "" {
		workdir = path.Join(f.volumePath, "overbrainer")
	}
	settings := podenv.Settings{
		RunID: id, Workdir: workdir, Deadline: r.Deadline,
		BootGrace: f.bootGrace, RetrieveGrace: f.retrieveGrace, Keep: f.keep,
		APIURL: a.apiURL,
	}
	if f.networkVolume != "" {
		settings.VolumeDir = f.volumePath
		r.NetworkVolumeID, r.VolumeDir = f.networkVolume, f.volumePath
		v, err := a.api.GetNetworkVolume(ctx, f.networkVolume)
		if err != nil {
			return fmt.Errorf("network volume %s: %w", f.networkVolume, err)
		}
		settings.VolumeGB, r.VolumeGB = v.SizeGB, v.SizeGB
	}
	r.RunDir = settings.RunDir()

	client, err := podssh.NewKey()
	if err != nil {
		return err
	}
	host, err := podssh.NewKey()
	if err != nil {
		return err
	}
	settings.AuthorizedKey = client.AuthorizedKey(PodNamePrefix + id)
	settings.Claim = host.AuthorizedKey("")
	r.HostKey = settings.Claim
	env, err := settings.Env()
	if err != nil {
		return err
	}
	for k, v := range f.watchdogEnv() {
		env[k] = v
	}
	for k, v := range f.podEnv {
		env[k] = v
	}
	clientPEM, err := client.PrivatePEM(PodNamePrefix + id)
	if err != nil {
		return err
	}
	hostPEM, err := host.PrivatePEM(PodNamePrefix + id)
	if err != nil {
		return err
	}
	if r.JobDir == "" {
		// The demo job, written into the run's state directory so that an
		// attach before the job started can still upload it.
		r.JobDir = filepath.Join(a.store.RunPath(id), "job")
		if r.Command == "" {
			r.Command = demo.Command
		}
	}
	if err := a.store.Create(r); err != nil {
		return err
	}
	if f.job == "" {
		if err := demo.WriteTo(r.JobDir); err != nil {
			return err
		}
	}
	if err := a.store.SaveClientKey(id, clientPEM); err != nil {
		return err
	}
	lock, err := a.store.TryLock(id)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	a.say("run %s (state in %s)", id, a.store.RunPath(id))

	// The host key's private half goes to Runpod's secret store, and
	// nowhere else: not to the pod's env (which holds a placeholder) nor to
	// this machine's disk.
	sec, err := a.api.CreateSecret(ctx, r.SecretName, base64.StdEncoding.EncodeToString(hostPEM))
	clear(hostPEM)
	if err != nil {
		a.createFailed(r, fmt.Errorf("creating the host key secret: %w", err))
		return &exitError{code: ExitFailed}
	}
	r.SecretID = sec.ID
	if err := a.store.Save(r); err != nil {
		return err
	}

	req := runpod.CreatePodRequest{
		Name: r.PodName, Image: f.image, GPUTypeID: f.gpu, GPUCount: f.gpuCount,
		Cloud: runpod.CloudType(f.cloud), ContainerDiskGB: f.diskGB,
		Ports: []string{"22/tcp"}, Env: env, Command: bootstrap.Command(),
	}
	if f.volumeGB > 0 {
		req.PersistentVolume = &runpod.PersistentMount{SizeGB: f.volumeGB, Path: f.volumePath}
	}
	if f.networkVolume != "" {
		req.NetworkVolume = &runpod.NetworkMount{VolumeID: f.networkVolume, Path: f.volumePath}
	}
	// Billing starts no earlier than the create call: the cost cap counts
	// from here, on this machine's clock, which errs on the safe side.
	r.BillingStart = time.Now()
	pod, err := a.api.CreatePod(ctx, req)
	if err != nil {
		a.createFailed(r, fmt.Errorf("creating the pod: %w", err))
		if ctx.Err() != nil {
			return &exitError{code: ExitInterrupted}
		}
		return &exitError{code: ExitFailed}
	}
	r.PodID, r.CostPerHr = pod.ID, pod.CostPerHr
	r.Phase = state.PhaseBooting
	if err := a.store.Save(r); err != nil {
		return err
	}
	deadline := "none"
	if !r.Deadline.IsZero() {
		deadline = r.Deadline.Local().Format(time.DateTime)
	}
	a.say("pod %s (%s) created: %s x%d, %s/h; deadline %s", pod.ID, r.PodName, f.gpu, f.gpuCount, money(pod.CostPerHr), deadline)
	return a.follow(ctx, r, followOpts{followFlags: f.follow, hfToken: hfToken})
}

// hfToken reads the HF token from the launcher's environment variable name.
func (a *app) hfToken(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v := a.getenv(name)
	if v == "" {
		return "", usagef("--hf-token-env %s: the variable is empty or not set", name)
	}
	return v, nil
}

// createFailed cleans up after a failed create: a pod that may exist under
// the run's name (an interrupted or unanswered create) and the secret.
func (a *app) createFailed(r *state.Run, err error) {
	a.say("error: %v", err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if r.SecretID != "" {
		if pods, lerr := a.api.ListPods(ctx, runpod.ListPodsOptions{Name: r.PodName}); lerr != nil {
			a.say("could not check whether pod %s exists: %v; see \"launch ls\" and \"launch rm %s\"", r.PodName, lerr, r.ID)
		} else {
			for _, p := range pods {
				r.PodID = p.ID
				a.deletePod(ctx, r)
			}
		}
	}
	a.deleteSecret(ctx, r)
	r.Phase = state.PhaseFailed
	r.Note = err.Error()
	if serr := a.store.Save(r); serr != nil {
		a.say("saving the run: %v", serr)
	}
}
