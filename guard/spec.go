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

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Defaults of a Spec's empty fields.
const (
	DefaultImage        = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
	DefaultGPU          = "NVIDIA GeForce RTX 4090"
	DefaultDiskGB       = 50
	DefaultVolumePath   = "/workspace"
	DefaultSnapshotLead = podenv.DefaultSnapshotLead
	// DefaultLeaseTTL is the watchdog's: how long a renewed lease holds.
	DefaultLeaseTTL = podenv.DefaultLeaseTTL
	// DefaultMaxExtension is how long past the deadline a lease may hold.
	DefaultMaxExtension = podenv.DefaultMaxExtension
)

// PodNamePrefix starts every guarded pod's name: the pod of run ID is
// named PodNamePrefix+ID, which is how a run's pod is found again.
const PodNamePrefix = podenv.PodNamePrefix

// Spec says what pod a run gets and by which rules its watchdog ends it.
// Its zero values are the defaults, except Deadline: a run without one
// must set Keep.
type Spec struct {
	// RunID names the run (1 to 64 of [A-Za-z0-9_-]); empty makes one with
	// NewRunID.
	RunID string
	// Job is what Start uploads and runs; its directory must exist.
	Job Job

	Image string // DefaultImage when empty
	// RegistryAuthID names the account's container registry credential
	// (runpod.Client.ListRegistries) that Runpod pulls a private Image
	// with; empty for a public image.
	RegistryAuthID string
	// GPUTypes are the GPU types to try, in order (see the package doc);
	// a lone AutoGPU picks them from live stock. GPUTypeID is the
	// one-type form; set one of the two (DefaultGPU when both are empty).
	GPUTypes       []string
	GPUTypeID      string
	MinVRAMGB      int     // AutoGPU only: 0 is any
	MaxPricePerGPU float64 // AutoGPU only, USD per GPU and hour: 0 is any
	// DataCenters the pod may be placed in (any when empty, a lone
	// AutoDataCenter: those that stock each type); with a network volume,
	// they must include its data center.
	DataCenters []string
	// MinCUDA is the lowest CUDA version of the host's driver
	// (gpu.minCudaVersion), DefaultMinCUDA with DefaultImage; NoMinCUDA
	// sends none.
	MinCUDA  string
	GPUCount int              // 1 when 0
	Cloud    runpod.CloudType // SECURE when empty
	DiskGB   int              // container disk, DefaultDiskGB when 0
	// VolumeGB is a pod volume at VolumePath; NetworkVolumeID a network
	// volume there instead (its size is read from the API).
	VolumeGB        int
	NetworkVolumeID string
	// MaxVolumeGB is the largest a filling network volume may be grown
	// to; zero never grows it (the job is asked for a disk snapshot).
	MaxVolumeGB int
	// NoVolumeCaches keeps the job's caches off the network volume
	// (VolumeCaches).
	NoVolumeCaches bool
	VolumePath     string // DefaultVolumePath when empty
	// Workdir holds run directories on the pod (VolumePath/overbrainer
	// when empty).
	Workdir string

	// Rules are the run's deadline, cost cap, keep mode, graces and the
	// watchdog's knobs (podenv.Rules), which Follow enforces too.
	podenv.Rules
	// CapacityWait is how long Launch waits for a GPU type with capacity
	// (see the package doc); zero fails at once with ErrNoGPU. The wait
	// ends at the Deadline, which DeadlineFromCreate moves on by the wait.
	CapacityWait       time.Duration
	DeadlineFromCreate bool
	// Recover makes Follow go on on a new pod when the pod is lost under
	// the job (see Recovery); zero never does.
	Recover Recovery

	// WatchdogAPIURL is the API the watchdog calls; the client's base URL
	// when empty.
	WatchdogAPIURL string
	// PodEnv adds variables to the pod's environment, which Runpod's
	// console shows: never a secret (Job.Secrets). A name podenv.Owns is
	// refused.
	PodEnv  map[string]string
	Results Results
}

