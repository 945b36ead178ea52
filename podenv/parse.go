package podenv

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// ContractVersion numbers the rules a pod's env is written by: a reader
// (a sweeper of another release) learns from OVERBRAINER_CONTRACT which
// ones a pod was made with, and refuses to judge a pod of a contract newer
// than its own. A pod whose env has no OVERBRAINER_CONTRACT is of
// contract 1, the one before it was written.
//
// 2: OVERBRAINER_CONTRACT is written, OVERBRAINER_VERSION is the
// module's version from the build ([BuildVersion]), and a pod with a
// deadline always says its OVERBRAINER_MAX_EXTENSION (the default too).
//
// 3: a kept pod always says its OVERBRAINER_KEEP_IDLE (0: unbounded), the
// idle time after which its watchdog deletes it.
const ContractVersion = 3

// The names of the pod's env that this package owns: [Settings.Env]
// writes them, the bootstrap and the watchdog read them, and [Parse]
// reads them back. No Go code outside podenv, the watchdog and the
// bootstrap spells them (a test keeps it so): a reader uses Parse, and a
// test or a tool that must name one (to garble it, or to run the watchdog
// alone) uses these constants.
const (
	RunIDEnv         = "OVERBRAINER_RUN_ID"
	WorkdirEnv       = "OVERBRAINER_WORKDIR"
	RunDirEnv        = "OVERBRAINER_RUN_DIR"
	BootGraceEnv     = "OVERBRAINER_BOOT_GRACE"
	RetrieveGraceEnv = "OVERBRAINER_RETRIEVE_GRACE"
	KeepEnv          = "OVERBRAINER_KEEP_POD"
	// APIURLEnv is the API the watchdog calls; a local emulator that
	// plays Runpod points it at itself.
	APIURLEnv        = "OVERBRAINER_API_URL"
	AuthorizedKeyEnv = "OVERBRAINER_AUTHORIZED_KEY"
	ClaimEnv         = "OVERBRAINER_CLAIM"
	VersionEnv       = "OVERBRAINER_VERSION"
	ContractEnv      = "OVERBRAINER_CONTRACT"
	DeadlineEnv      = "OVERBRAINER_DEADLINE"
	// SecretEnvEnv lists the pod's variables kept out of the job's env.
	SecretEnvEnv    = "OVERBRAINER_SECRET_ENV"
	VolumeDirEnv    = "OVERBRAINER_VOLUME_DIR"
	VolumeGBEnv     = "OVERBRAINER_VOLUME_GB"
	MaxExtensionEnv = "OVERBRAINER_MAX_EXTENSION"
	IntervalEnv     = "OVERBRAINER_INTERVAL"
	LeaseTTLEnv     = "OVERBRAINER_LEASE_TTL"
	SnapshotLeadEnv = "OVERBRAINER_SNAPSHOT_LEAD"
	SnapshotWaitEnv = "OVERBRAINER_SNAPSHOT_WAIT"
	ProbeTriesEnv   = "OVERBRAINER_PROBE_TRIES"
	ProbeWaitEnv    = "OVERBRAINER_PROBE_WAIT"
	StallAfterEnv   = "OVERBRAINER_STALL_AFTER"
	MinGPUUtilEnv   = "OVERBRAINER_MIN_GPU_UTIL"
	// ProgressEnv is in the job's environment, not the pod's: the path
	// of the job's progress file (watchdog.Progress in the run
	// directory). A job may append one line a step to it, words of
	// key=value such as `step=120 total=5000 loss=0.91`; step and total
	// let the launcher tell the pace. A new line counts as the job
	// moving (Rules.StallAfter), as new output does.
	ProgressEnv = "OVERBRAINER_PROGRESS"
	// KeepIdleEnv is a kept pod's idle bound in seconds, 0 for none.
	KeepIdleEnv = "OVERBRAINER_KEEP_IDLE"
	// PodVolumeGBEnv is the pod volume's size in GB (Settings.PodVolumeGB).
	PodVolumeGBEnv = "OVERBRAINER_POD_VOLUME_GB"
	// TakeOverEnv is 1 on a pod that takes its run directory over from
	// a lost pod of its run (Settings.TakeOver).
	TakeOverEnv = "OVERBRAINER_TAKE_OVER"
	// jupyterEnv keeps the image's Jupyter from starting.
	jupyterEnv = "JUPYTER_DISABLE"
	// bootFailedEnv is set by the bootstrap, for the watchdog, when the
	// bootstrap failed.
	bootFailedEnv = "OVERBRAINER_BOOT_FAILED"
)

