// Package bootstrap builds the pod's command: a `bash -c` script that prepares
// the run directory, writes the watchdog before anything else can fail,
// installs the run's host key and the client's key, writes the job
// environment without secrets, starts a key-only sshd, and then execs the
// watchdog as the container's main process. Any failure after the watchdog is
// written hands the pod to the watchdog, which reports it and deletes the pod.
package bootstrap
