# overbrainer pod bootstrap (POSIX sh functions). The pod's command is the
# functions above the "packed" line below as they are, the watchdog and the
# functions below that line packed (gzip, then base64: see Script in
# bootstrap.go), the unpacking of the functions and a call to bootstrap_main;
# it runs as the container's command (bash -c) under docker-init. A pod that
# cannot unpack them (no base64 or gzip) deletes itself (no_watchdog).
#
# Nothing may leave the pod unguarded. The watchdog is written before any step
# that can fail, and every failure after that is `fail REASON`: the reason goes
# to .pod/bootstrap_failed and the watchdog is exec'd with
# OVERBRAINER_BOOT_FAILED=1, so it reports `failed bootstrap: REASON` and
# deletes the pod. A run directory that cannot take the watchdog gets one in
# $TMPDIR (/tmp) instead; if even that fails, no_watchdog deletes the pod
# itself. A guard, started before anything touches the run directory, fails
# the bootstrap with bootstrap_timeout if it hangs (apt-get, a stuck network
# volume, a FIFO in the run directory) for OVERBRAINER_BOOT_TIMEOUT seconds.
#
# A restarted container runs this again on the same run directory: a job of
# the earlier container that left no exit code is marked cancelled
# (container_restarted) before sshd serves, so that nobody takes it for alive
# (record_lost_job). A new pod that takes the run directory over from a lost
# pod of its run moves that pod's control files aside first (take_over).
#
# Reasons: run_dir_missing, run_dir_unwritable, claim_missing, claim_failed,
# claimed_by_other_run, host_key_missing, host_key_invalid, host_key_mismatch,
# host_key_failed, authorized_key_invalid, authorized_key_failed,
# job_env_failed, no_sshd, sshd_failed, bootstrap_timeout.
#
# Secrets: OVERBRAINER_HOST_KEY is moved into an unexported variable at once
# and only ever reaches base64 on stdin; RUNPOD_API_KEY stays for the watchdog
# but not for sshd or the package manager; neither goes to JOB_ENV.
# OVERBRAINER_SSHD and OVERBRAINER_SSH_KEYGEN name the binaries (tests).

# say MSG: one line of the bootstrap's log, on the container's output (for
# Runpod's console and log stream) and in $BOOT_LOG, on the container's disk
# (save_boot_log copies it into .pod). Never a secret.
say() {
  say_out "$*"
  say_log "$*"
}
say_out() {
  printf 'overbrainer bootstrap: %s\n' "$1" >&2
}
say_log() {
  [ -z "${BOOT_LOG:-}" ] || printf 'overbrainer bootstrap: %s\n' "$1" >>"$BOOT_LOG" 2>/dev/null
}

# feed VALUE: writes VALUE and a newline to stdout without putting it on a
# command line: with printf when the shell has it built in, else through a
# here-document (posh and mksh run /usr/bin/printf).
feed() {
  case $(command -V printf 2>/dev/null) in
    *builtin* | *built-in*) printf '%s\n' "$1" ;;
    *)
      cat <<FEED_END
$1
FEED_END
      ;;
  esac
}

# unpack PACKED: prints what Script packed (gzip, then base64 on one line);
# fails when base64 or gzip is missing or PACKED does not decode whole (gzip
# checks its length and CRC).
unpack() {
  command -v base64 >/dev/null 2>&1 && command -v gzip >/dev/null 2>&1 &&
    printf '%s\n' "$1" | base64 -d | gzip -dc
}