// owned are the names of the pod's contract: those Env writes, and the
// one the bootstrap sets for the watchdog.
var owned = map[string]bool{
	RunIDEnv: true, HostKeyEnv: true, WorkdirEnv: true, RunDirEnv: true, BootGraceEnv: true,
	RetrieveGraceEnv: true, KeepEnv: true, APIURLEnv: true, AuthorizedKeyEnv: true, ClaimEnv: true,
	VersionEnv: true, ContractEnv: true, DeadlineEnv: true, SecretEnvEnv: true, VolumeDirEnv: true,
	VolumeGBEnv: true, MaxExtensionEnv: true, IntervalEnv: true, LeaseTTLEnv: true, SnapshotLeadEnv: true,
	SnapshotWaitEnv: true, ProbeTriesEnv: true, ProbeWaitEnv: true, MaxCostEnv: true, jupyterEnv: true,
	bootFailedEnv: true, StallAfterEnv: true, MinGPUUtilEnv: true, ProgressEnv: true, KeepIdleEnv: true,
	TakeOverEnv: true, PodVolumeGBEnv: true,
}

// Owns says the pod's contract owns the variable name: a user's extra env
// (guard's Spec.PodEnv, the launcher's --pod-env) may not set it, or it
// could undo a rule the watchdog relies on or a reader's judgment of the
// pod. The watchdog's and the bootstrap's seams for tests (OVERBRAINER_DU,
// OVERBRAINER_SSHD, timeouts) are not the contract's.
func Owns(name string) bool { return owned[name] }

// BuildVersion is the SDK's version as the build knows it: the module's
// version when a program requires it (or is it, built from a version),
// else [Version]. It goes to the pod as OVERBRAINER_VERSION.
func BuildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	const module = "github.com/overbrainer/overbrainer-go"
	for _, m := range append([]*debug.Module{&info.Main}, info.Deps...) {
		if m.Path != module {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
		}
		if v := strings.TrimPrefix(m.Version, "v"); v != "" && v != "(devel)" {
			return v
		}
	}
	return Version
}

// Pod is what a pod's env says, read back by [Parse].
type Pod struct {
	// Settings are those the env was written from, with the defaults Env
	// filled in (BootGrace, RetrieveGrace, APIURL) and durations in whole
	// seconds. The host key is not among them: its value is a reference
	// to a secret.
	Settings
	// Version is the SDK version that made the pod (OVERBRAINER_VERSION).
	Version string
	// Contract is the contract the env was written by (ContractVersion
	// of the SDK that made it; 1 when it does not say).
	Contract int
}

// EnvError reports a variable of a pod's env that Parse cannot read. It
// quotes at most the start of the value, never a key.
type EnvError struct {
	Name   string
	Reason string
}

func (e *EnvError) Error() string { return "podenv: " + e.Name + ": " + e.Reason }

