# overbrainer pod watchdog (POSIX sh).
#
# The bootstrap execs this as the container's main process, under docker-init,
# so it lives exactly as long as the container does. It first checks that the
# pod's own API key can read the pod and writes that verdict where the client
# looks for it; after that it wakes up regularly and deletes the pod as soon as
# one of its rules says the pod has no more reason to exist.
#
# Rules, in order of precedence:
#  - a failed bootstrap (OVERBRAINER_BOOT_FAILED=1): delete at once, kept or not;
#  - keep mode (OVERBRAINER_KEEP_POD=1) protects the pod, but only once the job
#    exists (job.pid): before that a kept pod is guarded like any other;
#  - .pod/cost_cap_at reached: delete, whatever the lease;
#  - OVERBRAINER_DEADLINE passed while the client's lease (.pod/lease mtime) is
#    older than LEASE_TTL, and no snapshot is still being waited for: delete;
#  - .pod/retrieved exists: the results are collected, delete;
#  - the job ended and nobody retrieved it within RETRIEVE_GRACE: delete;
#  - no job started within BOOT_GRACE of the watchdog's start: delete.
#
# Before a rule takes the job away, the job is asked to checkpoint and stop
# (snapshot.request, read by the trainer): at .pod/snapshot_at (the cost rule),
# SNAPSHOT_LEAD before the deadline while the lease is stale, and when the disk
# is DISK_ACT percent full.
#
# The API key is only ever handed to curl on its standard input: never on a
# command line, in a file or in a log. The group_signal helper is prepended to
# this file by the Go package.

RUN_DIR=${OVERBRAINER_RUN_DIR:?OVERBRAINER_RUN_DIR is not set}
POD_DIR=$RUN_DIR/.pod
INTERVAL=${OVERBRAINER_INTERVAL:-60}
PROBE_TRIES=${OVERBRAINER_PROBE_TRIES:-5}
PROBE_WAIT=${OVERBRAINER_PROBE_WAIT:-10}
BOOT_GRACE=${OVERBRAINER_BOOT_GRACE:-1800}
RETRIEVE_GRACE=${OVERBRAINER_RETRIEVE_GRACE:-3600}
KEEP=${OVERBRAINER_KEEP_POD:-0}
DEADLINE=${OVERBRAINER_DEADLINE:-}
LEASE_TTL=${OVERBRAINER_LEASE_TTL:-900}
SNAPSHOT_LEAD=${OVERBRAINER_SNAPSHOT_LEAD:-900}
SNAPSHOT_WAIT=${OVERBRAINER_SNAPSHOT_WAIT:-900}
BOOT_FAILED=${OVERBRAINER_BOOT_FAILED:-0}
VOLUME_DIR=${OVERBRAINER_VOLUME_DIR:-}
VOLUME_GB=${OVERBRAINER_VOLUME_GB:-}
DISK_ACT=97
VOLUME_USABLE=94
# Tests replace df and du by path: busybox sh may run its own applets whatever
# PATH says.
DF=${OVERBRAINER_DF:-df}
DU=${OVERBRAINER_DU:-du}
API=${OVERBRAINER_API_URL:-https://api.runpod.io/v2}
AGENT="overbrainer-watchdog/${OVERBRAINER_VERSION:-unknown}"

now() { date +%s; }

# log MSG: appends "<unix time> MSG" to the watchdog log. It never fails, so a
# full disk cannot stop the loop.
log() {
  printf '%s %s\n' "$(now)" "$1" >> "$POD_DIR/watchdog.log" 2>/dev/null || :
}

# lease_fresh T: the client touched .pod/lease less than LEASE_TTL seconds
# before T, measured on the pod's own clock.
lease_fresh() {
  touched=$(stat -c %Y "$POD_DIR/lease" 2>/dev/null) || return 1
  [ $(($1 - touched)) -lt "$LEASE_TTL" ]
}

# pod_number NAME: prints the decimal number the client wrote in .pod/NAME, or
# nothing when the file is missing or holds anything else.
pod_number() {
  value=$(cat "$POD_DIR/$1" 2>/dev/null)
  case $value in
    '' | *[!0-9]*) value= ;;
  esac
  printf '%s' "$value"
}