# no_watchdog WHY: the last resort when no watchdog can run: delete the pod
# once with runpodctl, else with the API, then sleep so that the container
# neither exits nor restarts into the same failure. runpodctl is pointed at
# the pod's own API (the names it reads: see the watchdog's pod_ctl): its
# built-in hosts are Runpod's retired REST v1 or GraphQL, and under an
# emulator another machine; `remove pod` is GraphQL, which no REST v2 API
# answers.
no_watchdog() {
  say "$1: deleting pod ${RUNPOD_POD_ID:-?} without a watchdog"
  api=${OVERBRAINER_API_URL:-https://api.runpod.io/v2}
  if [ -z "${RUNPOD_POD_ID:-}" ]; then
    say "RUNPOD_POD_ID is not set: cannot delete the pod"
  elif command -v runpodctl >/dev/null 2>&1 &&
    RUNPOD_API_URL=$api RUNPOD_REST_V2_URL=$api RUNPOD_GRAPHQL_URL=$api/graphql APIURL=$api/graphql \
      runpodctl pod delete "$RUNPOD_POD_ID" >&2; then
    say "pod deleted with runpodctl"
  else
    code=$(feed "Authorization: Bearer ${RUNPOD_API_KEY:-}" |
      curl -s -o /dev/null -w '%{http_code}' --max-time 30 -H @- -X DELETE \
        "$api/pods/$RUNPOD_POD_ID" 2>/dev/null)
    say "DELETE answered ${code:-000}"
  fi
  while :; do sleep 3600; done
}

# The pod's command carries the lines above as they are, and the lines below
# packed: only what a pod that cannot unpack them needs is above.
# ---- packed ----

# save_boot_log POD_DIR: replaces POD_DIR/bootstrap.log with this boot's log
# (tmp + mv), for the client to collect with the results. Called only while
# the guard runs, or from its child: the volume may hang.
save_boot_log() {
  [ -n "${BOOT_LOG:-}" ] || return 0
  [ -f "$BOOT_LOG" ] || return 0
  rm -f "$1/bootstrap.log.tmp" 2>/dev/null
  { cat "$BOOT_LOG" >"$1/bootstrap.log.tmp" &&
    mv -f "$1/bootstrap.log.tmp" "$1/bootstrap.log"; } 2>/dev/null
}

# write_watchdog PATH: writes the watchdog (WATCHDOG_PACKED, set by the
# command) to PATH through a sibling .tmp file, moved into place only when
# the write succeeded, so that a write cut short by a full disk never leaves
# a truncated watchdog to exec.
write_watchdog() {
  mkdir -p "$(dirname "$1")" || return 1
  # A FIFO left at the temporary name would block the write.
  rm -f "$1.tmp" 2>/dev/null
  unpack "$WATCHDOG_PACKED" >"$1.tmp" || return 1
  mv -f "$1.tmp" "$1"
}

# key_id LINE: prints the type and base64 of a public key line, without its
# comment, which is how keys are compared.
key_id() {
  read -r kt kb _ <<KEY_END
$1
KEY_END
  printf '%s %s\n' "$kt" "$kb"
}

# public_key_line VALUE: VALUE is one `ssh-TYPE BASE64 [comment]` line.
public_key_line() {
  case $1 in
    *'
'*) return 1 ;;
  esac
  read -r kt kb _ <<KEY_END
$1
KEY_END
  case $kt in
    ssh-?* | ecdsa-?* | sk-?*) ;;
    *) return 1 ;;
  esac
  case $kb in
    '' | *[!A-Za-z0-9+/=]*) return 1 ;;
  esac
}

run_watchdog() {
  stop_guard
  umask 022
  # The shell running us (bash on a pod) has printf built in, which the
  # watchdog needs to keep the API key off curl's command line.
  exec "${BASH:-sh}" "$WATCHDOG"
}

# fail REASON: records why the bootstrap failed and hands the pod to the
# watchdog, which reports it and deletes the pod.
fail() {
  say "failed: $1"
  [ -z "${HOST_KEY:-}" ] || rm -f "$HOST_KEY.tmp"
  # A FIFO there would block the write.
  rm -f "$POD_DIR/bootstrap_failed" 2>/dev/null
  printf '%s\n' "$1" >"$POD_DIR/bootstrap_failed" 2>/dev/null ||
    say "cannot write $POD_DIR/bootstrap_failed"
  [ -z "${GUARD:-}" ] || save_boot_log "$POD_DIR"
  OVERBRAINER_BOOT_FAILED=1
  export OVERBRAINER_BOOT_FAILED
  run_watchdog
  no_watchdog "cannot run $WATCHDOG"
}

