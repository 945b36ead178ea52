// Package bootstrap builds the pod's command: a `bash -c` script that runs as
// the container's command under docker-init and turns any image with bash
// into a guarded, reachable pod ([Command]). It goes to Runpod as the
// create's entrypoint ([Entrypoint], ["bash", "-c"]) and cmd ([Cmd], the
// script), so the image's own ENTRYPOINT and CMD never run: see "The
// image's entrypoint" below.
//
// In order, the script (bootstrap.sh, embedded):
//
//   - writes a watchdog of its own under $TMPDIR (or /tmp) and starts a guard
//     that fails the bootstrap with bootstrap_timeout if it is still running
//     after OVERBRAINER_BOOT_TIMEOUT seconds (default 900), before anything
//     touches the run directory, since a FIFO there or a hung network volume
//     may block any step; the guard's watchdog runs from $TMPDIR, on the
//     container's disk, so that a volume that hangs at any moment cannot
//     hold it, and a child of the guard that nothing waits for writes the
//     failure and the verdict into the run directory once that took the
//     watchdog;
//   - creates $OVERBRAINER_RUN_DIR/.pod and writes the watchdog there before
//     anything else can fail; from then on every failure is handed to the
//     watchdog, which reports `failed bootstrap: REASON` in .pod/watchdog and
//     deletes the pod (the reasons are the Reason constants);
//   - claims the run directory: .pod/claim holds OVERBRAINER_CLAIM, the run's
//     public host key; finding the same key (type and base64, comments
//     ignored) means a resumed run on a network volume, another one fails;
//   - on a pod that takes the run directory over from a lost pod of its run
//     (podenv.TakeOverEnv, a recovery on a network volume), moves what that
//     pod and its job left (job.pid, exit_code, cancelled,
//     snapshot.request, progress, job.log, and the lease, cost plan,
//     retrieved marker and logs of .pod) into .pod/earlier/$RUNPOD_POD_ID,
//     once per pod, so that no rule of the lost pod acts on this one; the
//     outputs, job/ and command.sh stay, and a restart of this pod's
//     container moves nothing;
//   - marks a job of an earlier container as lost: when Runpod restarts the
//     pod's container, the run directory survives but the job died with the
//     old container, and the process group in its job.pid may name an
//     unrelated live group in the new one. A job.pid without exit_code or
//     cancelled gets a cancelled marker holding
//     watchdog.CancelContainerRestarted (tmp + mv), so that the watchdog and
//     the launcher read the job as ended, never alive; this happens before
//     sshd serves, when no job of this container can exist yet. A run
//     directory that cannot take the marker fails with run_dir_unwritable;
//   - decodes OVERBRAINER_HOST_KEY (base64 of an OpenSSH private key, a Runpod
//     secret) into /etc/overbrainer/ssh_host_ed25519_key (0600) once
//     `ssh-keygen -y` shows its public half is the claim;
//   - writes OVERBRAINER_AUTHORIZED_KEY as root's only authorized key;
//   - writes the job environment (podenv.JobEnv, 0600): every variable as an
//     `export NAME='value'` line, without RUNPOD_API_KEY, the host key, or
//     any variable named like a secret (TOKEN, SECRET, KEY, PASSW, CREDENTIAL,
//     *_PASS, *_PWD, DATABASE_URL) unless its value is public keys only, or
//     any listed in OVERBRAINER_SECRET_ENV (podenv.Settings.SecretEnv); the
//     variables are those the image's entrypoint leaves, when it has one
//     (see below);
//   - starts sshd with its own /etc/overbrainer/sshd_config: root by public
//     key only, no forwarding of any kind, three tries and 30 s per login,
//     at most 10 unauthenticated connections before it starts dropping
//     them, on OVERBRAINER_SSH_PORT (22) of OVERBRAINER_SSH_LISTEN
//     (0.0.0.0), installing openssh-server with apt-get or apk when sshd or
//     ssh-keygen is missing;
//   - execs the watchdog as the container's main process.
//
// Each line the bootstrap logs goes to the container's output (Runpod's
// console and log stream) and to a log on the container's disk, which it
// copies into the run directory as [Log] while the guard still runs: before
// it execs the watchdog, when it fails, and (from the guard's child) at a
// bootstrap_timeout. It ignores SIGPIPE, so a closed output cannot end it;
// an output that blocks holds it only until the guard fires, and the guard
// writes there from a child of its own.
//
// A run directory that cannot take the watchdog (missing, read-only, full)
// gets one under $TMPDIR (or /tmp) that reports and deletes; if not even that
// can be written, the bootstrap deletes the pod once with `runpodctl pod
// delete` (or the API) and sleeps, so the container neither exits nor
// restarts into the same failure.
//
// To stay under [MaxCommandBytes], the script carries the watchdog and most
// of the bootstrap packed (gzip, then base64, without comment lines): its
// first functions, plain, unpack them with base64 and gzip, which every
// image with coreutils or busybox has. A pod that cannot unpack them has no
// watchdog to run: it says `cannot unpack the bootstrap` and deletes itself
// in the same way.
//
// # The image's entrypoint
//
// A container runs its ENTRYPOINT with its CMD as arguments. Sent as CMD
// behind the image's ENTRYPOINT (the create's args or cmd alone), the
// bootstrap would run only where that ENTRYPOINT ends in exec "$@", as
// NVIDIA's /opt/nvidia/nvidia_entrypoint.sh does; one that ignores its
// arguments (a shell-form ENTRYPOINT, a server's start script) would
// leave the pod RUNNING with no watchdog and no sshd, which the sweeper
// cannot tell from a healthy pod until its deadline and extension pass.
// So the bootstrap is the entrypoint, and the image's ENTRYPOINT does not
// run at all. What the job could miss, and how it still gets it:
//
//   - NVIDIA's CUDA images (nvidia/cuda, and Runpod's runpod/base and
//     runpod/pytorch, built on them) have the ENTRYPOINT
//     /opt/nvidia/nvidia_entrypoint.sh: it prints the CUDA banner and
//     license, sources the scripts of /opt/nvidia/entrypoint.d (a driver
//     check that exports NVIDIA_CPU_ONLY=1 when no driver shows, image
//     notices), then execs its arguments. The CUDA forward-compatibility
//     libraries are not its work: the NVIDIA Container Toolkit sets them
//     up (ldconfig) when it creates the container, whatever runs in it.
//     The bootstrap runs that entrypoint, when the image has it, with the
//     job environment's writer (awk) as its command, so that the job's
//     podenv.JobEnv holds what it exported, and its banner reaches the
//     container's output as usual.
//   - NGC images (nvcr.io/nvidia/...) also set their CUDA library paths
//     from /etc/shinit_v2, which bash sources through the image's
//     BASH_ENV and ENV: the bootstrap is a bash, so its environment, and
//     the job's, has them anyway.
//   - Runpod's images have CMD /start.sh, which starts nginx, an sshd for
//     the console's key (PUBLIC_KEY) and Jupyter (JUPYTER_PASSWORD), and
//     sleeps. Any command replaces a CMD, as the old args form did: a
//     guarded pod has the bootstrap's own sshd instead, and no Jupyter.
//   - Another image's ENTRYPOINT is named with OVERBRAINER_IMAGE_ENTRYPOINT
//     (an executable that ends in exec "$@"; `none` turns NVIDIA's off). It
//     runs without RUNPOD_API_KEY, for at most
//     OVERBRAINER_IMAGE_ENTRYPOINT_TIMEOUT seconds (60); one that ignores
//     its arguments, fails or hangs is killed and the job gets the
//     container's environment, which the bootstrap's log says.
//
// Secrets never reach a command line, a log or a world-readable file: the
// host key is moved into an unexported shell variable at once and reaches
// base64 on standard input only (printf where it is a shell built-in, else a
// here-document); sshd and the package manager run without RUNPOD_API_KEY.
// OVERBRAINER_SSHD and OVERBRAINER_SSH_KEYGEN name the programs to use
// instead of searching PATH (tests use them).
package bootstrap
