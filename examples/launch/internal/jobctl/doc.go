// Package jobctl holds the launcher's side of the pod file protocol as
// POSIX sh scripts that run on the pod over SSH, and the Go that builds their
// command lines and reads what they print: start the job detached in its own
// process group (with the HF token on standard input only), look at the run
// in one round trip (job state, verdict, snapshot request, new output, lease
// renewal) over one long-lived session, and replace a pod file atomically.
package jobctl