// Parse reads a pod's env as [Settings.Env] wrote it, by the rules the
// watchdog reads it with: a number is 1 to 10 decimal digits (leading
// zeros allowed; no sign, space or point), keep mode is 0 or 1. A
// variable Env always writes that is missing, a value the watchdog would
// not read, or settings that would not validate is an error naming the
// variable: a reader that cannot read a pod must not guess. The one
// exception is OVERBRAINER_STALL_AFTER, which a pod of the releases
// before the stall rule was opt-in lacks when its rule was the default:
// it is read as [LegacyStallAfter], the rule on, as that pod's watchdog
// applies it. A contract
// newer than [ContractVersion] is refused too: its rules are unknown.
// Unknown names are ignored.
func Parse(env map[string]string) (Pod, error) {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, &EnvError{Name: name, Reason: fmt.Sprintf(format, args...)})
	}
	need := func(name string) string {
		v, ok := env[name]
		if !ok {
			bad(name, "is missing")
		}
		return v
	}
	seconds := func(name string, required bool) (time.Duration, bool) {
		v, ok := env[name]
		if !ok {
			if required {
				bad(name, "is missing")
			}
			return 0, false
		}
		n, ok := number(v)
		if !ok {
			bad(name, "%q is not 1 to 10 decimal digits", clip(v))
			return 0, false
		}
		if n > maxKnob {
			bad(name, "%d is more than the watchdog can count", n)
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	var p Pod
	s := &p.Settings
	s.RunID = need(RunIDEnv)
	s.Workdir = need(WorkdirEnv)
	if runDir := need(RunDirEnv); runDir != "" && s.Workdir != "" && runDir != s.RunDir() {
		bad(RunDirEnv, "%q is not %s/%s", clip(runDir), clip(s.Workdir), clip(s.RunID))
	}
	switch v, ok := env[KeepEnv]; {
	case !ok:
		bad(KeepEnv, "is missing")
	case v == "1":
		s.Keep = true
	case v != "0":
		bad(KeepEnv, "%q is neither 0 nor 1", clip(v))
	}
	s.APIURL = need(APIURLEnv)
	s.AuthorizedKey = need(AuthorizedKeyEnv)
	s.Claim = need(ClaimEnv)
	p.Version = need(VersionEnv)
	p.Contract = 1
	if v, ok := env[ContractEnv]; ok {
		n, ok := number(v)
		switch {
		case !ok || n == 0:
			bad(ContractEnv, "%q is not a contract number", clip(v))
		case n > ContractVersion:
			bad(ContractEnv, "%d is newer than this SDK's contract %d: its rules are unknown here", n, ContractVersion)
		default:
			p.Contract = int(n)
		}
	}
	if v, ok := env[DeadlineEnv]; ok {
		if n, ok := number(v); ok && n <= maxKnob {
			s.Deadline = time.Unix(n, 0)
		} else {
			bad(DeadlineEnv, "%q is not a Unix time the watchdog reads", clip(v))
		}
	}
	if v, ok := env[SecretEnvEnv]; ok {
		s.SecretEnv = strings.Split(v, ",")
	}
	s.VolumeDir = env[VolumeDirEnv]
	if v, ok := env[VolumeGBEnv]; ok {
		if n, ok := number(v); ok && n > 0 {
			s.VolumeGB = int(n)
		} else {
			bad(VolumeGBEnv, "%q is not a positive number of GB", clip(v))
		}
	}
	if v, ok := env[PodVolumeGBEnv]; ok {
		if n, ok := number(v); ok && n > 0 {
			s.PodVolumeGB = int(n)
		} else {
			bad(PodVolumeGBEnv, "%q is not a positive number of GB", clip(v))
		}
	}
	for _, k := range s.knobs() {
		if d, ok := seconds(k.env, k.always); ok {
			k.set(int64(d / time.Second))
		}
	}
	if _, set := env[MaxExtensionEnv]; set {
		// Said as zero: the deadline is hard.
		s.HardDeadline = s.MaxExtension == 0
	} else if p.Contract >= 2 && !s.Deadline.IsZero() {
		bad(MaxExtensionEnv, "is missing, with a deadline")
	} else if !s.Deadline.IsZero() {
		// Contract 1 wrote no extension: its watchdog took the default
		// of then.
		s.MaxExtension = LegacyMaxExtension
	}
	switch _, set := env[KeepIdleEnv]; {
	case !s.Keep:
		// Only a kept pod has the bound; Env writes none for another.
		s.KeepIdle = 0
	case set:
		// Said as zero: kept unbounded.
		s.KeepUnbounded = s.KeepIdle == 0
	case p.Contract >= 3:
		bad(KeepIdleEnv, "is missing, with keep mode")
	default:
		// Before contract 3 a kept pod had no idle bound.
		s.KeepUnbounded = true
	}
	if _, set := env[StallAfterEnv]; !set {
		// A pod of before the rule was opt-in (Env writes it always
		// now): its watchdog took the default of then, the rule on.
		s.StallAfter = LegacyStallAfter
	}
	switch v, ok := env[TakeOverEnv]; {
	case !ok:
	case v == "1":
		s.TakeOver = true
	default:
		bad(TakeOverEnv, "%q is not 1", clip(v))
	}
	if v, ok := env[MaxCostEnv]; ok {
		c, err := strconv.ParseFloat(v, 64)
		if !dollars.MatchString(v) || err != nil || math.IsInf(c, 0) {
			bad(MaxCostEnv, "%q is not an amount of dollars", clip(v))
		} else {
			s.MaxCostUSD = c
		}
	}
	if len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	if err := s.Validate(); err != nil {
		return p, fmt.Errorf("podenv: the pod's env does not make valid settings: %w", err)
	}
	return p, nil
}

// dollars is an amount as Env writes it: digits, then maybe a point and
// digits.
var dollars = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// number reads a number as the watchdog's number function does: 1 to 10
// decimal digits once the leading zeros are dropped, and nothing else.
func number(v string) (int64, bool) {
	if v == "" || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	v = strings.TrimLeft(v, "0")
	if len(v) > 10 {
		return 0, false
	}
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}
