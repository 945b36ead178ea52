// Package guard runs a job on a Runpod pod that cannot be forgotten and
// left billing: the whole client side of the pod protocol, for any Go
// program.
//
// The cycle, in order:
//
//   - Launch checks the Spec (a bad field fails before any pod exists),
//     makes the run's client and host keys, puts the host key's private
//     half in a Runpod secret (and nowhere else), creates the pod with the
//     bootstrap and the watchdog, waits until it runs, dials it with the
//     host key pinned and reads the watchdog's verdict. Once it is ready,
//     the watchdog alone deletes the pod by its rules: at the deadline when
//     no client holds the lease, at the cost cap whatever the lease, when no
//     job started within the boot grace, once the results are collected or
//     abandoned, when the bootstrap failed.
//   - Run.Start uploads the job, writes the cost cap's plan on the pod's
//     clock and starts the job in its own process group. Its secrets
//     (Job.Secrets: HF_TOKEN, WANDB_API_KEY, storage credentials) travel
//     on the starting session's standard input only and live in the job's
//     environment alone, winning over the pod's variables: never on a
//     command line, in the pod's environment, a file, a Record, an event
//     or an error (WithPodLog's copy shows [REDACTED]). The job writes its
//     results into $OVERBRAINER_OUTPUTS, and when the file
//     $OVERBRAINER_SNAPSHOT_REQUEST appears (a Snapshot, or the watchdog
//     ahead of the cost cap, the deadline or a full disk) it checkpoints
//     there and exits. A Job with ResumeFrom (an earlier run's collected
//     outputs) finds them in $OVERBRAINER_OUTPUTS before it starts, so that
//     it continues from its checkpoint on a new pod or GPU type
//     (EventResumed), and Collect brings them back with the new.
//   - Run.Follow streams the job's output and returns how the job ended,
//     renewing the lease while it progresses, growing a network volume
//     that fills (up to Spec.MaxVolumeGB), reconnecting, and backing up a
//     watchdog that missed its rules; a pod found EXITED or ERROR, whose
//     watchdog no longer runs, is deleted, and a 404 believed after three
//     looks.
//   - Run.Collect downloads the results, checked against the pod's SHA-256
//     manifest (Spec.Results), and marks them retrieved; Run.Delete deletes
//     the pod and the secret, even after ctx ended, and waits until the API
//     no longer shows the pod. Then Record.CostUSD holds the estimate
//     (price × time) and Record.Bill what Runpod billed, which ReadBill
//     reads again while Record.BillDue says it may still grow.
//   - Run.Record is a JSON handle (WithSave keeps a file of it) from which
//     Attach rebuilds the Run in another process; Run.Detach leaves the
//     pod to its watchdog in between, and Remove deletes a run's pod
//     without connecting to it. RemoveOrphan deletes another run's pod
//     only when it is provably abandoned (package sweep's rules).
//   - Run.Shell opens a session on the pod over the pinned connection;
//     Run.WriteSSHConfig writes files for OpenSSH that trust the run's
//     host key only. Run.Cancel stops the job at once, without a
//     checkpoint; Collect and Delete then end the run as usual.
//   - The third enforcer, for when both the watchdog and the client are
//     missing, is package sweep: it judges every guarded pod and host-key
//     secret of the account from the API alone. guard's Sweep, SweepEvery
//     and their types forward to it for one release.
//
// Getting a GPU: Spec.GPUTypes are tried in order, since Runpod's create
// neither searches for capacity nor falls back. A capacity 400, a 403 for
// the type's pool, or a pod not up within the start timeout (deleted
// first) gives way to the next type; a 402 (runpod.ErrInsufficientFunds),
// a 422 or another 400 stops, and so does a create whose outcome stays
// unknown after the client looked for its pod by name for a minute: one
// launch never makes two pods. AutoGPU picks the types from live stock
// (PickGPUs, ListGPUs), AutoDataCenter the data centers that stock each,
// a network volume pins its own data center, and Spec.MinCUDA keeps the
// pod off older drivers. Every try is in Record.Attempts and told as
// EventAttempt. The cost cap is the run's, not each pod's: what a pod
// deleted for not coming up may have billed comes out of the next pod's
// budget (and its env, for the sweeper), and ErrCapSpent ends a launch
// whose cap went that way. With Spec.CapacityWait, a launch whose every
// type is out of capacity (out of stock, or Runpod's capacity 400) waits
// for one instead of failing with ErrNoGPU, with no pod meanwhile: it
// looks again after a jittered back-off (10 s growing to 2 min), reads
// the catalog's stock at most once per 30 s in this process, and creates
// as soon as a type is back (EventWaiting, StageCapacity, at each wait).
//
// Recovery: with Spec.Recover, Follow itself takes a job whose pod was
// lost under it (Recoverable, or End.Recoverable) up on a new pod, up to
// Recover.Times, from the newest pull (Recover.PullEvery) or, on a
// network volume, from its outputs there (the new pod keeps the run's
// host key, and so its claim on the run directory, and its bootstrap
// moves the lost pod's control files aside first): the lost pod
// is confirmed gone before the next is made, the run's id, deadline and
// cost cap hold across its pods (Record.Attempts holds each, the lost
// ones with how they ended and what they may have cost), and
// EventRecovering tells each new pod. An ending by a rule, a snapshot
// request (the user's stop among them) or a cancel is never recovered.
// Record.Recovery says where a recovery stands, so that an Attach from
// another process finishes one left under way without a second pod. The
// pieces work alone too: Relaunch makes the next pod, WithPullEvery
// pulls, and PulledOutputs names the newest pull. End.Checkpointed says
// whether a job proved (SnapshotFile) the checkpoint its snapshot
// request asked for.
//
// Failures once the pod exists end the run by a rule that never leaves a
// pod without a guard: the pod is deleted, or left to its armed watchdog
// (WithLeaveOnFailure, or when it holds the only copy of the results), and
// the error is typed (*PodGoneError, *VerdictError, *CollectError,
// ErrJobLost, *FieldError). A context cancelled before the job started
// deletes the pod (Launch, Start), unless WithDetachOnCancel: a pod without
// a job would bill its boot grace for nothing. Once the job runs, the
// Run's methods return ctx's error and leave the pod to its watchdog,
// which ends it within its rules' bounds.
//
// The package never prints: WithEvents reports every step as an Event
// (long waits and transfers as often as a caller may redraw them, see
// Stage), and WithLogger logs them. WithPodLog copies the pod's own log
// to a writer of the caller's, for a pod that dies before its SSH answers.
//
// Launch and Attach take a *runpod.Client: runpod.New with an account key
// for Runpod, or one pointed at runpod/runpodtest's emulator, whose pods
// (WithPodRunner) run the real bootstrap and watchdog on this machine, as
// root: the Examples run that way, and examples/notebook is the whole
// cycle as notebook cells.
package guard
