// Package watchdog holds the pod watchdog: a POSIX sh script that the
// bootstrap execs as the container's main process and that deletes the pod as
// soon as one of its rules says the pod has no more reason to exist (a failed
// bootstrap, the cost cap, the deadline with a stale client lease, results
// retrieved or abandoned, a job that never started).
//
// The package gives the script as the pod runs it ([Script]), the names of the
// files the watchdog and the client exchange in the run directory (the pod
// file protocol), and a parser for the watchdog's log.
//
// The script reads its settings from the environment that package podenv
// builds; only the pod's own RUNPOD_API_KEY is a secret, and the script hands
// it to curl on standard input only.
package watchdog
