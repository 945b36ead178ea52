package bootstrap

// Why a bootstrap failed: the content of the pod's .pod/bootstrap_failed, and
// the REASON in the watchdog's verdict `failed bootstrap: REASON`. Every one
// of them ends with the watchdog deleting the pod.
const (
	// OVERBRAINER_RUN_DIR is empty; the watchdog reports from /tmp.
	ReasonRunDirMissing = "run_dir_missing"
	// The run directory cannot take .pod/watchdog.sh (read-only, full); the
	// watchdog reports from /tmp. Also when it took the watchdog but not the
	// cancelled marker of a job lost with an earlier container; the watchdog
	// then reports from the run directory.
	ReasonRunDirUnwritable = "run_dir_unwritable"
	// OVERBRAINER_CLAIM is not one public key line.
	ReasonClaimMissing = "claim_missing"
	// .pod/claim could not be created.
	ReasonClaimFailed = "claim_failed"
	// .pod/claim holds another run's claim (an empty one counts as another).
	ReasonClaimedByOtherRun = "claimed_by_other_run"
	// OVERBRAINER_HOST_KEY is empty or still the unresolved secret reference.
	ReasonHostKeyMissing = "host_key_missing"
	// OVERBRAINER_HOST_KEY is not the base64 of an unencrypted OpenSSH key.
	ReasonHostKeyInvalid = "host_key_invalid"
	// The host key's public half is not the claim.
	ReasonHostKeyMismatch = "host_key_mismatch"
	// The host key could not be written under /etc/overbrainer.
	ReasonHostKeyFailed = "host_key_failed"
	// OVERBRAINER_AUTHORIZED_KEY is not one public key line.
	ReasonAuthorizedKeyInvalid = "authorized_key_invalid"
	// /root/.ssh/authorized_keys could not be written.
	ReasonAuthorizedKeyFailed = "authorized_key_failed"
	// The job environment (podenv.JobEnv) could not be written.
	ReasonJobEnvFailed = "job_env_failed"
	// No sshd or ssh-keygen, and installing openssh-server with apt-get or
	// apk failed.
	ReasonNoSSHD = "no_sshd"
	// sshd rejected its configuration or could not listen on its port.
	ReasonSSHDFailed = "sshd_failed"
	// The bootstrap still ran after OVERBRAINER_BOOT_TIMEOUT seconds
	// (default 900), for instance in a hung apt-get.
	ReasonBootstrapTimeout = "bootstrap_timeout"
)

// Reasons returns every reason a bootstrap can fail with.
func Reasons() []string {
	return []string{
		ReasonRunDirMissing, ReasonRunDirUnwritable, ReasonClaimMissing,
		ReasonClaimFailed, ReasonClaimedByOtherRun, ReasonHostKeyMissing,
		ReasonHostKeyInvalid, ReasonHostKeyMismatch, ReasonHostKeyFailed,
		ReasonAuthorizedKeyInvalid, ReasonAuthorizedKeyFailed,
		ReasonJobEnvFailed, ReasonNoSSHD, ReasonSSHDFailed,
		ReasonBootstrapTimeout,
	}
}

// reasonTexts is every reason in words; a test checks that each of
// Reasons has its entry and nothing else does.
var reasonTexts = map[string]string{
	ReasonRunDirMissing:        "the pod got no run directory (OVERBRAINER_RUN_DIR is empty)",
	ReasonRunDirUnwritable:     "the run directory cannot be written (a full or read-only volume?)",
	ReasonClaimMissing:         "the pod got no valid claim (OVERBRAINER_CLAIM)",
	ReasonClaimFailed:          "the run directory could not be claimed (.pod/claim could not be created)",
	ReasonClaimedByOtherRun:    "the run directory on the volume belongs to another run",
	ReasonHostKeyMissing:       "the host key secret did not reach the pod (was the Runpod secret deleted, or renamed?)",
	ReasonHostKeyInvalid:       "the host key secret is not an OpenSSH private key",
	ReasonHostKeyMismatch:      "the host key secret is not the run's host key (another run's secret?)",
	ReasonHostKeyFailed:        "the host key could not be written on the pod",
	ReasonAuthorizedKeyInvalid: "the client's public key is not a valid key line",
	ReasonAuthorizedKeyFailed:  "root's authorized_keys could not be written on the pod",
	ReasonJobEnvFailed:         "the job's environment file could not be written on the pod",
	ReasonNoSSHD:               "the image has no sshd and installing openssh-server failed",
	ReasonSSHDFailed:           "sshd refused its configuration or could not listen on its port",
	ReasonBootstrapTimeout:     "the setup hung (apt-get, or a stuck volume) past its time limit",
}

// Explain says in words why a bootstrap failed with reason, or "" for a
// reason this package does not know (a newer pod side).
func Explain(reason string) string { return reasonTexts[reason] }