# prepare_guard: writes the guard's own watchdog into the container's
# $TMPDIR, before anything touches the run directory: a FIFO there, or a
# network volume that hangs, may block any step from the first, and only a
# running guard ends that.
prepare_guard() {
  GUARD_DIR=${TMPDIR:-/tmp}/overbrainer-guard
  rm -rf "$GUARD_DIR" 2>/dev/null
  mkdir -p "$GUARD_DIR/.pod" 2>/dev/null && BOOT_LOG=$GUARD_DIR/bootstrap.log
  { mkdir -p "$GUARD_DIR/.pod" && write_watchdog "$GUARD_DIR/.pod/watchdog.sh"; } 2>/dev/null ||
    say "cannot write the guard's watchdog in $GUARD_DIR"
}

# start_guard: fails the bootstrap if it is still running after
# OVERBRAINER_BOOT_TIMEOUT seconds. The hung bootstrap is left alone: it keeps
# the container up while the guard's watchdog deletes the pod. That watchdog
# is the guard's own, under $TMPDIR on the container's disk, whatever the run
# directory is: the volume may hang at any moment, and a guard that wrote or
# read there could hang with it. The run directory named in $GUARD_DIR/run_dir
# (once prepare_run_dir wrote the watchdog there) gets the failure and the
# verdict from a child that nothing waits for.
start_guard() {
  limit=${OVERBRAINER_BOOT_TIMEOUT:-900}
  case $limit in '' | *[!0-9]*) limit=900 ;; esac
  (
    # The key waits unexported: the sleeps outlive stop_guard by up to a
    # second, orphaned, and must not carry it.
    guard_key=${RUNPOD_API_KEY:-}
    unset RUNPOD_API_KEY
    waited=0
    while [ "$waited" -lt "$limit" ]; do
      sleep 1
      waited=$((waited + 1))
    done
    # The container's output may be a pipe nobody drains: a child writes
    # there.
    msg="failed: bootstrap_timeout (still running after ${limit}s)"
    say_log "$msg"
    (say_out "$msg") &
    rm -f "$GUARD_DIR/.pod/bootstrap_failed" 2>/dev/null
    printf 'bootstrap_timeout\n' >"$GUARD_DIR/.pod/bootstrap_failed" 2>/dev/null
    dir=
    [ ! -f "$GUARD_DIR/run_dir" ] || read -r dir <"$GUARD_DIR/run_dir" || dir=
    [ -z "$dir" ] || (report_timeout "$dir") </dev/null >/dev/null 2>&1 &
    watchdog=$GUARD_DIR/.pod/watchdog.sh
    wd_dir=$GUARD_DIR
    # Without a watchdog of its own (a full $TMPDIR), the run directory's
    # is the only one left.
    if [ ! -f "$watchdog" ] && [ -n "$dir" ]; then
      watchdog=$dir/.pod/watchdog.sh
      wd_dir=$dir
    fi
    OVERBRAINER_BOOT_FAILED=1
    RUNPOD_API_KEY=$guard_key
    export OVERBRAINER_BOOT_FAILED RUNPOD_API_KEY
    umask 022
    exec env OVERBRAINER_RUN_DIR="$wd_dir" "${BASH:-sh}" "$watchdog"
  ) </dev/null &
  GUARD=$!
}

# report_timeout DIR: what the client reads in the run directory DIR after a
# bootstrap_timeout: the failure and the verdict (tmp + mv, as the watchdog
# writes it). Runs in a child of the guard, which may hang on the volume.
report_timeout() {
  rm -f "$1/.pod/bootstrap_failed" "$1/.pod/watchdog.tmp"
  printf 'bootstrap_timeout\n' >"$1/.pod/bootstrap_failed"
  printf 'failed bootstrap: bootstrap_timeout\n' >"$1/.pod/watchdog.tmp" &&
    mv -f "$1/.pod/watchdog.tmp" "$1/.pod/watchdog"
  save_boot_log "$1/.pod"
}

stop_guard() {
  [ -z "${GUARD:-}" ] || kill "$GUARD" 2>/dev/null
  GUARD=
  BOOT_LOG=
}