// Job is a job to run on the pod.
type Job struct {
	// Dir is the local directory uploaded to the run directory's job/.
	Dir string
	// Command runs with sh in that directory, after the pod's job.env.
	Command string
	// Secrets are variables of the job's environment alone, name to
	// value (see the package doc): names as CheckSecretName says, values
	// without NUL, at most 100 KiB in all. No Record keeps them: a Start
	// after Attach needs them again (WithSecrets).
	Secrets map[string]string
	// HFToken, when set, is the job's HF_TOKEN, as Secrets["HF_TOKEN"]
	// would be.
	//
	// Deprecated: set Secrets["HF_TOKEN"].
	HFToken string
	// ResumeFrom is a local directory (an earlier run's collected
	// outputs) uploaded into the job's outputs before it starts (see the
	// package doc); its links stay inside it, its size within
	// Results.MaxGB.
	ResumeFrom string
}

func (j Job) check(prefix string, results Results) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: prefix + field, Reason: fmt.Sprintf(format, args...)})
	}
	if j.Dir == "" {
		bad("Dir", "is empty")
	} else if fi, err := os.Stat(j.Dir); err != nil || !fi.IsDir() {
		bad("Dir", "%s is not a directory", j.Dir)
	}
	if strings.TrimSpace(j.Command) == "" {
		bad("Command", "is empty")
	}
	if strings.ContainsAny(j.HFToken, "\r\n\x00") {
		bad("HFToken", "contains a newline or NUL")
	}
	if v, ok := j.Secrets[hfTokenName]; ok && j.HFToken != "" && v != j.HFToken {
		bad("HFToken", "and Secrets[%s] differ", hfTokenName)
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

// hfTokenName is the variable HFToken sets.
const hfTokenName = "HF_TOKEN"

// secrets are the job's secrets, HFToken among them.
func (j Job) secrets() map[string]string {
	s := maps.Clone(j.Secrets)
	if j.HFToken != "" {
		if s == nil {
			s = map[string]string{}
		}
		s[hfTokenName] = j.HFToken
	}
	return s
}

// CheckRunID refuses a run id that could not be a pod name, a secret name
// at Runpod and a directory name (podenv's rule).
func CheckRunID(id string) error { return podenv.CheckRunID(id) }

// NewRunID makes a run id: the UTC time to the second and 4 hex digits,
// e.g. 20260301-120000-a1b2 (see podenv.NewRunID).
func NewRunID(now time.Time) (string, error) { return podenv.NewRunID(now) }

// withDefaults fills the empty fields.
func (s Spec) withDefaults() Spec {
	s.Image = cmp.Or(s.Image, DefaultImage)
	if s.Image == DefaultImage {
		s.MinCUDA = cmp.Or(s.MinCUDA, DefaultMinCUDA)
	}
	if len(s.GPUTypes) == 0 {
		s.GPUTypes = []string{cmp.Or(s.GPUTypeID, DefaultGPU)}
	}
	if s.GPUCount == 0 {
		s.GPUCount = 1
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
		errs = append(errs, &FieldError{Field: "Spec." + field, Reason: fmt.Sprintf(format, args...)})
	}
	if err := CheckRunID(s.RunID); err != nil {
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
	}
	s.checkGPUs(bad)
	if err := checkRegistryAuth(s.RegistryAuthID); err != nil {
		bad("RegistryAuthID", "%v", err)
	}
	if s.GPUCount < 1 {
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

// VolumeCaches are the variables of the job's environment that put the
// caches of Hugging Face, PyTorch and pip under a network volume mounted at
// volumeDir: HF_HOME, TORCH_HOME and PIP_CACHE_DIR under volumeDir/.cache.
// Each is a default: the pod's env (Spec.PodEnv, the image's ENV) or a
// secret of that name wins.
func VolumeCaches(volumeDir string) map[string]string {
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
	return VolumeCaches(rec.VolumeDir)
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
