// Package watchdog holds the pod watchdog: a POSIX sh script that the
// bootstrap execs as the container's main process and that deletes the pod as
// soon as one of its rules says the pod has no more reason to exist (a failed
// bootstrap, the cost cap, the deadline with a stale client lease, results
// retrieved, results abandoned: not retrieved within the retrieve grace of
// the job's end and no client lease either, a job that never started, a job
// that stalled), after asking the job for a snapshot when the cost, the
// deadline or a full disk is near, or the job has stalled.
//
// The stall rule is off unless the pod's env turns it on
// (OVERBRAINER_STALL_AFTER, 0 by default). A job stalls when it has not
// moved for OVERBRAINER_STALL_AFTER: any new output, a new line in its
// progress file ([Progress]), or with OVERBRAINER_MIN_GPU_UTIL a GPU at
// least that busy by nvidia-smi, count as movement. It is asked for a
// snapshot ([ReasonStall]) and its pod deleted ([DeleteStalled]) when it
// still has not moved nor ended OVERBRAINER_SNAPSHOT_WAIT later. A kept
// pod is left to keep mode.
//
// The client's lease (the mtime of .pod/lease, fresh for
// OVERBRAINER_LEASE_TTL seconds either side of the pod's clock) holds off
// only the deadline and the abandoned rule: a client downloading the results
// keeps it fresh, so a download that outlasts the retrieve grace does not
// lose the pod midway. The cost cap acts whatever the lease.
//
// A job is over once it wrote its exit code, was cancelled, or its process
// group (job.pid) is gone. A job of an earlier container of the pod (Runpod
// restarted the container: the run directory survived, none of its processes
// did) is never read as alive, though its old group number may name an
// unrelated live group in the new container: the bootstrap marks it
// cancelled ([CancelContainerRestarted]) before anything can start a job
// there, and the watchdog logs `job_ended by=cancelled
// reason=container_restarted` at its first tick, from which the retrieve
// grace counts. A client may start that job again in its run directory (its
// cancelled marker and job.pid replaced by the new job's): the watchdog logs
// `job_started again=1` and holds the new job to every rule.
//
// A delete counts only once a GET of the pod confirms it: 404 or TERMINATED
// (EXITED after the stop action, which leaves the volume billing). The API
// answers 404 to a key that may not see the pod too, so an answered DELETE
// is never taken on trust: until a GET confirms one of the ways (DELETE,
// the terminate action, the stop action, runpodctl), each tick logs
// delete_failed with what each answered and tries them all again, and the
// watchdog never exits. Before its first try by a rule it writes the rule
// and the time in the run directory's [EndedBy], so that a run directory
// on a network volume tells a later reader which rule ended the pod.
//
// The package gives the script as the pod runs it ([Script], which starts
// with the portable [GroupSignal] helper), the names of the files the
// watchdog and the client exchange in the run directory (the pod file
// protocol) and the typed values in them ([ParseVerdict], [DeleteReason],
// [SnapshotReason]), and a parser for the watchdog's log ([ParseLine],
// [ParseLog]): one line per event, `<unix time> <kind> key=value...`, kinds
// listed as the Kind constants. The same lines reach the container's output
// (Runpod's console and log stream) through a `tail -f` of the log that the
// script starts: the watchdog never writes there itself, so an output that
// blocks or is closed cannot hold or end it (it also ignores SIGPIPE).
//
// The script reads its settings from the environment that package podenv
// builds (OVERBRAINER_*, RUNPOD_POD_ID, RUNPOD_API_KEY); a malformed number
// falls back to its default and is logged, and a malformed deadline counts as
// already passed. Only the pod's own RUNPOD_API_KEY is a secret: the script
// removes it from its environment and hands it to curl on standard input
// only.
//
// Timing: the loop wakes every OVERBRAINER_INTERVAL seconds (60), or at the
// next due time of a time rule when that comes first, so the deadline, the
// cost cap, the snapshot times and the graces act within about a second of
// their time (BenchmarkReaction). A steady tick mostly runs one process, its
// sleep. Its time is the kernel's uptime (/proc/uptime, read by the shell)
// plus a boot time taken from date, and date is read again every 10 ticks,
// for each sleep to a due time and before any delete: a wall-clock step is
// seen within 10 ticks and never deletes a pod early (without a readable
// uptime, date runs every tick). df runs every 1 to 5 ticks, the fuller the
// disk the more often: a disk that fills by at most 2 percentage points a
// tick is seen full at the same tick as with a df every tick. On a disk
// under 87% full, a steady tick under dash averages 1.3 processes
// (BenchmarkTickProcesses).
//
// The script runs unchanged under sh, dash, busybox sh, bash, posh, yash and
// mksh; its tests run every rule under each of them. mksh computes with 32
// bits, so sizes are scaled down before any arithmetic, and Unix times must
// stay below 2^31 (January 2038) under mksh.
package watchdog