# prepare_run_dir: creates .pod and writes the watchdog there; a run directory
# that is missing or cannot take it (a full volume) gets a stand-in under
# $TMPDIR (/tmp) so that the watchdog can still delete the pod.
prepare_run_dir() {
  RUN_DIR=${OVERBRAINER_RUN_DIR:-}
  why=
  if [ -z "$RUN_DIR" ]; then
    why=run_dir_missing
  elif ! { mkdir -p "$RUN_DIR/.pod" && write_watchdog "$RUN_DIR/.pod/watchdog.sh"; }; then
    why=run_dir_unwritable
  fi
  if [ -n "$why" ]; then
    say "$why: ${RUN_DIR:-OVERBRAINER_RUN_DIR is empty}"
    RUN_DIR=${TMPDIR:-/tmp}/overbrainer-bootstrap
    say "the watchdog reports from $RUN_DIR"
    OVERBRAINER_RUN_DIR=$RUN_DIR
    export OVERBRAINER_RUN_DIR
    if ! { mkdir -p "$RUN_DIR/.pod" && write_watchdog "$RUN_DIR/.pod/watchdog.sh"; }; then
      no_watchdog "cannot write the watchdog"
    fi
  fi
  POD_DIR=$RUN_DIR/.pod
  WATCHDOG=$POD_DIR/watchdog.sh
  # From now on the guard reports in the run directory too.
  printf '%s\n' "$RUN_DIR" >"$GUARD_DIR/run_dir" 2>/dev/null
  [ -z "$why" ] || fail "$why"
}

# claim_run_dir: the run directory belongs to the first run that claims it.
# The claim is the run's public host key, the same on every pod of the run, so
# finding our own claim means a resumed run (a network volume) and going on.
# The file is created exclusively (noclobber), so two pods racing for one
# directory cannot both win.
claim_run_dir() {
  public_key_line "${OVERBRAINER_CLAIM:-}" || fail claim_missing
  CLAIM=$(key_id "$OVERBRAINER_CLAIM")
  if (set -C && printf '%s\n' "$OVERBRAINER_CLAIM" >"$POD_DIR/claim") 2>/dev/null; then
    say "claimed $RUN_DIR"
  elif [ -f "$POD_DIR/claim" ]; then
    theirs=$(key_id "$(head -n 1 "$POD_DIR/claim")")
    [ "$theirs" = "$CLAIM" ] || fail claimed_by_other_run
    say "resuming the run in $RUN_DIR"
  else
    fail claim_failed
  fi
  # Files of an earlier pod of this run would mislead the client; the old
  # watchdog's pid may name another process here, which a wake would HUP
  # before this watchdog writes its own.
  rm -f "$POD_DIR/bootstrap_failed" "$POD_DIR/watchdog" "$POD_DIR/watchdog.pid"
}

# take_over: a pod that takes its run directory over from a lost pod of its
# run (OVERBRAINER_TAKE_OVER=1: a recovery on the run's network volume) finds
# there what that pod and its job left: a job.pid naming a process group of
# another machine, its exit code or cancelled marker, a snapshot request, the
# lost pod's lease, cost plan and retrieved marker, its logs. Its watchdog
# would take the lost job for its own (started, and ended or marked lost) and
# delete this pod by the lost pod's rules (abandoned, cost_cap, retrieved); a
# client would read the lost job's end as its own. They are moved, as they
# are, into .pod/earlier/$RUNPOD_POD_ID (the run directory's layout kept),
# made under a .partial name and renamed once whole, before sshd serves and
# the watchdog starts. The outputs, job/ and command.sh stay: the job resumes
# from them; so do the claim and what is the volume's (volume_gb, du). A
# restart of this pod's container finds that directory and moves nothing: a
# job there is this pod's, which record_lost_job marks lost as for any
# restart. A file that cannot be moved fails the bootstrap
# (run_dir_unwritable) rather than let the lost job pass for this pod's.
take_over() {
  [ "${OVERBRAINER_TAKE_OVER:-}" = 1 ] || return 0
  earlier=$POD_DIR/earlier
  # A link there would send the moves out of the run directory.
  [ ! -h "$earlier" ] || rm -f "$earlier" 2>/dev/null
  case ${RUNPOD_POD_ID:-} in
    '' | *[!A-Za-z0-9_-]*) kept=$earlier/unknown ;;
    *) kept=$earlier/$RUNPOD_POD_ID ;;
  esac
  [ ! -d "$kept" ] || return 0
  part=$kept.partial
  [ ! -h "$part" ] || rm -f "$part" 2>/dev/null
  mkdir -p "$part/.pod" 2>/dev/null || fail run_dir_unwritable
  moved=
  for f in job.pid exit_code cancelled snapshot.request progress job.log \
    .pod/lease .pod/retrieved .pod/snapshot_at .pod/cost_cap_at \
    .pod/watchdog.log .pod/bootstrap.log .pod/du.running; do
    [ -e "$RUN_DIR/$f" ] || [ -h "$RUN_DIR/$f" ] || continue
    mv -f "$RUN_DIR/$f" "$part/$f" 2>/dev/null || fail run_dir_unwritable
    moved="$moved $f"
  done
  mv -f "$part" "$kept" 2>/dev/null || fail run_dir_unwritable
  say "taking the run over from a lost pod: moved${moved:- nothing} into $kept; the outputs stay"
}

