package launcher

import (
	"fmt"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// why explains one reason in plain words: short for ls, below its table,
// long for what run and attach say.
type why struct{ short, long string }

// deleteReasons explains every rule by which a pod's watchdog deletes it
// (the reason of its delete_reason log line). A test checks that each reason
// the watchdog has is here.
var deleteReasons = map[watchdog.DeleteReason]why{
	watchdog.DeleteBootstrapFailed: {
		"the pod's setup failed, so the watchdog deleted the pod at once (the verdict says which step)",
		"the pod's setup (its bootstrap) failed before any job could run, so its watchdog deleted it at once rather than leave it billing; the verdict says which step failed",
	},
	watchdog.DeletePodDirUnsafe: {
		"SAFETY STOP: the run directory's .pod was a symlink when the watchdog started, so it deleted the pod at once; check the job and the volume for what replaced .pod",
		"SAFETY STOP. When the pod's watchdog started (at boot, or after the pod restarted), the run directory's .pod " +
			"was a symbolic link (or otherwise not a plain directory), so none of the control files in it (lease, cost cap, " +
			"retrieved marker) could be trusted. The watchdog replaced .pod with a fresh directory and deleted the pod at once: " +
			"it fails closed rather than guard a run it cannot read. Check what replaced .pod with a symlink: the job (a step " +
			"that moves, removes or links the run directory's .pod, or restores the run directory from a copy) or something " +
			"else writing to the volume. Jobs must leave .pod alone",
	},
	watchdog.DeleteCostCap: {
		"the run reached its cost cap (--max-cost-usd)",
		"the run reached its cost cap (--max-cost-usd): the watchdog deletes the pod then, whether or not a launcher is attached",
	},
	watchdog.DeleteDeadline: {
		"the deadline (--max-hours) passed with no launcher following the run",
		"the run's deadline (--max-hours) passed while no launcher followed the run (the lease was not renewed), so the watchdog asked the job for a snapshot and deleted the pod",
	},
	watchdog.DeleteRetrieved: {
		"the results were collected",
		"the job's results were collected (the retrieved marker), so the pod had nothing left to do",
	},
	watchdog.DeleteAbandoned: {
		"the job ended and its results were not collected within the retrieve grace",
		"the job ended and nobody collected its results within the retrieve grace (--retrieve-grace), so the watchdog deleted the pod and its outputs with it",
	},
	watchdog.DeleteNeverStarted: {
		"no job started within the boot grace",
		"no job started on the pod within the boot grace (--boot-grace), so the watchdog deleted the idle pod",
	},
}

// explainDelete is what run and attach say of a delete reason.
func explainDelete(reason watchdog.DeleteReason) string {
	if w, ok := deleteReasons[reason]; ok {
		return w.long
	}
	return fmt.Sprintf("the watchdog's reason %q is unknown to this launcher (a newer watchdog?)", reason)
}

// shortDelete is what ls says of a delete reason.
func shortDelete(reason watchdog.DeleteReason) string {
	if w, ok := deleteReasons[reason]; ok {
		return w.short
	}
	return "unknown reason"
}

// bootstrapReasons explains why a pod's bootstrap failed (the REASON of a
// `failed bootstrap: REASON` verdict). A test checks that each of
// bootstrap.Reasons() is here.
var bootstrapReasons = map[string]string{
	bootstrap.ReasonRunDirMissing:        "the pod got no run directory (OVERBRAINER_RUN_DIR is empty)",
	bootstrap.ReasonRunDirUnwritable:     "the run directory cannot be written (a full or read-only volume?)",
	bootstrap.ReasonClaimMissing:         "the pod got no valid claim (OVERBRAINER_CLAIM)",
	bootstrap.ReasonClaimFailed:          "the run directory could not be claimed (.pod/claim could not be created)",
	bootstrap.ReasonClaimedByOtherRun:    "the run directory on the volume belongs to another run",
	bootstrap.ReasonHostKeyMissing:       "the host key secret did not reach the pod (was the Runpod secret deleted, or renamed?)",
	bootstrap.ReasonHostKeyInvalid:       "the host key secret is not an OpenSSH private key",
	bootstrap.ReasonHostKeyMismatch:      "the host key secret is not the run's host key (another run's secret?)",
	bootstrap.ReasonHostKeyFailed:        "the host key could not be written on the pod",
	bootstrap.ReasonAuthorizedKeyInvalid: "the client's public key is not a valid key line",
	bootstrap.ReasonAuthorizedKeyFailed:  "root's authorized_keys could not be written on the pod",
	bootstrap.ReasonJobEnvFailed:         "the job's environment file could not be written on the pod",
	bootstrap.ReasonNoSSHD:               "the image has no sshd and installing openssh-server failed",
	bootstrap.ReasonSSHDFailed:           "sshd refused its configuration or could not listen on its port",
	bootstrap.ReasonBootstrapTimeout:     "the setup hung (apt-get, or a stuck volume) past its time limit",
}

// explainVerdict explains a verdict that is not ready.
func explainVerdict(v watchdog.Verdict) string {
	if v.Bootstrap {
		if text, ok := bootstrapReasons[v.Reason]; ok {
			return "the pod's setup failed: " + text + ". Its watchdog deletes the pod, and so does the launcher"
		}
		return "the pod's setup failed. Its watchdog deletes the pod, and so does the launcher"
	}
	return "the pod's watchdog cannot reach the API, so the launcher deletes the pod"
}
