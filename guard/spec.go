package guard

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Defaults of a Spec's empty fields.
const (
	DefaultImage        = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
	DefaultMinCUDA      = "12.4" // DefaultImage's CUDA floor
	DefaultGPU          = "NVIDIA GeForce RTX 4090"
	DefaultDiskGB       = 50
	DefaultVolumePath   = "/workspace"
	DefaultMaxResultsGB = 100 // Results.MaxGB
)

// Rules are the watchdog's rules, podenv's type: a Spec sets its required
// deadline as Rules: guard.Rules{Deadline: t}, without importing podenv.
type Rules = podenv.Rules

// Spec says what pod a run gets and the rules its watchdog ends it by. Zero
// fields take the defaults; Deadline is required unless Keep is set.
type Spec struct {
	RunID string // 1 to 64 of [A-Za-z0-9_-]; empty: podenv.NewRunID makes one
	Job   Job    // what Start uploads and runs

	Image           string           // DefaultImage when empty
	RegistryAuthID  string           // for a private Image: see runpod.Client.ListRegistries
	GPUTypes        []string         // tried in order (see Launch); a lone AutoGPU picks from live stock
	GPUTypeID       string           // the one-type form; DefaultGPU when both are empty
	MinVRAMGB       int              // AutoGPU only: 0 is any
	MaxPricePerGPU  float64          // AutoGPU only, USD per GPU and hour: 0 is any
	DataCenters     []string         // any when empty, or AutoDataCenter; must hold a network volume's
	MinCUDA         string           // the host driver's CUDA floor: DefaultMinCUDA on DefaultImage
	GPUCount        int              // 1 when 0
	CPUFlavor       string           // a CPU pod of this flavor (runpod.Client.ListCPUTypes) in place of a GPU: no GPU field, volume nor capacity wait
	VCPUs           int              // CPUFlavor's vCPUs, a power of two: 2 when 0
	Cloud           runpod.CloudType // SECURE when empty
	DiskGB          int              // container disk, DefaultDiskGB when 0
	VolumeGB        int              // a pod volume at VolumePath
	NetworkVolumeID string           // or a network volume there (not both)
	MaxVolumeGB     int              // grow a filling network volume up to this; 0: ask for a disk snapshot
	NoVolumeCaches  bool             // keep the job's caches (HF_HOME, TORCH_HOME, PIP_CACHE_DIR) off the network volume's .cache/
	VolumePath      string           // DefaultVolumePath when empty
	Workdir         string           // for run directories: VolumePath/overbrainer when empty

	Rules // deadline, cost cap, keep mode, graces, watchdog knobs: Follow enforces them too
	// CapacityWait: how long Launch waits with no pod for capacity, not past the
	// Deadline (DeadlineFromCreate: moved on by the wait), before ErrNoGPU.
	CapacityWait       time.Duration
	DeadlineFromCreate bool
	Recover            Recovery // go on on a new pod when the pod is lost; zero never does

	WatchdogAPIURL string            // the API the watchdog calls: the client's when empty
	PodEnv         map[string]string // more pod variables: never a secret, Runpod's console shows them
	Results        Results
}

// Job is a job to run. It writes its results into $OVERBRAINER_OUTPUTS and,
// when $OVERBRAINER_SNAPSHOT_REQUEST appears, checkpoints there and exits.
type Job struct {
	Dir     string // the local directory uploaded to the run directory's job/
	Command string // run with sh in that directory, after the pod's job.env
	// Secrets reach the job's environment alone, over the start session's stdin:
	// never a command line, the pod's env, a file, a Record, an Event or an error.
	Secrets    map[string]string
	ResumeFrom string // earlier outputs put into $OVERBRAINER_OUTPUTS first, to resume from
}