# record_lost_job: a job.pid without exit_code or cancelled in a resumed run
# directory is the job of an earlier container: Runpod restarted the pod's
# container (or an earlier pod of the run ran it), the volume kept the run
# directory, but the job died with its container before it could write its
# exit code. Its process group number means nothing in this container's PID
# namespace and may name an unrelated live group, so the job is marked
# cancelled (container_restarted, tmp + mv), which the watchdog and the
# launcher read as ended. Only called before sshd serves: no job of this
# container can exist yet, so no live job is ever marked. A run directory
# that cannot take the marker fails the bootstrap (run_dir_unwritable) rather
# than let the old number pass for a live job. The checks mirror the
# readers': only regular files count.
record_lost_job() {
  [ -f "$RUN_DIR/job.pid" ] || return 0
  [ ! -f "$RUN_DIR/exit_code" ] && [ ! -f "$RUN_DIR/cancelled" ] || return 0
  # A symlink or fifo in the way is replaced, never written through.
  rm -f "$RUN_DIR/cancelled.tmp" "$RUN_DIR/cancelled" 2>/dev/null
  if ! { printf 'container_restarted\n' >"$RUN_DIR/cancelled.tmp" &&
    mv -f "$RUN_DIR/cancelled.tmp" "$RUN_DIR/cancelled" &&
    [ -f "$RUN_DIR/cancelled" ]; } 2>/dev/null; then
    rm -f "$RUN_DIR/cancelled.tmp" 2>/dev/null
    say "cannot record that the job of the earlier container was lost"
    fail run_dir_unwritable
  fi
  say "job lost: the job of an earlier container (the pod's container restarted) left no exit code; marked cancelled (container_restarted), its results so far can still be collected"
}