# request_snapshot REASON: asks the job to checkpoint and stop. A request that
# is already there (the client's own) is adopted, never overwritten; either
# way the wait for it starts now.
request_snapshot() {
  if [ -f "$RUN_DIR/snapshot.request" ]; then
    requested_at=$n
    log "snapshot already requested"
    return 0
  fi
  tmp=$RUN_DIR/snapshot.request.$$.tmp
  if printf '%s' "$1" > "$tmp" && mv -f "$tmp" "$RUN_DIR/snapshot.request"; then
    requested_at=$n
    log "snapshot requested reason=$1"
    return 0
  fi
  rm -f "$tmp"
  return 1
}

# measure_volume: starts a background `du` of the network volume unless one is
# still running (its marker counts for 60 s at most). du on a network mount may
# hang, and this loop must never wait for it.
measure_volume() {
  du_at=$(stat -c %Y "$POD_DIR/du.running" 2>/dev/null)
  if [ -n "$du_at" ] && [ $(($(now) - du_at)) -lt 60 ]; then
    return 0
  fi
  : > "$POD_DIR/du.running"
  (
    limit=
    command -v timeout >/dev/null 2>&1 && limit='timeout -k 5 30'
    kib=$($limit "$DU" -sk -- "$VOLUME_DIR" 2>/dev/null | cut -f 1)
    case $kib in
      '' | *[!0-9]*) ;;
      *) printf '%s' "$kib" > "$POD_DIR/du.tmp" && mv -f "$POD_DIR/du.tmp" "$POD_DIR/du" ;;
    esac
    rm -f "$POD_DIR/du.running"
  ) </dev/null >/dev/null 2>&1 &
}

# disk_full: the run's storage is at least DISK_ACT percent full. A network
# volume (VOLUME_DIR) is weighed by what it holds (the last background du)
# against VOLUME_USABLE percent of its size, since df there shows the whole
# shared cluster; anything else by df of the run directory.
disk_full() {
  if [ -n "$VOLUME_DIR" ]; then
    gb=$(pod_number volume_gb)
    [ -n "$gb" ] || gb=$VOLUME_GB
    case $gb in
      '' | *[!0-9]*) return 1 ;;
    esac
    total=$((gb * 1000000000 * VOLUME_USABLE / 102400))
    measure_volume
    used=$(pod_number du)
    [ -n "$used" ] || return 1
    [ $((used * 100)) -ge $((total * DISK_ACT)) ]
    return
  fi
  line=$("$DF" -Pk -- "$RUN_DIR" 2>/dev/null | tail -n 1)
  read -r _ _ used avail _ <<DF_LINE
$line
DF_LINE
  case $used$avail in
    '' | *[!0-9]*) return 1 ;;
  esac
  [ $((used * 100)) -ge $(((used + avail) * DISK_ACT)) ]
}

# deadline_due T: whether the deadline may take the pod at T. It waits while a
# snapshot the watchdog asked for (or adopted) is younger than SNAPSHOT_WAIT
# and the job still runs, and, once a snapshot ended the job, until the
# retrieve grace after min(end, deadline) so a client can still collect it.
deadline_due() {
  if [ -n "$requested_at" ] && [ -z "$ended_at" ] && [ $(($1 - requested_at)) -lt "$SNAPSHOT_WAIT" ]; then
    return 1
  fi
  if [ -n "$requested_at" ] && [ -n "$ended_at" ]; then
    base=$ended_at
    [ "$DEADLINE" -lt "$base" ] && base=$DEADLINE
    [ "$1" -ge $((base + RETRIEVE_GRACE)) ] || return 1
  fi
  return 0
}

