// Package jobctl holds guard's side of the watchdog's pod file protocol as
// POSIX sh scripts that run on the pod over SSH, and the Go that drives
// them: start.sh starts the job detached in its own process group (with the
// HF token on standard input only); watch.sh is one long-lived session per
// connection that answers looks at the run (job state, verdict, snapshot
// request, the rule by which the watchdog is deleting the pod, new output,
// lease renewal) and writes the client's pod files, so that following a
// job opens no new session, nor a new login shell with its rc files, for
// every look; a pod gets watch.sh once, in its first session, and keeps it
// on its disk (/etc/overbrainer/watch-HASH.sh), so that a session's
// command stays under 2 KB. Its writes to the run directory (a put, the
// lease) get OVERBRAINER_WRITE_WAIT seconds (10): one that a hung volume
// does not take in time fails the put, and watch.sh goes on, so the
// session can still end. cancel.sh stops the job's whole process group at
// once, without a checkpoint, and marks it cancelled (CancelClient).
//
// A job of an earlier container of the pod (Runpod restarted the container;
// the run directory survived, the job did not) is read as ended and never
// alive, whatever its old group number names in the new container: the
// bootstrap marks it cancelled with watchdog.CancelContainerRestarted, which
// watch.sh passes on and [State.Lost] reports.
package jobctl