func (j Job) check(prefix string, results Results) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &podenv.FieldError{Field: prefix + field, Reason: fmt.Sprintf(format, args...)})
	}
	if j.Dir == "" {
		bad("Dir", "is empty")
	} else if fi, err := os.Stat(j.Dir); err != nil || !fi.IsDir() {
		bad("Dir", "%s is not a directory", j.Dir)
	}
	if strings.TrimSpace(j.Command) == "" {
		bad("Command", "is empty")
	}
	for _, name := range slices.Sorted(maps.Keys(j.Secrets)) {
		if err := CheckSecretName(name); err != nil {
			bad("Secrets", "%s", err)
		} else if strings.Contains(j.Secrets[name], "\x00") {
			bad("Secrets", "the value of %s contains a NUL byte", name)
		}
	}
	return append(errs, j.checkResume(prefix, results.maxBytes())...)
}

// secrets is a copy of the job's secrets, for the run to keep.
func (j Job) secrets() map[string]string { return maps.Clone(j.Secrets) }

// withDefaults fills the empty fields.
func (s Spec) withDefaults() Spec {
	s.Image = cmp.Or(s.Image, DefaultImage)
	if s.CPUFlavor != "" {
		s.VCPUs = cmp.Or(s.VCPUs, 2)
	} else {
		if s.Image == DefaultImage {
			s.MinCUDA = cmp.Or(s.MinCUDA, DefaultMinCUDA)
		}
		if len(s.GPUTypes) == 0 {
			s.GPUTypes = []string{cmp.Or(s.GPUTypeID, DefaultGPU)}
		}
		if s.GPUCount == 0 {
			s.GPUCount = 1
		}
	}
	if s.Cloud == "" {
		s.Cloud = runpod.SecureCloud
	}
	if s.DiskGB == 0 {
		s.DiskGB = DefaultDiskGB
	}
	if s.VolumePath == "" {
		s.VolumePath = DefaultVolumePath
	}
	if s.Workdir == "" {
		s.Workdir = path.Join(s.VolumePath, "overbrainer")
	}
	s.Rules = s.EffectiveRules()
	for _, dir := range []*string{&s.Job.Dir, &s.Job.ResumeFrom} {
		if *dir != "" {
			if abs, err := filepath.Abs(*dir); err == nil {
				*dir = abs
			}
		}
	}
	return s
}

