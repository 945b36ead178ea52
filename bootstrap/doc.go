// Package bootstrap builds the pod's command: a `bash -c` script that runs as
// the container's command under docker-init and turns any image with bash
// into a guarded, reachable pod ([Command]).
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
//     any listed in OVERBRAINER_SECRET_ENV (podenv.Settings.SecretEnv);
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
// Secrets never reach a command line, a log or a world-readable file: the
// host key is moved into an unexported shell variable at once and reaches
// base64 on standard input only (printf where it is a shell built-in, else a
// here-document); sshd and the package manager run without RUNPOD_API_KEY.
// OVERBRAINER_SSHD and OVERBRAINER_SSH_KEYGEN name the programs to use
// instead of searching PATH (tests use them).
package bootstrap
