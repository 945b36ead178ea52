// Package launcher is the examples/launch program: it puts the runpod
// client, podenv, bootstrap and the watchdog together into a full cycle
// (create the run's secret and pod, wait for the watchdog's verdict over SSH
// with the run's host key pinned, upload and start the job, follow it while
// renewing the lease, collect the outputs, delete the pod and the secret),
// and the commands around it: attach, stop, ls, rm and local-server.
//
// When a look at the pod shows its watchdog deleting it, run and attach say
// by which rule and what it means (reasons.go holds the words for every
// watchdog delete reason and bootstrap failure), and ls keeps it. A job lost
// when the pod's container restarted (jobctl.State.Lost) is reported as such,
// and its results so far are collected like an ended job's.
//
// main.go only calls Main, so that tests can drive the built binary and
// read the same code.
package launcher
