// Package podenv turns a run's settings into the environment of the Runpod
// create call: what the bootstrap and the watchdog on the pod need to know
// (run directory, deadline, graces, keep mode, network volume, API URL, the
// client's public key and the run's claim, whether the pod takes its run
// directory over from a lost pod of its run), and the watchdog's knobs
// (interval, lease TTL, snapshot lead and wait, probe tries and wait), each
// left to the watchdog's default while zero.
//
// The environment never holds a secret. The pod's host private key is only a
// reference to a Runpod secret ([HostKeyPlaceholder]) that Runpod resolves
// when the pod boots; the account API key never goes to the pod (Runpod gives
// every pod its own pod-scoped RUNPOD_API_KEY); an HF token reaches the job
// over SSH, not through here.
//
// Settings are validated before anything is built: a bad value gets an error
// naming the field ([*FieldError]), never a pod that boots broken. Keys are
// parsed as sshd reads authorized_keys: the client's key may be of any type
// sshd takes for a login by default ([AuthorizedKeyTypes]: ed25519, ECDSA,
// FIDO security keys, RSA of 3072 bits or more; never DSA, options or a
// certificate), the claim is the run's ed25519 host key ([HostKeyType]).
//
// For job authors: the job's environment carries [ProgressEnv]
// (OVERBRAINER_PROGRESS), the path of a file where the job may append one
// line a step, e.g. `step=120 total=5000 loss=0.91`. A new line counts as
// the job moving, as new output or a changed file under its outputs does:
// it renews a following launcher's lease, and holds off the stall rule
// where the user turned it on ([Rules.StallAfter]; off by default, when a
// job that has not moved for [StallWarnAfter] is only told). With step
// and total, it is what the launcher reads the pace from to warn of a
// deadline or a cost cap too near for the steps left.
//
// The rules' arithmetic is here too, written once for every reader (the
// watchdog's shell arithmetic is held to it by a differential test): a
// zero's reading ([Rules.EffectiveRules], [Rules.Extension]: a zero
// MaxExtension is DefaultMaxExtension, a HardDeadline none), the hard end
// ([Rules.HardEnd]: the deadline plus its extension), the cost cap's
// instant from a billing start, a price and what earlier pods spent
// ([Rules.CapAt]) and the snapshot before it ([Rules.CostAskAt]), the
// money left ([Rules.MoneyLeft]), and a stalled job's end once its
// snapshot was asked ([Rules.StallEnd]).
package podenv