# api METHOD PATH [BODY]: prints the HTTP status of the call (000 when there
# was no answer). The Authorization header reaches curl on standard input.
api() {
  if [ -n "${3:-}" ]; then
    code=$(printf 'Authorization: Bearer %s\n' "${RUNPOD_API_KEY:-}" |
      curl -s -o /dev/null -w '%{http_code}' --max-time 10 -A "$AGENT" -H @- \
        -H 'Content-Type: application/json' -X "$1" --data "$3" "$API$2" 2>/dev/null)
  else
    code=$(printf 'Authorization: Bearer %s\n' "${RUNPOD_API_KEY:-}" |
      curl -s -o /dev/null -w '%{http_code}' --max-time 10 -A "$AGENT" -H @- \
        -X "$1" "$API$2" 2>/dev/null)
  fi
  printf '%s' "${code:-000}"
}

# probe: prints `ready` when the pod's key can read the pod, or
# `failed <reason>`. Transient answers are retried PROBE_TRIES times.
probe() {
  if [ -z "${RUNPOD_API_KEY:-}" ] || [ -z "${RUNPOD_POD_ID:-}" ]; then
    echo "failed missing_key"
    return
  fi
  if ! command -v curl >/dev/null 2>&1; then
    echo "failed no_curl"
    return
  fi
  tries=0
  while :; do
    code=$(api GET "/pods/$RUNPOD_POD_ID")
    case $code in
      200) echo ready; return ;;
      000 | 408 | 429 | 5??) ;;
      *) echo "failed http_$code"; return ;;
    esac
    tries=$((tries + 1))
    if [ "$tries" -ge "$PROBE_TRIES" ]; then
      if [ "$code" = 000 ]; then echo "failed unreachable"; else echo "failed http_$code"; fi
      return
    fi
    sleep "$PROBE_WAIT"
  done
}

# verdict TEXT: replaces .pod/watchdog atomically, so the client never reads a
# half-written verdict.
verdict() {
  printf '%s\n' "$1" > "$POD_DIR/watchdog.tmp" && mv -f "$POD_DIR/watchdog.tmp" "$POD_DIR/watchdog"
}

# job_ended: the job wrote its exit code or was cancelled, or its recorded
# process group no longer exists (killed before it could write anything).
# Everything runs as root on the pod, so a live group never answers the test
# signal with EPERM: a failed signal means the group is gone.
job_ended() {
  [ -f "$RUN_DIR/exit_code" ] && return 0
  [ -f "$RUN_DIR/cancelled" ] && return 0
  [ -f "$RUN_DIR/job.pid" ] || return 1
  pid=$(cat "$RUN_DIR/job.pid" 2>/dev/null)
  case $pid in
    '' | *[!0-9]*) return 1 ;;
  esac
  [ "$pid" -gt 1 ] || return 1
  if group_signal 0 "$pid"; then return 1; fi
  return 0
}

# delete_pod REASON: deletes the pod, falling back to the terminate action,
# then the stop action, then runpodctl. Fails when every way failed (the next
# tick tries again). DELETE_METHOD tells which one worked: only `stop` leaves
# the volume billing.
delete_pod() {
  log "delete reason=$1"
  code=$(api DELETE "/pods/$RUNPOD_POD_ID")
  log "DELETE $code"
  case $code in
    200 | 202 | 204 | 404) DELETE_METHOD=delete; return 0 ;;
  esac
  code=$(api POST "/pods/$RUNPOD_POD_ID/action" '{"action":"terminate"}')
  log "terminate $code"
  case $code in
    200 | 202 | 204) DELETE_METHOD=terminate; return 0 ;;
  esac
  code=$(api POST "/pods/$RUNPOD_POD_ID/action" '{"action":"stop"}')
  log "stop $code"
  case $code in
    200 | 202 | 204) DELETE_METHOD=stop; return 0 ;;
  esac
  if command -v runpodctl >/dev/null 2>&1; then
    if runpodctl pod delete "$RUNPOD_POD_ID" >/dev/null 2>&1 ||
      runpodctl remove pod "$RUNPOD_POD_ID" >/dev/null 2>&1; then
      log "runpodctl delete ok"
      DELETE_METHOD=runpodctl
      return 0
    fi
    log "runpodctl delete failed"
  fi
  return 1
}

