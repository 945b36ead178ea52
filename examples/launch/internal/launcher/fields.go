package launcher

import (
	"errors"
	"strings"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// specFlags names the flag that sets each field or option guard checks:
// a value guard refuses is said by its flag, in guard's words, and the
// launcher does not check it again.
var specFlags = map[string]string{
	"Spec.Job.Dir": "--job", "Spec.Job.Command": "--cmd", "Spec.Job.ResumeFrom": "--resume-from", "Spec.Job.Secrets": "--secret",
	"Spec.Image": "--image", "Spec.RegistryAuthID": "--registry-auth", "Spec.GPUTypes": "--gpu", "Spec.GPUCount": "--gpu-count",
	"Spec.Cloud": "--cloud", "Spec.MinVRAMGB": "--min-vram", "Spec.MaxPricePerGPU": "--max-price", "Spec.DataCenters": "--data-center",
	"Spec.MinCUDA": "--min-cuda", "Spec.DiskGB": "--disk-gb", "Spec.VolumeGB": "--volume-gb", "Spec.NetworkVolumeID": "--network-volume",
	"Spec.MaxVolumeGB": "--max-volume-gb", "Spec.VolumePath": "--volume-path", "Spec.Workdir": "--workdir", "Spec.PodEnv": "--pod-env",
	"Spec.Deadline": "--max-hours", "Spec.MaxExtension": "--max-extension", "Spec.MaxCostUSD": "--max-cost-usd",
	"Spec.StallAfter": "--stall-after", "Spec.MinGPUUtil": "--min-gpu-util", "Spec.KeepIdle": "--keep-idle",
	"Spec.BootGrace": "--boot-grace", "Spec.RetrieveGrace": "--retrieve-grace", "Spec.SnapshotLead": "--snapshot-lead",
	"Spec.Interval": "--watchdog-interval", "Spec.LeaseTTL": "--lease-ttl", "Spec.SnapshotWait": "--snapshot-wait",
	"Spec.ProbeTries": "--probe-tries", "Spec.ProbeWait": "--probe-wait", "Spec.CapacityWait": "--wait-for-gpu",
	"Spec.Recover.Times": "--recover", "Spec.Recover.PullEvery": "--pull-every",
	"Spec.Results.MaxGB": "--max-results-gb", "Spec.Results.Exclude": "--exclude",
	"WithPoll": "--poll", "WithLeaseEvery": "--lease-every", "WithStartTimeout": "--start-timeout", "WithVerdictTimeout": "--verdict-timeout",
}

// flagError is a usage error saying each field guard refused by its flag
// ("--gpu-count: 0 is less than 1"); err itself when it names no field.
func flagError(err error) error {
	var says []string
	for _, e := range unjoin(err) {
		var fe *podenv.FieldError
		if !errors.As(e, &fe) {
			return err
		}
		name := fe.Field
		if flag, ok := specFlags[name]; ok {
			name = flag
		}
		says = append(says, name+": "+fe.Reason)
	}
	return usagef("%s", strings.Join(says, "; "))
}

// unjoin is the errors err joins, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// checkSpec refuses, before the run's state exists, what guard.Launch
// would refuse of the run's spec and options.
func (f *runFlags) checkSpec(spec guard.Spec) error {
	if f.job == "" {
		// The demo job is written once the run's state exists.
		spec.Job.Dir = "."
	}
	err := guard.Check(spec, guard.WithPoll(f.poll), guard.WithLeaseEvery(f.leaseEvery),
		guard.WithStartTimeout(f.follow.startTimeout), guard.WithVerdictTimeout(f.follow.verdictTimeout))
	if err != nil {
		return flagError(err)
	}
	return nil
}
