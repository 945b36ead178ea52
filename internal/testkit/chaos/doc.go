// Package chaos is the test suite that holds the SDK to its promise, that a
// pod is never forgotten and left billing, under faults, load and hostile
// input. It has no code of its own: everything is in its tests, which drive
// the real parts (the bootstrap, the watchdog under real shells, the
// launcher binary, runpodtest's fake Runpod with its pod runner) and print
// their figures.
//
//	go test ./internal/chaos -run Chaos -v
//
// prints one line per figure (t.Log) and, at the end, a summary table:
//
//   - the fault matrix: a launch killed (SIGKILL) at each step, and the API
//     failing at each step (5xx, 429 with Retry-After, hang, dropped
//     connection); cells tried, pods left running (must be 0), the worst
//     delay past the rule's bound, the dollars billed past it; and the
//     same matrix run without each cell's rule, with how many of those
//     kept their pod past the bound (must be all); and each cell's bill
//     (the fake's, over its pods) against the worst case its launcher
//     printed before the create: the largest ratio of bill to bound and
//     the cells billed past it (must be 0), and the same over every cell
//     of the suite (each cell's clean-up holds its bill to its bound);
//   - load: 50 pods created at once through 20% of 429 answers (requests
//     sent, total wait), and 50 watchdogs on one machine whose cost caps
//     all fire on time (worst delay);
//   - secrets: how many process command lines, environments, files, logs
//     and error strings were sampled for the account key, the pod key, the
//     host private key and an HF token during the matrix and the clock
//     runs, and the hits (zero);
//   - a kept pod (--keep-pod) left idle once its launcher collected and
//     left: deleted by its watchdog (kept_idle) within 2 s of its idle
//     bound past its last use; pods left billing (must be 0) and the
//     time and dollars past the bound;
//   - hostile pod files and a pod clock 10 minutes off the client's: the
//     delay of the cost cap past its time;
//   - pod states: a pod stopped by Runpod, in ERROR, in a container restart
//     loop, or whose watchdog was killed while the launcher follows; a
//     create's or a delete's answer lost after the call was done; a quota
//     used up during a launch. Pods left running and stopped (must be 0),
//     and the time and dollars past the moment the launcher could end it;
//   - a careless job (a directory at du.running, a FIFO at the log or
//     swapped in for a client file, a .curlrc proxy) under dash, busybox
//     sh and bash: pods left billing, in all and per case (must be 0);
//   - boot files: a FIFO at the watchdog's temporary file or at the claim
//     in a network volume's run directory, and a volume that hangs at boot
//     (a FUSE mount that never answers), each booted through the fake's
//     pod runner under dash, busybox sh and bash: pods left billing per
//     case (must be 0);
//   - recovery (TestChaosRecover): a pod whose host fails mid-run finished
//     on a second pod from its pulled checkpoint (--recover), or from its
//     outputs on its network volume, a GPU out of stock for
//     CHAOS_CAPACITY_DELAY (2 minutes) waited for (--wait-for-gpu), and a
//     launcher SIGKILLed between a recovery's delete and its create, then
//     attached: pods left billing (must be 0), pods of the run alive at
//     once (must be at most 1), dollars (at most the cap).
//   - no pod outlives its purpose: a job that reports one step and then
//     stands still, with --stall-after (deleted as stalled), a cost cap of $0.005 on the
//     demo job (its cost checkpoint collected, the cap named), and a job
//     that replaces date with a frozen one mid-run (the cost cap still on
//     time): pods left billing (must be 0), and the time and dollars past
//     each rule's bound.
//   - first, do no harm (TestChaosFalseKills): healthy jobs a careless
//     rule takes for dead, with short rule durations: with the stall rule
//     on, a job that burns CPU and prints nothing, one whose output is
//     block-buffered until its exit, one that writes only files under its
//     outputs, one in a noisy evaluation after its last progress line; at
//     the default (stall rule off) a job that stands still for twice the
//     rule's time; a silent job under the cost cap, the deadline (its
//     launcher killed), the deadline's extension and the retrieve grace
//     (launcher killed); a kept pod with a pod volume held by a nohup loop
//     over `launch ssh`, then stopped, never deleted; a container restart
//     under --recover with a pod volume, resumed on the same pod from its
//     checkpoint. Per cell, its false
//     kills (the pod ended while its job worked, or before its rule's
//     time) and pods left billing (both must be 0).
//
// Every timed assertion is the rule's own bound plus a slack for a loaded
// 2-core machine (Slack in the tests; CHAOS_SLACK overrides it), and each
// rule a cell relies on is named: the test checks the watchdog's
// delete_reason, and a mutation test removes the rule to show that the
// cell then fails. Outside the matrix the rule goes from the watchdog's
// script. In the matrix every cell with a pod runs twice, the second time
// through a launcher built (with build overlays) without what the cell
// relies on, and must keep its pod past its bound plus the slack: a killed
// launcher's cell loses its step's rule from the launcher's embedded
// watchdog; a cell whose launcher survives loses both the launcher's own
// delete of its pod and the watchdog's retrieved rule, since the launcher
// writes the retrieved marker just before its delete and the cell accepts
// either.
//
// The matrix's pods run under runpodtest's pod runner (root, Linux) with a
// network volume as their workdir, so that the run directory, and the
// watchdog's log in it, outlive the pod on this host. Up to 16 cells (and
// mutants) run at once: each mostly waits on a grace or a client timeout,
// but more at once starve the pods of a 2-core machine. A kill cell whose
// kill landed past its step (the launcher outran the test's look) runs
// again, up to three times.
package chaos