trap 'log "stopping"; exit 0' TERM INT

mkdir -p "$POD_DIR"
start=$(now)
log "start deadline=${DEADLINE:-none} boot_grace=$BOOT_GRACE retrieve_grace=$RETRIEVE_GRACE keep=$KEEP boot_failed=$BOOT_FAILED"
result=$(probe)
if [ "$BOOT_FAILED" = 1 ]; then
  boot_reason=$(cat "$POD_DIR/bootstrap_failed" 2>/dev/null)
  result="failed bootstrap: ${boot_reason:-unknown}"
fi
verdict "$result"
log "probe $result"

started=0
ended_at=
retrieved=0
requested_at=
held=
while :; do
  n=$(now)
  if [ "$started" = 0 ] && [ -f "$RUN_DIR/job.pid" ]; then
    started=1
    log "job started"
  fi
  if [ "$started" = 1 ] && [ -z "$ended_at" ] && job_ended; then
    ended_at=$n
    log "job ended"
  fi
  if [ "$retrieved" = 0 ] && [ -f "$POD_DIR/retrieved" ]; then
    retrieved=1
    log "retrieved marker seen"
  fi
  if [ -n "$DEADLINE" ] && [ "$n" -ge "$DEADLINE" ] && [ -z "$held" ] && lease_fresh "$n"; then
    held=1
    log "deadline passed, lease held by the client"
  fi
  snapshot_at=$(pod_number snapshot_at)
  cost_cap_at=$(pod_number cost_cap_at)

  if [ "$started" = 1 ] && [ -z "$ended_at" ] && [ "$KEEP" != 1 ] && [ -z "$requested_at" ]; then
    if [ -n "$snapshot_at" ] && [ "$n" -ge "$snapshot_at" ]; then
      if request_snapshot cost && [ -n "$cost_cap_at" ]; then
        log "max_cost_usd reached in $(((cost_cap_at - n + 59) / 60)) min: the pod is deleted then"
      fi
    elif [ -n "$DEADLINE" ] && [ "$n" -ge $((DEADLINE - SNAPSHOT_LEAD)) ] && ! lease_fresh "$n"; then
      request_snapshot deadline
    fi
  fi
  if [ "$started" = 1 ] && [ -z "$ended_at" ] && [ ! -f "$RUN_DIR/snapshot.request" ] && disk_full; then
    request_snapshot disk
  fi

  reason=
  if [ "$BOOT_FAILED" = 1 ]; then
    reason=bootstrap_failed
  elif [ "$KEEP" = 1 ] && [ "$started" = 1 ]; then
    :
  elif [ -n "$cost_cap_at" ] && [ "$n" -ge "$cost_cap_at" ]; then
    reason=cost_cap
  elif [ -n "$DEADLINE" ] && [ "$n" -ge "$DEADLINE" ] && ! lease_fresh "$n" && deadline_due "$n"; then
    reason=deadline
  elif [ "$retrieved" = 1 ]; then
    reason=retrieved
  elif [ -n "$ended_at" ]; then
    [ $((n - ended_at)) -ge "$RETRIEVE_GRACE" ] && reason=abandoned
  elif [ "$started" = 0 ] && [ $((n - start)) -ge "$BOOT_GRACE" ]; then
    reason=never_started
  fi
  if [ -n "$reason" ] && delete_pod "$reason"; then
    if [ "$DELETE_METHOD" = stop ]; then
      log "stopped (the volume keeps billing until the pod is removed)"
    else
      log "deleted"
    fi
    exit 0
  fi
  sleep "$INTERVAL"
done