// check reports every field that cannot be armed, before any pod exists.
func (s Spec) check(now time.Time) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &podenv.FieldError{Field: "Spec." + field, Reason: fmt.Sprintf(format, args...)})
	}
	if err := podenv.CheckRunID(s.RunID); err != nil {
		bad("RunID", "%v", err)
	}
	errs = append(errs, s.Job.check("Spec.Job.", s.Results)...)
	// A secret in the pod's env would be in Runpod's console: refused,
	// by its name or by its value, named, never shown.
	secrets := s.Job.secrets()
	for _, name := range slices.Sorted(maps.Keys(s.PodEnv)) {
		if _, ok := secrets[name]; ok {
			bad("PodEnv", "%s is a secret of the job (Job.Secrets): it must not be in the pod's env too", name)
			continue
		}
		for sname, v := range secrets {
			if len(v) >= minRedacted && strings.Contains(s.PodEnv[name], v) {
				bad("PodEnv", "%s holds the value of the job's secret %s", name, sname)
			}
		}
	}
	switch {
	case s.Deadline.IsZero() && !s.Keep:
		bad("Deadline", "is not set, and Keep is not: without a deadline nothing would end a hung job")
	case !s.Deadline.IsZero() && !s.Deadline.After(now):
		bad("Deadline", "%s has passed", s.Deadline.Format(time.RFC3339))
	case !s.Deadline.IsZero():
		// A sweeper bounds the need of the run's host key by it.
		start, reach := now, s.Deadline
		if t, ok := podenv.RunIDTime(s.RunID); ok {
			start = t
		}
		if s.DeadlineFromCreate {
			reach = reach.Add(s.CapacityWait)
		}
		if reach.After(start.Add(podenv.MaxDeadlineAhead)) {
			bad("Deadline", "%s (with the capacity wait, if it moves the deadline) is more than %s after the run's start",
				s.Deadline.Format(time.RFC3339), podenv.MaxDeadlineAhead)
		}
	}
	s.checkGPUs(bad)
	if err := checkRegistryAuth(s.RegistryAuthID); err != nil {
		bad("RegistryAuthID", "%v", err)
	}
	if s.CPUFlavor != "" {
		s.checkCPU(bad)
	} else if s.GPUCount < 1 {
		bad("GPUCount", "%d is less than 1", s.GPUCount)
	}
	if s.Cloud != runpod.SecureCloud && s.Cloud != runpod.CommunityCloud {
		bad("Cloud", "%q is neither SECURE nor COMMUNITY", s.Cloud)
	}
	if s.DiskGB < 0 {
		bad("DiskGB", "%d is negative", s.DiskGB)
	}
	if s.VolumeGB < 0 {
		bad("VolumeGB", "%d is negative", s.VolumeGB)
	}
	if s.VolumeGB > 0 && s.NetworkVolumeID != "" {
		bad("VolumeGB", "is set with NetworkVolumeID: a pod mounts one volume")
	}
	switch {
	case s.MaxVolumeGB < 0 || s.MaxVolumeGB > runpod.MaxVolumeGB:
		bad("MaxVolumeGB", "%d is not between 0 and Runpod's largest, %d", s.MaxVolumeGB, runpod.MaxVolumeGB)
	case s.MaxVolumeGB > 0 && s.NetworkVolumeID == "":
		bad("MaxVolumeGB", "is set without NetworkVolumeID: only a network volume grows")
	}
	if !path.IsAbs(s.VolumePath) {
		bad("VolumePath", "%q is not absolute", s.VolumePath)
	}
	if !path.IsAbs(s.Workdir) {
		bad("Workdir", "%q is not absolute", s.Workdir)
	}
	for _, err := range unjoin(s.CheckRules()) {
		var fe *podenv.FieldError
		if errors.As(err, &fe) {
			bad(fe.Field, "%s", fe.Reason)
		}
	}
	if s.CapacityWait < 0 {
		bad("CapacityWait", "%s is negative", s.CapacityWait)
	}
	s.checkRecover(bad)
	errs = append(errs, s.Results.check("Spec.Results.")...)
	for k := range s.PodEnv {
		switch {
		case !envName.MatchString(k):
			bad("PodEnv", "%q is not a variable name", k)
		case podenv.Owns(k):
			// The watchdog and the bootstrap rely on them as Env set them.
			bad("PodEnv", "%s belongs to the pod's contract: set it through the Spec, not PodEnv", k)
		}
	}
	return errors.Join(errs...)
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// volumeCaches are the job's default HF_HOME, TORCH_HOME and PIP_CACHE_DIR
// under volumeDir/.cache, to keep caches across pods; the pod's env wins.
func volumeCaches(volumeDir string) map[string]string {
	dir := path.Join(volumeDir, ".cache")
	return map[string]string{
		"HF_HOME":       path.Join(dir, "huggingface"),
		"TORCH_HOME":    path.Join(dir, "torch"),
		"PIP_CACHE_DIR": path.Join(dir, "pip"),
	}
}

// jobDefaults are the job's default variables: the caches on the network
// volume, unless the run turned them off.
func (rec Record) jobDefaults() map[string]string {
	if rec.NetworkVolumeID == "" || rec.VolumeDir == "" || rec.NoVolumeCaches {
		return nil
	}
	return volumeCaches(rec.VolumeDir)
}

// unjoin lists the errors that errors.Join joined into err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// CheckSecretName refuses a name Job.Secrets may not use: one that is not a
// variable name, is the shell's own, or starts with OVERBRAINER_ or RUNPOD_.
func CheckSecretName(name string) error {
	if err := jobctl.CheckEnvName(name); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "jobctl: "))
	}
	return nil
}

// checkRegistryAuth refuses a registry credential id that could not be
// one of Runpod's: ids are short runs of letters, digits, '-' and '_'.
func checkRegistryAuth(id string) error {
	if id == "" {
		return nil
	}
	if len(id) > 64 {
		return fmt.Errorf("%d characters, more than 64", len(id))
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return fmt.Errorf("%q is not an id of letters, digits, '-' and '_' (see launch registries)", id)
		}
	}
	return nil
}
