package watchdog

import "fmt"

// reasonText is one delete reason in words: a line for tables, and a
// paragraph for a run's own output.
type reasonText struct{ summary, explain string }

// reasonTexts is every rule in words; a test checks that each of
// DeleteReasons has its entry and nothing else does.
var reasonTexts = map[DeleteReason]reasonText{
	DeleteBootstrapFailed: {
		"the pod's setup failed, so the watchdog deleted the pod at once (the verdict says which step)",
		"the pod's setup (its bootstrap) failed before any job could run, so its watchdog deleted it at once rather than leave it billing; the verdict says which step failed",
	},
	DeletePodDirUnsafe: {
		"SAFETY STOP: the run directory's .pod was a symlink when the watchdog started, so it deleted the pod at once; check the job and the volume for what replaced .pod",
		"SAFETY STOP. When the pod's watchdog started (at boot, or after the pod restarted), the run directory's .pod " +
			"was a symbolic link (or otherwise not a plain directory), so none of the control files in it (lease, cost cap, " +
			"retrieved marker) could be trusted. The watchdog replaced .pod with a fresh directory and deleted the pod at once: " +
			"it fails closed rather than guard a run it cannot read. Check what replaced .pod with a symlink: the job (a step " +
			"that moves, removes or links the run directory's .pod, or restores the run directory from a copy) or something " +
			"else writing to the volume. Jobs must leave .pod alone",
	},
	DeleteCostCap: {
		"the run reached its cost cap (--max-cost-usd)",
		"the run reached its cost cap (--max-cost-usd): the watchdog deletes the pod then, whether or not a client follows the run",
	},
	DeleteDeadline: {
		"the deadline (--max-hours) passed with no launcher following the run",
		"the run's deadline (--max-hours) passed while no client followed the run (the lease was not renewed), so the watchdog asked the job for a snapshot and deleted the pod",
	},
	DeleteMaxExtension: {
		"the deadline (--max-hours) plus its extension (--max-extension) passed, which no launcher can hold off",
		"the run's deadline (--max-hours) plus its extension (--max-extension) passed: a following client holds the pod past the deadline only that long, so the watchdog asked the job for a snapshot and deleted the pod, whether or not a client still followed the run",
	},
	DeleteRetrieved: {
		"the results were collected",
		"the job's results were collected (the retrieved marker), so the pod had nothing left to do",
	},
	DeleteAbandoned: {
		"the job ended and its results were not collected within the retrieve grace",
		"the job ended and nobody collected its results within the retrieve grace (--retrieve-grace), so the watchdog deleted the pod and its outputs with it",
	},
	DeleteStalled: {
		"the job stalled: it did not move for --stall-after, nor after it was asked for a snapshot",
		"the job did not move for the stall limit the run turned on (--stall-after): no new output, no new line in its progress file ($OVERBRAINER_PROGRESS), no file changed under its outputs, less than a tenth of a core of CPU, and no busy GPU when --min-gpu-util was given; the watchdog asked it for a snapshot and deleted the pod when it still had not moved after the snapshot wait",
	},
	DeleteNeverStarted: {
		"no job started within the boot grace",
		"no job started on the pod within the boot grace (--boot-grace), so the watchdog deleted the idle pod",
	},
	DeleteKeptIdle: {
		"a kept pod (--keep-pod) went unused for its idle bound (--keep-idle) after its job ended",
		"the run's pod was kept (--keep-pod), and once its job ended nobody used it for its idle bound (--keep-idle): no SSH session of any user was open on it, no process of anyone's used CPU, no GPU was busy (with --min-gpu-util) and no launcher touched its lease, so its watchdog ended it rather than leave it billing: stopped when it had a pod volume (--volume-gb, kept until rm, billed as storage), else deleted; --keep-idle 0 keeps a pod until rm",
	},
}

// Summary is the reason in one line, for a table. The flags named are
// examples/launch's; guard.Spec has a field of the same meaning for each.
func (r DeleteReason) Summary() string {
	if t, ok := reasonTexts[r]; ok {
		return t.summary
	}
	return "unknown reason"
}

// Explain is the reason in a few sentences: what happened and why the pod
// was deleted.
func (r DeleteReason) Explain() string {
	if t, ok := reasonTexts[r]; ok {
		return t.explain
	}
	return fmt.Sprintf("the watchdog's reason %q is unknown to this program (a newer watchdog?)", string(r))
}
