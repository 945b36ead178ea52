package podenv

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Rules are the rules a run's pod is ended by: its deadline and how long a
// lease may hold it past it, its cost cap, keep mode, the graces, and the
// watchdog's knobs. They are one type, embedded where they are needed
// ([Settings] here, guard's Spec and Record) rather than copied field by
// field, so that each rule is declared, defaulted ([Rules.EffectiveRules])
// and checked ([Rules.CheckRules]) in one place.
//
// A zero field is its default (the Default constants), except Deadline
// (zero is no deadline), MaxCostUSD (zero is no cap), StallAfter and
// MinGPUUtil (zero is off). Durations reach
// the pod in whole seconds, rounded up, so that a set knob is never the
// script's own zero.
//
// The JSON names are those of a saved guard.Record, which embeds Rules:
// its file stays flat and reads as it did before this type existed.
//
// A new knob of the watchdog is a field here, its default in
// EffectiveRules, and a line in knobs (its variable in the pod's env),
// which gives it its checks, its place in Env and its reading in Parse.
type Rules struct {
	// Deadline is when the watchdog deletes the pod unless a client holds
	// the lease. Zero means no deadline (a kept pod).
	Deadline time.Time `json:"deadline,omitzero"`
	// MaxExtension is how long past the Deadline a fresh lease may hold
	// the pod; zero means DefaultMaxExtension, and HardDeadline, not a
	// zero, asks for none (the launcher's --max-extension 0 sets
	// HardDeadline). The watchdog deletes the pod at Deadline plus
	// MaxExtension whatever the lease (asking the job for a snapshot
	// SnapshotLead before), and so do a following client and a sweeper
	// off the pod, which reads it from the env.
	MaxExtension time.Duration `json:"max_extension,omitempty"`
	// HardDeadline makes the deadline hard: no lease holds the pod past
	// it (an extension of zero). MaxExtension must then be zero.
	HardDeadline bool `json:"hard_deadline,omitempty"`
	// MaxCostUSD is the run's cost cap in dollars, zero for none: the job
	// is asked for a snapshot at 95% (or SnapshotLead before) and the pod
	// is deleted at 100%, whatever the lease. The watchdog learns the cap's
	// times from the client (.pod/cost_cap_at); the env carries the cap
	// so that a sweeper, which sees only the API, can judge a pod's spend.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// Keep (--keep-pod) stops the watchdog from deleting the pod once the
	// job exists; before that, the boot grace and a failed bootstrap still
	// apply. Once the job ended, the pod stays while it is in use, and its
	// watchdog ends it after KeepIdle without use (KeepUnbounded lifts
	// that bound): it stops a pod with a pod volume (Settings.PodVolumeGB),
	// which keeps the volume's data until the run is removed, and deletes
	// any other; an explicit delete of the run ends it at any time.
	Keep bool `json:"keep,omitempty"`
	// KeepIdle is how long a kept pod stays once its job ended unused: no
	// SSH session of any user open on it, no process outside the guard's
	// own using CPU, no GPU at least MinGPUUtil busy, no touch of its
	// lease; zero means
	// DefaultKeepIdle, and KeepUnbounded, not a zero, asks for no bound
	// (the launcher's --keep-idle 0 sets KeepUnbounded). Only a kept pod
	// has it.
	KeepIdle time.Duration `json:"keep_idle,omitempty"`
	// KeepUnbounded keeps a kept pod however long it stays unused
	// (--keep-idle 0): only an explicit delete ends it. KeepIdle must be
	// zero then, and Keep set.
	KeepUnbounded bool `json:"keep_unbounded,omitempty"`
	// BootGrace is how long the watchdog waits for a job to start before it
	// deletes the pod; zero means DefaultBootGrace.
	BootGrace time.Duration `json:"boot_grace"`
	// RetrieveGrace is how long the watchdog keeps a pod whose job ended
	// without the client retrieving the results; zero means
	// DefaultRetrieveGrace.
	RetrieveGrace time.Duration `json:"retrieve_grace"`
	// Interval is how often the watchdog looks at the run when no rule
	// falls due sooner; zero means DefaultInterval.
	Interval time.Duration `json:"interval,omitempty"`
	// LeaseTTL is how long a touch of the client's lease holds off the
	// deadline and the abandoned rule; zero means DefaultLeaseTTL.
	LeaseTTL time.Duration `json:"lease_ttl,omitempty"`
	// SnapshotLead is how long before the deadline (with a stale lease) or
	// the cost cap the job is asked for a snapshot; zero means
	// DefaultSnapshotLead.
	SnapshotLead time.Duration `json:"snapshot_lead"`
	// SnapshotWait is how long a snapshot the watchdog asked for holds the
	// deadline off while the job still runs; zero means
	// DefaultSnapshotWait.
	SnapshotWait time.Duration `json:"snapshot_wait,omitempty"`
	// ProbeTries is how many times the watchdog tries the pod's key on
	// the pod (after no answer, 408, 429 or 5xx) before its verdict is
	// failed; zero means DefaultProbeTries.
	ProbeTries int `json:"probe_tries,omitempty"`
	// ProbeWait is the pause between those tries; zero means
	// DefaultProbeWait.
	ProbeWait time.Duration `json:"probe_wait,omitempty"`
	// StallAfter (--stall-after) turns the stalled rule on: a running job
	// that has not moved for StallAfter is asked for a snapshot, and its
	// pod deleted a SnapshotWait later if it still has not moved. Zero
	// (the default) is off: the pod's env then says 0, its watchdog
	// deletes nothing for a stall, and a following client only tells a
	// job that has not moved for StallWarnAfter. The job moves when its
	// output (job.log) grows, its progress file (ProgressEnv) gets a new
	// line, a file under its outputs changes, its process group uses a
	// tenth of a core, or (MinGPUUtil) a GPU is busy. A following
	// launcher stops renewing the lease by the same rule, when it is on.
	StallAfter time.Duration `json:"stall_after,omitempty"`
	// MinGPUUtil (--min-gpu-util), a percentage from 1 to 100, makes a GPU
	// at least that busy (by nvidia-smi, where the pod has it) count as
	// movement (for StallAfter and for StallWarnAfter); zero leaves the
	// GPU out.
	MinGPUUtil int `json:"min_gpu_util,omitempty"`
}

