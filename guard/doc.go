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
//     clock and starts the job in its own process group, its secrets
//     (Job.Secrets: HF_TOKEN, WANDB_API_KEY, storage credentials) on the
//     session's standard input only, and in the job's environment alone. The job writes its results into
//     $OVERBRAINER_OUTPUTS, and when the file $OVERBRAINER_SNAPSHOT_REQUEST
//     appears (a Snapshot, or the watchdog ahead of the cost cap, the
//     deadline or a full disk) it checkpoints there and exits. A Job with
//     ResumeFrom (an earlier run's collected outputs) finds them in
//     $OVERBRAINER_OUTPUTS before it starts, so that it continues from its
//     checkpoint on a new pod, and Collect brings them back with the new.
//   - Run.Follow streams the job's output, renews the lease while it
//     progresses, grows a network volume that fills (up to
//     Spec.MaxVolumeGB, else a disk snapshot is asked), reconnects, and
//     returns how the job ended. It backs up the watchdog's cost cap and
//     deadline (*EnforcedError), and deletes a pod found EXITED or ERROR,
//     whose watchdog no longer runs; a 404 is believed after three looks.
//   - Run.Collect downloads the results with the lease held, checks each
//     file against the pod's SHA-256 manifest (Spec.Results caps, excludes
//     and may require outputs) and marks them retrieved: the outputs
//     directory, job.log, exit_code and the markers, and the watchdog's and
//     the bootstrap's logs as .pod/watchdog.log and .pod/bootstrap.log (not
//     counted as outputs); Run.Delete deletes the pod and the secret, even after its
//     context was cancelled, and waits until the API no longer shows the
//     pod (else *DeleteUnconfirmedError says how to check). Once the pods
//     are gone, Record.CostUSD holds the estimate (price × time) and
//     Record.Bill what Runpod's billing says it billed the run's pods; as
//     that lags, ReadBill reads it again while Record.BillDue says so.
//   - Run.Record is a JSON handle (WithSave keeps a file of it) from
//     which Attach rebuilds the Run in another process (a notebook's next
//     cell, a later launcher); Run.Detach leaves the pod to its watchdog
//     in between, and Remove deletes a run's pod without connecting to
//     it (not one whose results were not collected, unless WithForce).
//     RemoveOrphan deletes another run's pod only when it is provably
//     abandoned, by the sweeper's rules and graces (package sweep).
//   - Run.Shell opens a session on the pod over the pinned connection (a
//     PTY when asked, podssh.AttachTerminal for this program's terminal; a
//     command's exit status as a *podssh.CommandError), and
//     Run.WriteSSHConfig writes an ssh_config and a known_hosts for
//     OpenSSH's ssh -F that trust the run's host key only.
//   - Run.Cancel stops the job at once, without a checkpoint (its process
//     group gets TERM, then KILL), on a launched or an attached Run; Collect
//     and Delete then end the run as usual.
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
// type is out of capacity waits for one (EventWaitingCapacity), with no
// pod meanwhile, instead of failing with ErrNoGPU.
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
// The package never prints: WithEvents reports every step as an Event, and
// WithLogger logs them. Long waits (the pod coming up, its sshd, the
// verdict) are told at each look with the time and cost since the create
// call, and uploads and downloads twice a second with their bytes so far
// and total, for a caller to draw. WithPodLog copies the pod's own log (Runpod's log
// stream) to a writer of the caller's, for a pod that dies before its SSH
// answers.
//
// Launch and Attach take a *runpod.Client: runpod.New with an account key
// for Runpod, or one pointed at runpod/runpodtest's emulator, whose pods
// (WithPodRunner) run the real bootstrap and watchdog on this machine, as
// root: the Examples run that way, and examples/notebook is the whole
// cycle as notebook cells.
package guard
