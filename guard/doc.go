// Package guard runs a job on a Runpod GPU pod that cannot be forgotten
// and left billing: the client side of the pod protocol, for any Go program.
//
// Launch makes the pod and returns a Run once the pod's watchdog is armed;
// Run.Start starts the Job, Run.Follow streams its output until it ends,
// Run.Collect downloads the results and Run.Delete deletes the pod. Attach
// takes a run up from its Record in another process; Remove deletes a run's
// pod without connecting to it; Relaunch, or Spec.Recover, moves a job whose
// pod was lost to a new pod. ExampleLaunch runs it all on this machine.
//
// One word per idea: the results are collected (Collect once the job
// ended, which lets the pod go; CollectSoFar while it may still run);
// a recovery pulls (Pull, Recover.PullEvery: the checkpoint so far, kept
// two deep for the next pod). A job ends (End, JobState.Ended,
// EventJobEnded); a pod is gone (Run.PodGone, ErrPodGone), deleted by
// Delete, Remove or its watchdog.
//
// Three enforcers make sure the pod goes:
//
//   - its watchdog deletes it at the deadline when no client holds the
//     lease, at the cost cap whatever the lease, when no job started within
//     the boot grace, once the results are collected or abandoned, and when
//     the bootstrap failed;
//   - the client: Follow renews the lease only while the job moves, applies
//     a cost cap or deadline the watchdog missed, and deletes an EXITED or
//     ERROR pod;
//   - package sweep, for when both are gone, judges the account's guarded
//     pods from the API alone.
//
// Once a pod exists, no failure leaves it unguarded: it is deleted, or left
// to its armed watchdog, and the error is typed. A ctx that ends before the
// job started deletes the pod unless WithDetachOnCancel; once the job runs,
// the Run's methods return ctx's error and leave the pod to its watchdog.
//
// The package never prints; WithEvents reports each step as an Event. A
// *runpod.Client pointed at runpod/runpodtest's emulator runs the real
// bootstrap and watchdog on this machine.
package guard