// EffectiveRules returns the rules as the watchdog applies them: every
// zero knob replaced by its default, the extension zero for a hard
// deadline, KeepIdle zero when KeepUnbounded. Deadline, MaxCostUSD, Keep,
// StallAfter and MinGPUUtil are returned as they are (a zero StallAfter
// is the stall rule off).
func (r Rules) EffectiveRules() Rules {
	or := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	or(&r.BootGrace, DefaultBootGrace)
	or(&r.RetrieveGrace, DefaultRetrieveGrace)
	or(&r.Interval, DefaultInterval)
	or(&r.LeaseTTL, DefaultLeaseTTL)
	or(&r.SnapshotLead, DefaultSnapshotLead)
	or(&r.SnapshotWait, DefaultSnapshotWait)
	or(&r.ProbeWait, DefaultProbeWait)
	if r.ProbeTries == 0 {
		r.ProbeTries = DefaultProbeTries
	}
	if !r.HardDeadline {
		or(&r.MaxExtension, DefaultMaxExtension)
	}
	if !r.KeepUnbounded {
		or(&r.KeepIdle, DefaultKeepIdle)
	}
	return r
}

// knob is one of the watchdog's knobs: a field of Rules and its variable
// in the pod's env.
type knob struct {
	field, env string
	d          *time.Duration // a duration, or
	n          *int           // a count
	// always: Env writes it (its default when zero) and Parse needs it.
	always bool
}

