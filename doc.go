// Package overbrainer is the root of overbrainer-go, a Go SDK that runs
// training jobs on Runpod GPU pods that cannot be forgotten and left billing.
//
// Every pod carries its own watchdog, a POSIX sh script that runs as the
// container's main process and deletes the pod when a rule says so: the
// bootstrap failed, the total cost cap is reached, the deadline passed while
// no client holds the lease, the results were retrieved, the ended job was
// abandoned, or no job ever started. Before a rule takes the job away, the
// watchdog asks the job for a checkpoint, and it guards a filling disk.
//
// The packages, each usable alone:
//
//   - podenv turns a run's settings into the pod's environment, which holds
//     no secret (the host key is a Runpod secret reference).
//   - bootstrap builds the pod's command: a bash -c script that writes the
//     watchdog first, claims the run directory, installs the run's host key
//     and the client's key, writes the job environment without secrets,
//     starts a key-only sshd and then execs the watchdog.
//   - watchdog embeds the watchdog script and names the pod files that the
//     watchdog and the client exchange (verdict, lease, cost cap, ...), with
//     typed verdicts and reasons. The client's half of that protocol on the
//     pod (the job's start script and the look that follows it) is guard's,
//     in internal/jobctl.
//   - podssh is an SSH client that accepts only the run's pinned host key,
//     with commands and tar transfers over sessions.
//   - runpod is a client for Runpod's REST v2 API, with a delete that falls
//     back to terminate and then stop, typed errors and careful retries.
//   - runpod/runpodtest is an in-process fake of Runpod whose pod runner
//     really runs a pod's command on this machine, for tests and for a first
//     run without an account; runpod/localpod is that runner's runtime (the
//     pod's init, namespaces and root), which a program that runs local
//     pods readies with localpod.PodInit.
//
// Package guard puts them together into a guarded run for any Go program:
// it creates the pod, waits for the watchdog's verdict over SSH with the host
// key pinned, starts the job, follows it while renewing the lease, collects
// the results and deletes the pod, and a saved Record takes the run up again
// from another process. The program examples/launch is a command line over
// guard, and examples/notebook the same cycle as notebook cells. Package
// doctor proves, with one short-lived guarded pod, what runs rely on and
// no document states (launch doctor).
package overbrainer