# locate OVERRIDE NAME: prints the absolute path of the program NAME.
locate() {
  if [ -n "$1" ]; then
    [ -x "$1" ] && printf '%s\n' "$1"
    return
  fi
  found=$(command -v "$2" 2>/dev/null)
  case $found in
    /*) printf '%s\n' "$found" && return 0 ;;
  esac
  for d in /usr/sbin /usr/bin /sbin /bin /usr/local/sbin /usr/local/bin; do
    [ -x "$d/$2" ] && printf '%s\n' "$d/$2" && return 0
  done
  return 1
}

find_openssh() {
  SSHD=$(locate "${OVERBRAINER_SSHD:-}" sshd) &&
    KEYGEN=$(locate "${OVERBRAINER_SSH_KEYGEN:-}" ssh-keygen)
}

# ensure_openssh: finds sshd and ssh-keygen, installing openssh-server with
# apt-get or apk when the image lacks them.
ensure_openssh() {
  find_openssh && return 0
  say "no sshd or ssh-keygen: installing openssh-server"
  (
    unset RUNPOD_API_KEY
    if command -v apt-get >/dev/null 2>&1; then
      DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
          --no-install-recommends openssh-server && exit 0
    fi
    if command -v apk >/dev/null 2>&1; then
      apk add --no-cache openssh-server openssh-keygen && exit 0
    fi
    exit 1
  ) </dev/null >&2
  find_openssh || fail no_sshd
}

# install_host_key: decodes the run's host key into sshd's host key file
# (0600) once its public half is the claim.
install_host_key() {
  case $host_key_b64 in
    '' | *'{{'* | *RUNPOD_SECRET_*) fail host_key_missing ;;
  esac
  ensure_openssh
  umask 077
  if ! { mkdir -p "$ETC" && chmod 755 "$ETC" && rm -f "$HOST_KEY.tmp" &&
    : >"$HOST_KEY.tmp"; }; then
    fail host_key_failed
  fi
  feed "$host_key_b64" | base64 -d >"$HOST_KEY.tmp" 2>/dev/null ||
    fail host_key_invalid
  ours=$("$KEYGEN" -y -P '' -f "$HOST_KEY.tmp" </dev/null 2>/dev/null) ||
    fail host_key_invalid
  public_key_line "$ours" || fail host_key_invalid
  [ "$(key_id "$ours")" = "$CLAIM" ] || fail host_key_mismatch
  if ! { mv -f "$HOST_KEY.tmp" "$HOST_KEY" && chmod 600 "$HOST_KEY"; }; then
    fail host_key_failed
  fi
  umask 022
}

install_authorized_key() {
  public_key_line "${OVERBRAINER_AUTHORIZED_KEY:-}" ||
    fail authorized_key_invalid
  umask 077
  if ! { mkdir -p /root/.ssh && chmod 700 /root/.ssh &&
    printf '%s\n' "$OVERBRAINER_AUTHORIZED_KEY" >/root/.ssh/authorized_keys.tmp &&
    mv -f /root/.ssh/authorized_keys.tmp /root/.ssh/authorized_keys &&
    chmod 600 /root/.ssh/authorized_keys; } 2>/dev/null; then
    fail authorized_key_failed
  fi
  umask 022
}

# job_env_lines: prints the environment as `export NAME='value'` lines that
# any POSIX shell sources back to the same values, without RUNPOD_API_KEY,
# the host key, anything named like a secret (TOKEN, SECRET, KEY, PASSW,
# CREDENTIAL, *_PASS, *_PWD, DATABASE_URL) unless its value is public keys
# only, or any name listed in OVERBRAINER_SECRET_ENV (commas or spaces).
# awk reads the values from its own environment, never from a command line.
# Its program is in a variable (never exported) so that job_env_via can
# hand it to a program; given a dest, it writes the lines into that file.
JOB_ENV_AWK='
function public(v,   n, i, line) {
  n = split(v, line, "\n")
  for (i = 1; i <= n; i++)
    if (line[i] !~ /^(ssh-|ecdsa-|sk-)[A-Za-z0-9@.-]+ [A-Za-z0-9+\/]+=*( .*)?$/)
      return 0
  return n > 0
}
BEGIN {
  n = split(ENVIRON["OVERBRAINER_SECRET_ENV"], listed, /[ ,]+/)
  for (i = 1; i <= n; i++) secret[listed[i]] = 1
  for (name in ENVIRON) {
    if (name !~ /^[A-Za-z_][A-Za-z0-9_]*$/) continue
    if (name ~ /^(_|PWD|OLDPWD|SHLVL|RUNPOD_API_KEY|OVERBRAINER_HOST_KEY)$/ || name in secret) continue
    v = ENVIRON[name]
    if (toupper(name) ~ /TOKEN|SECRET|KEY|PASSW|CREDENTIAL|_PASS$|_PWD$|^DATABASE_URL$/ && !public(v)) continue
    n = split(v, part, "\047")
    out = part[1]
    for (i = 2; i <= n; i++) out = out "\047\\\047\047" part[i]
    if (dest == "") printf "export %s=\047%s\047\n", name, out
    else printf "export %s=\047%s\047\n", name, out > dest
  }
}'

job_env_lines() {
  awk "$JOB_ENV_AWK"
}

# image_entrypoint: sets IMAGE_ENTRYPOINT to the image's ENTRYPOINT that the
# job's environment goes through, and fails when there is none. The pod's
# entrypoint is the bootstrap's own, so the image's never ran; the job gets
# what it sets up from job_env_via. It is OVERBRAINER_IMAGE_ENTRYPOINT
# (`none` for no entrypoint), else NVIDIA's CUDA images' (which Runpod's
# images inherit) when the image has it: it runs the scripts of
# /opt/nvidia/entrypoint.d, whose exports (NVIDIA_CPU_ONLY without a
# driver, say) the job would otherwise miss, and ends in exec "$@".
image_entrypoint() {
  IMAGE_ENTRYPOINT=${OVERBRAINER_IMAGE_ENTRYPOINT:-}
  case $IMAGE_ENTRYPOINT in
    none) return 1 ;;
    '')
      IMAGE_ENTRYPOINT=/opt/nvidia/nvidia_entrypoint.sh
      [ -f "$IMAGE_ENTRYPOINT" ] && [ -x "$IMAGE_ENTRYPOINT" ]
      ;;
  esac
}

# job_env_via ENTRYPOINT FILE: writes the job's environment into FILE as the
# image's ENTRYPOINT leaves it: ENTRYPOINT runs with awk (JOB_ENV_AWK) as its
# arguments, as the image would run its CMD, so that what it exports
# reaches the job. It runs without RUNPOD_API_KEY, its output going to the
# container's, for at most OVERBRAINER_IMAGE_ENTRYPOINT_TIMEOUT seconds
# (60), then it is killed. An entrypoint that ignores its arguments, fails
# or hangs leaves no FILE, and job_env_via fails; services it started in
# the background are left alone.
job_env_via() {
  ep_limit=${OVERBRAINER_IMAGE_ENTRYPOINT_TIMEOUT:-60}
  case $ep_limit in '' | *[!0-9]* | 0) ep_limit=60 ;; esac
  rm -f "$2" "$2.pid" "$2.status" 2>/dev/null
  # Its status goes into a file: a shell may not reap a finished child
  # before it waits, and kill -0 finds a zombie alive. Its pid is the one
  # sh writes before it execs the entrypoint: $! may name a subshell of
  # ours (yash forks one for a background command).
  (
    unset RUNPOD_API_KEY
    sh -c 'printf "%s\n" "$$" >"$0" && exec "$@"' "$2.pid" \
      "$1" awk -v dest="$2" "$JOB_ENV_AWK" </dev/null >&2
    printf '%s\n' "$?" >"$2.status"
  ) </dev/null &
  via=$!
  tenths=0
  ep_killed=
  until [ -s "$2.status" ]; do
    # Past the limit the entrypoint is killed, and the subshell left to
    # write its status: killed too, it could be writing it after the files
    # below are removed (under yash, $! may not even name it). It is
    # killed only if it has not written within 10 s more.
    if [ "$tenths" -ge $((ep_limit * 10 + 100)) ]; then
      kill -9 "$via" 2>/dev/null
      break
    elif [ "$tenths" -ge $((ep_limit * 10)) ] && [ -z "$ep_killed" ]; then
      ep_pid=
      read -r ep_pid <"$2.pid" 2>/dev/null
      [ -z "$ep_pid" ] || { kill -9 "$ep_pid" 2>/dev/null; ep_killed=1; }
    fi
    if (unset RUNPOD_API_KEY && sleep 0.1 2>/dev/null); then
      tenths=$((tenths + 1))
    else
      (unset RUNPOD_API_KEY && exec sleep 1)
      tenths=$((tenths + 10))
    fi
  done
  wait "$via" 2>/dev/null
  status=
  read -r status <"$2.status" 2>/dev/null
  rm -f "$2.pid" "$2.status" 2>/dev/null
  if [ "$status" = 0 ] && [ -f "$2" ]; then
    return 0
  fi
  rm -f "$2" 2>/dev/null
  return 1
}

# write_job_env: the job's environment file, through the image's entrypoint
# when it has one (image_entrypoint), else the container's environment.
write_job_env() {
  umask 077
  rm -f "$JOB_ENV.tmp" 2>/dev/null
  if image_entrypoint; then
    if job_env_via "$IMAGE_ENTRYPOINT" "$JOB_ENV.tmp"; then
      say "the job's environment is what the image's entrypoint $IMAGE_ENTRYPOINT sets up"
    else
      say "the image's entrypoint $IMAGE_ENTRYPOINT did not run its arguments (it ignored them, failed or took over ${ep_limit}s): the job's environment is the container's, without its setup"
    fi
  fi
  { { [ -f "$JOB_ENV.tmp" ] || job_env_lines >"$JOB_ENV.tmp"; } &&
    mv -f "$JOB_ENV.tmp" "$JOB_ENV" && chmod 600 "$JOB_ENV"; } 2>/dev/null || fail job_env_failed
  umask 022
}

# start_sshd: a key-only sshd for root with our host key, on
# OVERBRAINER_SSH_PORT (22) of OVERBRAINER_SSH_LISTEN (0.0.0.0).
start_sshd() {
  port=${OVERBRAINER_SSH_PORT:-22}
  listen=${OVERBRAINER_SSH_LISTEN:-0.0.0.0}
  case $port in '' | *[!0-9]*) say "bad port $port" && fail sshd_failed ;; esac
  case $listen in
    '' | *[!0-9A-Za-z.:-]*) say "bad listen address" && fail sshd_failed ;;
  esac
  # The option names are those that OpenSSH 7.4 to 9 all accept. Nothing
  # is forwarded (a login is for commands and files only), only root may
  # log in, and unauthenticated connections are few and short, so that a
  # flood of them cannot lock the client out.
  { mkdir -p /run/sshd && chmod 755 /run/sshd && cat >"$ETC/sshd_config" <<SSHD_END; } || fail sshd_failed
# Written by the overbrainer bootstrap: root, public keys only.
Port $port
ListenAddress $listen
HostKey $HOST_KEY
PidFile $ETC/sshd.pid
AuthorizedKeysFile /root/.ssh/authorized_keys
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
PermitEmptyPasswords no
ChallengeResponseAuthentication no
HostbasedAuthentication no
PermitRootLogin prohibit-password
AllowUsers root
MaxAuthTries 3
LoginGraceTime 30
MaxStartups 10:30:60
DisableForwarding yes
PermitUserEnvironment no
StrictModes yes
UsePAM no
UseDNS no
X11Forwarding no
PrintMotd no
ClientAliveInterval 30
ClientAliveCountMax 6
Subsystem sftp internal-sftp
SSHD_END
  if ! (unset RUNPOD_API_KEY && exec "$SSHD" -t -f "$ETC/sshd_config") </dev/null >&2; then
    fail sshd_failed
  fi
  rm -f "$ETC/sshd.log" "$ETC/sshd.pid"
  (unset RUNPOD_API_KEY && exec "$SSHD" -f "$ETC/sshd_config" -E "$ETC/sshd.log") </dev/null ||
    fail sshd_failed
  # sshd may daemonize before it binds; it writes its pid file once its
  # sockets listen, and logs why it could not.
  tries=0
  until [ -s "$ETC/sshd.pid" ] && kill -0 "$(cat "$ETC/sshd.pid")" 2>/dev/null; do
    tries=$((tries + 1))
    if [ "$tries" -gt 300 ] || grep -q 'Cannot bind' "$ETC/sshd.log" 2>/dev/null; then
      cat "$ETC/sshd.log" >&2
      fail sshd_failed
    fi
    # Without the pod key: a sleep seen as it ends, when the bootstrap may
    # have become the watchdog, must not carry it.
    (unset RUNPOD_API_KEY && { sleep 0.1 2>/dev/null || exec sleep 1; })
  done
  say "sshd listening on $listen:$port"
}

bootstrap_main() {
  # A closed container output must not end the boot at its first line.
  trap '' PIPE
  umask 022
  # The host key goes into an unexported variable: no child ever sees it.
  # The command's first lines moved it there already, before the
  # unpacking ran a program; a caller of bootstrap_main alone has it here.
  [ -z "${OVERBRAINER_HOST_KEY+set}" ] || host_key_b64=$OVERBRAINER_HOST_KEY
  unset OVERBRAINER_HOST_KEY
  ETC=/etc/overbrainer
  JOB_ENV=$ETC/job.env
  HOST_KEY=$ETC/ssh_host_ed25519_key
  GUARD=
  BOOT_LOG=
  prepare_guard
  start_guard
  prepare_run_dir
  claim_run_dir
  take_over
  record_lost_job
  install_host_key
  install_authorized_key
  write_job_env
  start_sshd
  say "ready; handing the pod to the watchdog"
  save_boot_log "$POD_DIR"
  stop_guard
  # The guard may have fired just before it was stopped; it reports on the
  # container's disk first.
  if [ -f "$GUARD_DIR/.pod/bootstrap_failed" ]; then
    fail bootstrap_timeout
  fi
  run_watchdog
}