// knobs lists the watchdog's knobs in r, pointing into r.
func (r *Rules) knobs() []knob {
	return []knob{
		{field: "BootGrace", env: BootGraceEnv, d: &r.BootGrace, always: true},
		{field: "RetrieveGrace", env: RetrieveGraceEnv, d: &r.RetrieveGrace, always: true},
		{field: "Interval", env: IntervalEnv, d: &r.Interval},
		{field: "LeaseTTL", env: LeaseTTLEnv, d: &r.LeaseTTL},
		{field: "SnapshotLead", env: SnapshotLeadEnv, d: &r.SnapshotLead},
		{field: "SnapshotWait", env: SnapshotWaitEnv, d: &r.SnapshotWait},
		{field: "ProbeTries", env: ProbeTriesEnv, n: &r.ProbeTries},
		{field: "ProbeWait", env: ProbeWaitEnv, d: &r.ProbeWait},
		{field: "MaxExtension", env: MaxExtensionEnv, d: &r.MaxExtension},
		{field: "StallAfter", env: StallAfterEnv, d: &r.StallAfter},
		{field: "MinGPUUtil", env: MinGPUUtilEnv, n: &r.MinGPUUtil},
		{field: "KeepIdle", env: KeepIdleEnv, d: &r.KeepIdle},
	}
}

// value is the knob as the pod gets it: whole seconds (rounded away from
// zero), or the count.
func (k knob) value() int64 {
	if k.d != nil {
		return seconds(*k.d)
	}
	return int64(*k.n)
}

// set stores n, read from the env, in the knob's field.
func (k knob) set(n int64) {
	if k.d != nil {
		*k.d = time.Duration(n) * time.Second
	} else {
		*k.n = int(n)
	}
}

// String is the field's value, for errors.
func (k knob) String() string {
	if k.d != nil {
		return k.d.String()
	}
	return strconv.Itoa(*k.n)
}

func (k knob) unit() string {
	if k.d != nil {
		return " s"
	}
	return ""
}

// CheckRules reports every rule the watchdog could not apply, as
// *FieldError values joined; nil when all can be. It is the one check of
// the rules: Settings.Validate and guard's Spec use it.
func (r Rules) CheckRules() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	if !r.Deadline.IsZero() {
		// The watchdog compares the deadline, and the deadline plus the
		// retrieve grace, with the pod's clock: under mksh in 32 bits,
		// where a later time wraps negative and reads as long passed.
		// (The script's own limit, 10 digits, is the year 2286.)
		retrieve := r.EffectiveRules().RetrieveGrace
		at := r.Deadline.UTC().Format(time.RFC3339)
		switch u := r.Deadline.Unix(); {
		case r.Deadline.Before(time.Unix(0, 0)):
			bad("Deadline", "%s is before 1970", at)
		case u > maxKnob:
			bad("Deadline", "%s is past %s, the last second the watchdog can count (mksh computes with 32 bits)",
				at, time.Unix(maxKnob, 0).UTC().Format(time.RFC3339))
		case retrieve > 0 && seconds(retrieve) <= maxKnob && u+seconds(retrieve) > maxKnob:
			bad("Deadline", "%s plus the retrieve grace (%s) is past %s, the last second the watchdog can count",
				at, retrieve, time.Unix(maxKnob, 0).UTC().Format(time.RFC3339))
		}
	}
	for _, k := range r.knobs() {
		switch n := k.value(); {
		case n < 0:
			bad(k.field, "%s is negative", k)
		case n > maxKnob:
			bad(k.field, "%s is more than the watchdog can count (%d%s: mksh computes with 32 bits)", k, maxKnob, k.unit())
		}
	}
	if r.MinGPUUtil > 100 {
		bad("MinGPUUtil", "%d is more than 100 percent", r.MinGPUUtil)
	}
	if r.MaxExtension > LongestExtension {
		bad("MaxExtension", "%s is longer than %s", r.MaxExtension, LongestExtension)
	}
	if r.HardDeadline && r.MaxExtension != 0 {
		bad("MaxExtension", "%s is set with HardDeadline, which means no extension", r.MaxExtension)
	}
	switch {
	case r.KeepUnbounded && !r.Keep:
		bad("KeepUnbounded", "is set without Keep")
	case r.KeepUnbounded && r.KeepIdle != 0:
		bad("KeepIdle", "%s is set with KeepUnbounded, which means no idle bound", r.KeepIdle)
	}
	switch c := r.MaxCostUSD; {
	case math.IsNaN(c) || math.IsInf(c, 0):
		bad("MaxCostUSD", "%v is not a number of dollars", c)
	case c < 0:
		bad("MaxCostUSD", "%v is negative", c)
	case c > maxKnob:
		bad("MaxCostUSD", "%v is more than %d dollars", c, maxKnob)
	}
	return errors.Join(errs...)
}
