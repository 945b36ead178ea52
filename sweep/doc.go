// Package sweep is the third enforcer of a guarded run: a stateless
// sweeper that judges every guarded pod and host-key secret of a Runpod
// account from the API alone, and deletes those a rule proves abandoned.
// It is meant for a schedule (a Kubernetes CronJob, a systemd timer, a
// scheduled CI job) and for a person's `launch sweep` and `launch rm
// --all-orphans`: one judge ([Judge]) and one set of graces ([Policy])
// for all of them.
//
// It reads each pod's env with [podenv.Parse], the reader of the contract
// podenv writes, and deletes a pod only by a rule whose every input it
// read and understood: a field missing, unparsable or of a value it does
// not know makes the pod [RuleCannotJudge], reported and left; so does a
// pod of a contract newer than its own, and one whose description the
// listing could not read at all (runpod.Pod.Unreadable), which blinds
// the sweep to no other pod. A kept pod (--keep-pod) is left
// whatever its state: its watchdog deletes it once unused for its idle
// bound (--keep-idle), which only the pod can see, and otherwise only an
// explicit remove deletes it. Arithmetic on
// times, caps and prices saturates, and a time past the year 2100 means
// never.
//
// It keeps no state: several sweeps may run at once, from any machine.
//
// For monitoring, a Report says when its pass ran and how long it took
// (Report.Pass), and a Decision what a deleted pod billed past its rule's
// bound (Decision.PastBoundUSD); package sweepmetrics serves these as
// Prometheus metrics, so that this package depends on no metrics library.
//
// The package stands apart from guard (which forwards its Sweep to it)
// so that a scheduled sweeper imports the rules alone, without the SSH
// and launch machinery of a run.
package sweep
