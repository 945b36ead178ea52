// Package podenv turns a run's settings into the environment of the Runpod
// create call: what the bootstrap and the watchdog on the pod need to know
// (run directory, deadline, graces, keep mode, network volume, API URL, the
// client's public key and the run's claim), and the watchdog's knobs
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
package podenv
