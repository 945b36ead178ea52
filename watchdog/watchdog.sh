# overbrainer pod watchdog (POSIX sh).
#
# The bootstrap execs this as the container's main process, under docker-init,
# so it lives exactly as long as the container does. It first checks that the
# pod's own API key can read the pod and writes that verdict where the client
# looks for it; after that it wakes up regularly and deletes the pod as soon as
# one of its rules says the pod has no more reason to exist.
#
# Rules, in order of precedence:
#  - a failed bootstrap (OVERBRAINER_BOOT_FAILED=1): the verdict says so and
#    the pod is deleted at once, kept or not, since no job will ever start;
#  - keep mode (OVERBRAINER_KEEP_POD=1) protects the pod, but only once the job
#    exists (job.pid): before that a kept pod is guarded like any other;
#    once its job ended, a kept pod left unused for KEEP_IDLE (no SSH
#    session open, no process of anyone's using CPU, no busy GPU, no lease
#    touched) is stopped when it has a pod volume, else deleted
#    (kept_idle; 0: never);
#  - .pod/cost_cap_at reached (100% of max_cost_usd): delete, whatever the
#    lease;
#  - OVERBRAINER_DEADLINE passed while the client's lease (.pod/lease mtime) is
#    LEASE_TTL old, unless a snapshot is still awaited (deadline_due): delete;
#  - OVERBRAINER_DEADLINE plus MAX_EXTENSION passed: delete, whatever the
#    lease (0 makes the deadline hard), so a client that keeps touching the
#    lease cannot keep the pod for ever;
#  - .pod/retrieved exists: the results are collected, delete;
#  - the job ended and nobody retrieved it within RETRIEVE_GRACE: delete,
#    once the lease is LEASE_TTL old too (a client still downloading the
#    results holds it), so at the later of the two;
#  - no job started within BOOT_GRACE of the watchdog's start (its first
#    clock read that worked): delete;
#  - only when asked (STALL_AFTER, 0 by default: off): the job has not
#    moved (output, progress, outputs, CPU; a busy GPU when asked) for STALL_AFTER,
#    then SNAPSHOT_WAIT more after its snapshot was asked (stalled; not
#    for a kept pod): delete. See stall_check.
#
# Before a rule takes the job away, the job is asked to checkpoint and stop
# (snapshot.request, read by the trainer): at .pod/snapshot_at (95% of
# max_cost_usd) or SNAPSHOT_LEAD before .pod/cost_cap_at when that comes
# first; SNAPSHOT_LEAD before the deadline while the lease is stale, and
# before the deadline plus MAX_EXTENSION whatever the lease; and when
# the disk is DISK_ACT percent full, kept pod or not. A request the watchdog
# made holds the deadline off for SNAPSHOT_WAIT; once a snapshot ended the job,
# the deadline gives way to the retrieve grace (counted from the end of the
# job, or from the deadline when that is earlier) so a client can still
# collect the snapshot.
#
# A job of an earlier container counts as ended: when Runpod restarts the
# pod's container, the run directory survives but none of its processes do,
# and the number in job.pid may name an unrelated live group of the new
# container. The bootstrap marks such a job cancelled (container_restarted)
# before it starts sshd, so the job ends at this watchdog's first tick and the
# abandoned rule counts from there. A client may start the lost job again in
# its run directory (the start script's restart mode): once the cancelled
# marker is gone and a new job.pid is there, the job runs again.
#
# No rule fires on a clock read that failed (date failing or printing no
# Unix time): the tick logs clock_unreadable and deletes nothing, and the
# next one reads the clock again (see start and clock_sync).
#
# Timing: the loop wakes every INTERVAL seconds, or sooner when one of the
# time rules above falls due earlier, so each fires within a second or two of
# its time whatever INTERVAL is. A steady tick runs one process, its sleep:
# the time comes from the kernel's uptime (date only every CLOCK_EVERY
# ticks, and never once the job exists: see clock_sync) and df runs every few ticks (look_disk): on a disk
# under 87% full, dash averages 1.3 processes a tick (BenchmarkTickProcesses
# counts them). On a network volume du takes df's place, as rarely (see
# volume_full): 1.5 a tick under dash.
#
# The API key is read once, removed from the environment (so no child inherits
# it) and handed to curl on its standard input only: never on a command line,
# in a file or in a log. runpodctl, the last fallback, gets it in its own
# environment, which is how it reads it on a pod, with the pod's own API as
# its every host (pod_ctl). The group_signal helper is
# prepended to this file by the Go package.
#
# Log lines (.pod/watchdog.log) are `<unix time> <kind> key=value...`, with at
# most one final msg= field that runs to the end of the line; package
# watchdog parses them. A relay copies them to the container's output.

# A closed or broken container output must never end the watchdog: the
# shell's own messages may go there.
trap '' PIPE
RUN_DIR=${OVERBRAINER_RUN_DIR:?OVERBRAINER_RUN_DIR is not set}
POD_DIR=$RUN_DIR/.pod
API=${OVERBRAINER_API_URL:-https://api.runpod.io/v2}
AGENT="overbrainer-watchdog/${OVERBRAINER_VERSION:-unknown}"
POD_ID=${RUNPOD_POD_ID:-}
API_KEY=${RUNPOD_API_KEY:-}
unset RUNPOD_API_KEY
# A proxy the job configured for its own downloads must not turn every
# delete into 000: no child of the watchdog inherits one (curl is also told
# --noproxy '*', and -q keeps it from reading a .curlrc).
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
KEEP=${OVERBRAINER_KEEP_POD:-0}
BOOT_FAILED=${OVERBRAINER_BOOT_FAILED:-0}
VOLUME_DIR=${OVERBRAINER_VOLUME_DIR:-}
DISK_ACT=97
VOLUME_USABLE=94
# Tests replace df and du by path: busybox sh may run its own applets whatever
# PATH says.
DF=${OVERBRAINER_DF:-df}
DU=${OVERBRAINER_DU:-du}

# date_now: sets $date_s to date's Unix time, or empties it and fails when
# date fails or prints anything else (nothing, a word, 0, a leading zero,
# more than 10 digits), with $date_how saying which: failed, empty or
# garbled. A builtin check, so that $number is left alone.
date_now() {
  date_how=
  date_s=$(date +%s 2>/dev/null) || date_how=failed
  case $date_how$date_s in
    '') date_how=empty ;;
    failed*) ;;
    *[!0-9]* | 0* | ???????????*) date_how=garbled ;;
    *) return 0 ;;
  esac
  date_s=
  return 1
}

# log MSG: appends "<unix time> MSG" to the watchdog log, on the descriptor
# opened once below (7). It never fails, so a full disk cannot stop the loop.
# The time is the watchdog's clock (log_now) once it is defined; the
# settings read before that, long before any job exists, log date's time.
log() {
  if [ -n "${clock_ready:-}" ]; then
    log_now
  else
    logged_at=0
    ! date_now || logged_at=$date_s
  fi
  printf '%s %s\n' "$logged_at" "$1" 2>/dev/null >&7 || :
}

# number VALUE: sets $number to VALUE without leading zeros (which sh
# arithmetic would read as octal) and succeeds when VALUE is 1 to 10 decimal
# digits; otherwise empties $number and fails. Every value that reaches
# arithmetic goes through here or through shrink: a malformed one would make
# the shell exit, and mksh computes with 32 bits, so 10 digits (a Unix time)
# is as large as a number may get.
number() {
  number=
  case $1 in
    '' | *[!0-9]*) return 1 ;;
  esac
  number=${1#"${1%%[!0]*}"}
  [ -n "$number" ] || number=0
  case $number in
    ???????????*) number= && return 1 ;;
  esac
}

# shrink A B: sets $shrunk_a and $shrunk_b to A and B (decimal digits, up to
# 18 of them) divided by the same power of ten, so that both have at most 5
# digits: their ratio survives, and A*10000 still fits in 32 bits. Fails when
# either is not a number.
shrink() {
  case $1$2 in
    *[!0-9]*) return 1 ;;
  esac
  case $1 in '' | ???????????????????*) return 1 ;; esac
  case $2 in '' | ???????????????????*) return 1 ;; esac
  shrunk_a=$1
  shrunk_b=$2
  while [ "${#shrunk_a}" -gt 5 ] || [ "${#shrunk_b}" -gt 5 ]; do
    shrunk_a=${shrunk_a%?}
    shrunk_b=${shrunk_b%?}
  done
  number "${shrunk_a:-0}" && shrunk_a=$number
  number "${shrunk_b:-0}" && shrunk_b=$number
}

# setting NAME VALUE DEFAULT: sets $number to VALUE when it is a number,
# else to DEFAULT (logging the bad setting when VALUE was not empty).
setting() {
  number "$2" && return 0
  [ -z "$2" ] || log "bad_setting name=$1"
  number=$3
}

# small_read FILE [BYTES]: sets $raw to the first line of the first BYTES
# (32) bytes of FILE when it is a regular file, empty otherwise. The client
# and the job write these files; a FIFO, a device or a huge file put there
# must never stall the loop, so only a regular file is read, and only its
# first bytes (one process: head). A FIFO swapped in after the test must not
# block either: the subshell opens the path read-write, which never blocks
# on a FIFO, and reads only when what it opened is a regular file. (Should
# the file vanish in between, that open leaves an empty one, which reads as
# no value.)
small_read() {
  raw=
  [ -f "$1" ] || return 0
  { raw=$(exec 8<>"$1" && [ -f /proc/self/fd/8 ] && exec head -c "${2:-32}" <&8); } 2>/dev/null
  raw=${raw%%"$NL"*}
}
NL='
'

# pod_number NAME: sets $number to the number the client wrote in .pod/NAME,
# empty when the file is missing or holds anything else.
pod_number() {
  small_read "$POD_DIR/$1"
  number "$raw" || :
}

# fresh_file PATH: removes PATH before the watchdog writes it, so that a
# symlink put there never sends the write outside the run directory.
fresh_file() {
  rm -f -- "$1" 2>/dev/null
}

# A .pod that is a symlink (or a log that is one) would send every write of
# the watchdog elsewhere: the watchdog makes its own.
# Its control files cannot be trusted then: the pod is deleted at once
# (pod_dir_unsafe), failing closed.
POD_DIR_UNSAFE=0
if [ -h "$POD_DIR" ]; then
  rm -f -- "$POD_DIR" 2>/dev/null
  POD_DIR_UNSAFE=1
fi
mkdir -p "$POD_DIR" 2>/dev/null
# The log is opened once and kept on descriptor 7: every rule logs before it
# deletes (the TERM trap too), so a FIFO there would hang the watchdog for
# ever. Anything but a regular file is replaced. The open is read-write,
# which never blocks, even on a FIFO made since the test; only a regular
# file is then reopened for appending, through /proc (same file, whatever
# the path names by then). `command` keeps a failed open from ending the
# script.
LOG=$POD_DIR/watchdog.log
if [ -h "$LOG" ] || [ ! -f "$LOG" ]; then rm -rf -- "$LOG" 2>/dev/null; fi
command exec 7<>"$LOG" 2>/dev/null
if [ -f /proc/self/fd/7 ]; then
  command exec 7>>/proc/self/fd/7 2>/dev/null
else
  command exec 7>&- 2>/dev/null
fi

# The container's output (Runpod's console and log stream) shows the log
# too, through a relay: `tail -f` of the log's descriptor, from its end as
# this watchdog found it. The watchdog itself never writes there, so an
# output that blocks (a pipe nobody drains, a FIFO) holds only the relay,
# never a rule, and a closed one (SIGPIPE ignored, here and in the relay)
# only ends it. GNU tail ends by itself once the watchdog is gone (--pid,
# after a last read); any other is killed a second after the watchdog's
# exit, time for it to relay the last lines.
relay_pid=
if [ -f /proc/self/fd/7 ] && command -v tail >/dev/null 2>&1; then
  { logged=$(wc -c </proc/self/fd/7); } 2>/dev/null
  logged=${logged##* }
  case $logged in
    '' | *[!0-9]* | ??????????*) ;;
    *)
      if tail --pid="$$" -n 0 /dev/null </dev/null >/dev/null 2>&1; then
        tail --pid="$$" -c +"$((logged + 1))" -f "/proc/$$/fd/7" </dev/null 2>/dev/null &
      else
        # exec: yash would fork tail from the subshell, and $! would name
        # the subshell, not tail.
        (exec tail -c +"$((logged + 1))" -f "/proc/$$/fd/7" </dev/null 2>/dev/null) &
        relay_pid=$!
      fi
      ;;
  esac
fi
stop_relay() {
  [ -n "$relay_pid" ] || return 0
  sleep 1
  kill "$relay_pid" 2>/dev/null
}
trap stop_relay EXIT

# The watchdog's start, which the boot grace counts from. A date that does
# not read (it fails, or prints no Unix time) leaves it empty, and no rule
# counts from a time that was not read: each tick until the clock reads
# logs clock_unreadable and deletes nothing, and the first tick that reads
# it takes it as the start (later than the true one: the grace ends later,
# never sooner). If the clock never reads, this watchdog never deletes the
# pod: what it cannot read, it reports and leaves. The pod is still
# bounded by the two other enforcers, which read the API's times and
# their own clock: the launcher while it follows the run (cost cap,
# deadline, a pod EXITED or ERROR) and the sweeper (deadline plus max
# extension, cost cap, a pod never RUNNING).
start=
if date_now; then
  start=$date_s
else
  log "clock_unreadable at=start how=$date_how msg=no rule counts from the start until the clock reads"
fi

# settings: reads the rules' settings from the environment, each through
# setting (its default when unset, as podenv's Default constants say);
# start is the watchdog's start, which an unreadable deadline falls back
# to. It only assigns, so a test runs it as the watchdog does.
settings() {
  setting OVERBRAINER_INTERVAL "${OVERBRAINER_INTERVAL:-}" 60 && INTERVAL=$number
  [ "$INTERVAL" -ge 1 ] || INTERVAL=1
  setting OVERBRAINER_PROBE_TRIES "${OVERBRAINER_PROBE_TRIES:-}" 5 && PROBE_TRIES=$number
  setting OVERBRAINER_PROBE_WAIT "${OVERBRAINER_PROBE_WAIT:-}" 10 && PROBE_WAIT=$number
  setting OVERBRAINER_BOOT_GRACE "${OVERBRAINER_BOOT_GRACE:-}" 1800 && BOOT_GRACE=$number
  setting OVERBRAINER_RETRIEVE_GRACE "${OVERBRAINER_RETRIEVE_GRACE:-}" 3600 && RETRIEVE_GRACE=$number
  setting OVERBRAINER_LEASE_TTL "${OVERBRAINER_LEASE_TTL:-}" 900 && LEASE_TTL=$number
  setting OVERBRAINER_SNAPSHOT_LEAD "${OVERBRAINER_SNAPSHOT_LEAD:-}" 900 && SNAPSHOT_LEAD=$number
  setting OVERBRAINER_SNAPSHOT_WAIT "${OVERBRAINER_SNAPSHOT_WAIT:-}" 900 && SNAPSHOT_WAIT=$number
  setting OVERBRAINER_MAX_EXTENSION "${OVERBRAINER_MAX_EXTENSION:-}" 3600 && MAX_EXTENSION=$number
  setting OVERBRAINER_CURL_TIMEOUT "${OVERBRAINER_CURL_TIMEOUT:-}" 10 && CURL_TIMEOUT=$number
  [ "$CURL_TIMEOUT" -ge 1 ] || CURL_TIMEOUT=1
  VOLUME_GB=
  number "${OVERBRAINER_VOLUME_GB:-}" && VOLUME_GB=$number

  # A kept pod's idle bound (kept_idle); 0 keeps it unbounded. Its pod
  # volume's size (0: none), which a stop keeps.
  setting OVERBRAINER_KEEP_IDLE "${OVERBRAINER_KEEP_IDLE:-}" 3600 && KEEP_IDLE=$number
  setting OVERBRAINER_POD_VOLUME_GB "${OVERBRAINER_POD_VOLUME_GB:-}" 0 && POD_VOLUME_GB=$number

  # A deadline that is set but unreadable fails closed: it counts as already
  # passed, so only a live client's lease keeps such a pod.
  DEADLINE=
  if [ -n "${OVERBRAINER_DEADLINE:-}" ]; then
    if number "$OVERBRAINER_DEADLINE"; then
      DEADLINE=$number
    else
      log "bad_setting name=OVERBRAINER_DEADLINE"
      # Without a start yet, the loop sets it once the clock reads.
      DEADLINE=$start
    fi
  fi
}
settings

# due T: remembers T as the next time the loop must look again, when it is
# later than now ($n) and earlier than any other due time of this tick.
due() {
  if [ "$1" -gt "$n" ] && { [ -z "$next" ] || [ "$1" -lt "$next" ]; }; then
    next=$1
  fi
}

# span_end SINCE SPAN: succeeds once SPAN seconds have passed since SINCE
# by now ($n); until then fails, with $span_end set to the time they will
# have (SINCE plus SPAN: the deadline plus MAX_EXTENSION, a grace's end).
# The elapsed time is compared with SPAN, never a sum with now, so the test
# never wraps under mksh's 32 bits; a $span_end that wraps is only a due
# time, which due ignores.
span_end() {
  span_end=$(($1 + $2))
  [ $((n - $1)) -ge "$2" ]
}

# cost_ask_at: sets $cost_at to when the job is asked for the cost cap's
# snapshot: .pod/snapshot_at ($snapshot_at), or SNAPSHOT_LEAD before
# .pod/cost_cap_at ($cost_cap_at) when that is sooner; empty with neither.
cost_ask_at() {
  cost_at=$snapshot_at
  if [ -n "$cost_cap_at" ]; then
    lead_at=$((cost_cap_at - SNAPSHOT_LEAD))
    if [ -z "$cost_at" ] || [ "$lead_at" -lt "$cost_at" ]; then cost_at=$lead_at; fi
  fi
}

# The clock. date costs a process, and a steady tick needs the time: the
# loop reads the kernel's uptime instead (/proc/uptime, with the shell's own
# read) and adds the Unix time of the boot, which clock_sync derives from
# date. That sum is never ahead of the wall clock (the boot time taken is the
# earliest date and uptime allow) and at most about a second behind, while
# the wall clock does not step. A step is what uptime cannot see, so date is
# read again: every CLOCK_EVERY ticks (a step is seen within that many
# ticks, 10 minutes at the default INTERVAL), for each sleep that ends at a
# due time (time rules act within a second of their time, as before), and
# before any delete (no pod is deleted on the sum alone, so a clock stepped
# back cannot make a rule delete early). Without a readable uptime, every
# tick reads date.
#
# All of that only until the job exists (job.pid). The job runs as root and
# may replace date (a frozen, a far-future or a hanging one), and the
# watchdog must go on judging it: from then on its time is the kernel's
# alone, the uptime plus the boot time last taken from a date read while no
# job existed (one read while the job appeared is dropped). It is never
# resynced: the kernel's uptime does not drift from the wall clock
# between steps, and nothing the watchdog could resync from is beyond the
# job's reach (the Date header of its own API calls comes through curl,
# which a root job can replace as well, and which the watchdog calls only
# to delete). A wall clock stepped after the job started is not seen.
# Without a readable uptime then, the time counts the sleeps that ran their
# full length (a woken one counts for nothing), so it runs late, never early.
UPTIME=${OVERBRAINER_UPTIME:-/proc/uptime}
CLOCK_EVERY=10
boot_s=
boot_c=
tick=0
synced_tick=0
paused=0
last_n=

# uptime_now: sets $up_s and $up_c to the uptime's seconds and hundredths;
# fails when it cannot be read as the kernel writes it.
uptime_now() {
  up=
  read -r up _ 2>/dev/null <"$UPTIME" || :
  case $up in
    [0-9]*.[0-9][0-9]) ;;
    *) return 1 ;;
  esac
  up_c=${up#*.}
  case $up_c in
    [0-9][0-9]) ;;
    *) return 1 ;;
  esac
  number "${up%%.*}" || return 1
  up_s=$number
  number "$up_c" && up_c=$number
}

# clock_now: sets $n to the boot time plus the uptime, or fails.
clock_now() {
  uptime_sum || return 1
  n=$sum
}

# uptime_sum: sets $sum to the boot time plus the uptime, or fails.
uptime_sum() {
  [ -n "$boot_s" ] && uptime_now || return 1
  sum=$((boot_s + up_s))
  [ $((boot_c + up_c)) -lt 100 ] || sum=$((sum + 1))
}

# date_ok: date may still be read, since no job exists that could have
# replaced it (a builtin test, no process).
job_seen=0
date_ok() {
  [ "$job_seen" = 0 ] || return 1
  [ ! -e "$RUN_DIR/job.pid" ] && return 0
  job_seen=1
  return 1
}

# log_now: sets $logged_at to the time of a log line: the uptime sum (never
# before this tick's time), else date while no job exists, else this
# tick's time.
log_now() {
  if uptime_sum; then
    logged_at=$sum
    [ -z "${n:-}" ] || [ "$sum" -ge "$n" ] || logged_at=$n
  elif date_ok && date_now; then
    logged_at=$date_s
  else
    logged_at=${n:-${last_n:-${start:-0}}}
  fi
}
clock_ready=1

# kernel_time: sets $n from the kernel's clock alone (once the job exists):
# the uptime sum, or without one the last time plus the last full sleep;
# with neither (the clock never read), leaves $n empty and sets $clock_how.
kernel_time() {
  clock_now && return 0
  if [ -n "$last_n" ]; then
    n=$((last_n + paused))
  else
    clock_how=never_read
  fi
}

# clock_sync: sets $n from date and takes the boot time again: date minus
# the uptime read after it, in hundredths (boot_s + boot_c/100), so that it
# errs early. An unreadable date sets $clock_how (why) and keeps $n (the
# sum) or, without one, counts the last sleep (none when the clock never
# read: $n stays empty); an unreadable uptime leaves no boot time.
clock_sync() {
  synced=1
  synced_tick=$tick
  if ! date_ok; then
    kernel_time
    return 0
  fi
  date_now
  # A job that appeared while date ran may have replaced it.
  if ! date_ok; then
    kernel_time
    return 0
  fi
  if [ -z "$date_s" ]; then
    clock_how=$date_how
    [ -n "$n" ] || [ -z "$last_n" ] || n=$((last_n + paused))
    return 0
  fi
  n=$date_s
  take_boot
}

# take_boot: takes the boot time from $n (date's time) and the uptime read
# now, in hundredths, so that it errs early; none without a readable uptime.
take_boot() {
  boot_s=
  uptime_now || return 0
  boot_s=$((n - up_s))
  boot_c=0
  if [ "$up_c" -gt 0 ]; then
    boot_s=$((boot_s - 1))
    boot_c=$((100 - up_c))
  fi
}

# The boot time comes with the start, so that the clock has one even when
# the first tick already finds a job (one of this container cannot have
# replaced date yet: the client starts it only once the verdict is written).
if [ -n "$start" ]; then
  n=$start
  take_boot
fi
n=

# pause SECONDS: sleeps in the background and waits for it, so that TERM and
# INT are handled at once rather than when sleep ends. posh's wait sometimes
# returns before the sleep ended (with the status of some other child), so
# it waits again while /proc still shows the sleep (a builtin test, no
# process); a bounded number of times, in case the pid was already reused.
pause() {
  # A wake that came while the tick ran (no sleep to end then) is not
  # lost: the next tick runs at once.
  paused=0
  if [ "$woken" = 1 ]; then
    woken=0
    return 0
  fi
  paused=$1
  sleep "$1" &
  sleeper=$!
  [ "$woken" = 0 ] || kill "$sleeper" 2>/dev/null
  wait "$sleeper"
  rewaits=0
  while [ -d "/proc/$sleeper" ] && [ "$rewaits" -lt 50 ]; do
    wait "$sleeper"
    rewaits=$((rewaits + 1))
  done
  sleeper=
  woken=0
}

woken=0
wake() {
  woken=1
  paused=0
  [ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null
}

on_signal() {
  [ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null
  log "stopping signal=$1"
  exit 0
}

# lease_check: sets $lease to fresh or stale and, when fresh, $lease_until to
# the time it goes stale. The lease is .pod/lease's mtime on the pod's own
# clock. Its age counts both ways: an mtime in the future (a clock stepped
# back, a bad touch) is fresh only while it is less than LEASE_TTL away, so it
# can never hold the deadline or the abandoned rule off for more than
# LEASE_TTL past that mtime.
lease_check() {
  lease=stale
  [ -f "$POD_DIR/lease" ] || return 0
  { touched=$(stat -c %Y "$POD_DIR/lease"); } 2>/dev/null
  number "$touched" || return 0
  touched=$number
  age=$((n - touched))
  [ "$age" -ge 0 ] || age=$((-age))
  if [ "$age" -lt "$LEASE_TTL" ]; then
    lease=fresh
    lease_until=$((touched + LEASE_TTL))
  fi
}

# request_snapshot REASON: asks the job to checkpoint and stop. A request that
# is already there (the client's own, e.g. `train stop`) is adopted, never
# overwritten; either way the wait for it starts now, at the first request
# only: a repeated disk request must not hold the deadline off for ever.
# "Now" is when the request is there (the log line's time, read after the
# write), not the tick's start: on a busy pod the write may come seconds
# later, and the job gets its whole SNAPSHOT_WAIT.
request_snapshot() {
  if [ -f "$RUN_DIR/snapshot.request" ]; then
    log "snapshot_requested reason=$1 adopted=1${2:+ $2}"
    requested_since
    return 0
  fi
  tmp=$RUN_DIR/snapshot.request.$$.tmp
  fresh_file "$tmp"
  if printf '%s\n' "$1" >"$tmp" 2>/dev/null && mv -f "$tmp" "$RUN_DIR/snapshot.request" 2>/dev/null; then
    log "snapshot_requested reason=$1 adopted=0${2:+ $2}"
    requested_since
    return 0
  fi
  rm -f "$tmp" 2>/dev/null
  return 1
}

# requested_since: sets requested_at, once, to the time the last log line
# was written, never earlier than the tick's.
requested_since() {
  [ -z "$requested_at" ] || return 0
  requested_at=$n
  number "${logged_at:-}" || return 0
  [ "$number" -le "$n" ] || requested_at=$number
}

# measure_volume: starts a background `du -sk` of the network volume, or
# picks up the one started, never more than one: du on a network mount may
# hang, and this loop must never wait for it. du writes .pod/du.running,
# which marks a measurement in progress and becomes .pod/du once read (one
# mv). The watchdog reads it on descriptor 6, opened on the file it made
# before du started, so a read costs no process and reads what du wrote
# whatever the name comes to name. timeout, when there is one, ends du after
# 30 s and waits for it; without it, du is killed after 60 s. Either way no
# other du starts before that one is really gone (one stuck on a hung mount
# may never go: then the last measure stands), so they cannot pile up.
# Sets $du_new when a new measure was read.
TIMEOUT=
du_pid=
du_start=
# proc_stat PID: sets $proc_state and $proc_start (the state letter and the
# start time, in clock ticks since boot) of process PID from /proc, without
# a process; fails when there is none. The command name, which may hold
# spaces, ends at the last parenthesis.
proc_stat() {
  proc_state=
  proc_start=
  read -r proc_line 2>/dev/null <"/proc/$1/stat" || return 1
  # shellcheck disable=SC2086 # the fields are numbers and a state letter
  set -- ${proc_line##*) }
  [ "$#" -ge 20 ] || return 1
  proc_state=$1
  proc_start=${20}
}

# du_running: the background du of measure_volume has not ended. Its pid
# alone cannot tell: once the shell reaped it, the number may name another
# process. The same pid with the same start time, and not a zombie, can.
du_running() {
  proc_stat "$du_pid" && [ "$proc_state" != Z ] && [ -n "$du_start" ] && [ "$proc_start" = "$du_start" ]
}
if [ -n "$VOLUME_DIR" ] && command -v timeout >/dev/null 2>&1 && timeout -k 5 30 true 2>/dev/null; then
  TIMEOUT=timeout
fi
measure_volume() {
  du_new=
  if [ -n "$du_pid" ]; then
    if du_running; then
      # With timeout, $du_pid is timeout: killing it would leave its du
      # behind, and the next tick would start another.
      [ -n "$TIMEOUT" ] || [ $((n - du_started)) -lt 60 ] || kill -s KILL "$du_pid" 2>/dev/null
      return 0
    fi
    du_pid=
    # Only a whole line (du's ends with its path and a newline) is a
    # measure; du writes it in one go.
    raw=
    read -r raw 2>/dev/null <&6 || raw=
    exec 6<&-
    kib=${raw%%[!0-9]*}
    if [ -n "$kib" ] && shrink "$kib" 0; then
      mv -f "$POD_DIR/du.running" "$POD_DIR/du" 2>/dev/null
      measured=$kib
      du_new=1
    else
      rm -f "$POD_DIR/du.running" 2>/dev/null
    fi
    return 0
  fi
  fresh_file "$POD_DIR/du.running"
  # `command`: a failing redirection of exec (a directory put there, .pod
  # removed) would end the script under dash, busybox, posh and mksh.
  { command exec 6<>"$POD_DIR/du.running"; } 2>/dev/null || return 0
  # du opens the same file through the descriptor, at its own offset.
  if [ -n "$TIMEOUT" ]; then
    timeout -k 5 30 "$DU" -sk -- "$VOLUME_DIR" >"/proc/$$/fd/6" 2>/dev/null </dev/null &
  else
    "$DU" -sk -- "$VOLUME_DIR" >"/proc/$$/fd/6" 2>/dev/null </dev/null &
  fi
  du_pid=$!
  du_started=$n
  # Read at once: a du that already ended (and was reaped) leaves nothing
  # to read, and du_running then reads it as ended.
  proc_stat "$du_pid" || :
  du_start=$proc_start
}

# disk_full: the run's storage is at least DISK_ACT percent full. A network
# volume (VOLUME_DIR) is weighed by what it holds (the last background du)
# against VOLUME_USABLE percent of its size, .pod/volume_gb (written by the
# client after a grow) or else OVERBRAINER_VOLUME_GB: df there shows the whole
# shared cluster, and the quota refuses writes before the size is reached.
# Anything else by df of the run directory: used over used plus available.
# Sizes go through shrink, since a disk's KiB overflow 32-bit arithmetic.
measured=
# Ten thousandths of a volume's size in kB (1000 bytes) that, counted in KiB,
# make it DISK_ACT percent of VOLUME_USABLE percent full: 8904.
VOLUME_FULL=$((VOLUME_USABLE * DISK_ACT * 1000 / 1024))
disk_full() {
  if [ -n "$VOLUME_DIR" ]; then
    volume_full
    return
  fi
  # df costs a process: it runs only every few ticks, and the emptier the
  # disk the fewer (look_disk).
  [ "$tick" -ge "$disk_tick" ] || return 1
  disk_tick=$((tick + 1))
  # The redirection outside the substitution lets bash and yash exec df
  # without a second fork.
  { out=$("$DF" -Pk -- "$RUN_DIR"); } 2>/dev/null
  used=
  avail=
  while read -r _ _ u a _; do
    used=
    if shrink "$u" "$a"; then
      used=$u
      avail=$a
    fi
  done <<DF_OUT
$out
DF_OUT
  [ -n "$used" ] || return 1
  shrink "$used" "$avail" || return 1
  look_disk
  [ $((shrunk_a * 100)) -ge $(((shrunk_a + shrunk_b) * DISK_ACT)) ]
}

# volume_full: the network volume's last measure is at least DISK_ACT
# percent of its usable part. A du runs every few ticks (see space_disk:
# the emptier the volume the fewer), and one in progress is looked at each
# tick (no process). The size is read once, and again only when the volume
# looks full by it: the client only ever grows a volume (and then writes
# .pod/volume_gb), so a size read before can only make it look fuller than
# it is, never emptier.
volume_size=
volume_full() {
  du_new=
  if [ -n "$du_pid" ] || [ "$tick" -ge "$disk_tick" ]; then
    measure_volume
  fi
  [ -n "$measured" ] || return 1
  [ -n "$volume_size" ] || volume_read
  if volume_weigh; then
    volume_read
    volume_weigh || return 1
  else
    [ -z "$du_new" ] || space_disk "$pct"
    return 1
  fi
  [ -z "$du_new" ] || space_disk "$pct"
}

# volume_read: sets $volume_size to the volume's size in GB, .pod/volume_gb
# or else OVERBRAINER_VOLUME_GB (empty when neither says).
volume_read() {
  pod_number volume_gb
  volume_size=${number:-$VOLUME_GB}
}

# volume_weigh: the last measure is full against $volume_size; sets $pct,
# its percent used on the scale DISK_ACT is read on (DISK_ACT at full).
volume_weigh() {
  pct=0
  [ -n "$volume_size" ] || return 1
  shrink "$measured" "${volume_size}000000" || return 1
  # Full when a*10000 >= b*VOLUME_FULL; each side fits 32 bits.
  weigh_a=$((shrunk_a * 10000))
  weigh_b=$((shrunk_b * VOLUME_FULL / DISK_ACT))
  pct=100
  [ "$weigh_b" -eq 0 ] || pct=$((weigh_a / weigh_b))
  [ "$weigh_a" -ge $((shrunk_b * VOLUME_FULL)) ]
}

# look_disk: sets $disk_tick, the tick of the next df, from the shrunk used
# and available sizes of this one. With pct the percent used (rounded down),
# the next look is (DISK_ACT - pct) / 2 ticks away, at least 1 and at most
# DISK_EVERY: a disk that fills by at most 2 percentage points per tick is
# below DISK_ACT - 1 at every tick skipped, so it is seen full at the very
# tick a df every tick would see it; one that fills faster, at most
# DISK_EVERY - 1 ticks later (4 minutes at the default INTERVAL).
DISK_EVERY=5
disk_tick=0
look_disk() {
  pct=100
  [ $((shrunk_a + shrunk_b)) -eq 0 ] || pct=$((shrunk_a * 100 / (shrunk_a + shrunk_b)))
  space_disk "$pct"
}

# space_disk PCT: sets $disk_tick, the tick of the next df or du, for a
# disk PCT percent used (see look_disk). A du's is counted from the tick
# that read it, so that du has run a tick before: a volume that fills by at
# most 2 points a tick is seen full at most one tick after a du every tick
# would see it.
space_disk() {
  gap=$(((DISK_ACT - $1) / 2))
  [ "$gap" -le "$DISK_EVERY" ] || gap=$DISK_EVERY
  [ "$gap" -ge 1 ] || gap=1
  disk_tick=$((tick + gap))
}

# deadline_due: whether the deadline may take the pod now. It waits while a
# snapshot the watchdog asked for (or adopted) is younger than SNAPSHOT_WAIT
# and the job still runs, and, once the job ended after such a request, until
# RETRIEVE_GRACE after the end (or after the deadline, when that came first).
deadline_due() {
  [ -n "$requested_at" ] || return 0
  if [ -z "$ended_at" ]; then
    hold=$((requested_at + SNAPSHOT_WAIT))
  else
    hold=$ended_at
    [ "$DEADLINE" -ge "$hold" ] || hold=$DEADLINE
    hold=$((hold + RETRIEVE_GRACE))
  fi
  [ "$n" -lt "$hold" ] || return 0
  due "$hold"
  return 1
}

# retrieval_held: whether a client still holds the lease once the retrieve
# grace passed. A client downloading the results keeps touching it (and
# writes .pod/retrieved when done), so a long download never loses the pod
# midway; the ended job counts as abandoned once the lease is stale. Only
# called after the grace, so a steady tick never stats the lease for it; the
# deadline's lease_check of this tick, if any, is reused.
retrieval_held() {
  [ -n "$lease" ] || lease_check
  [ "$lease" = fresh ] || return 1
  due "$lease_until"
  if [ -z "$retrieval_hold" ]; then
    retrieval_hold=1
    log "abandoned_held until=$lease_until"
  fi
}

# kept_idle: a kept pod whose job ended has gone unused for KEEP_IDLE, so
# it is to be ended; sets $end_action to stop when it has a pod volume (a
# stop keeps that volume's data, which bills as storage until `launch rm`),
# else to delete (a stop would keep nothing: the container disk goes with
# it, and a network volume outlives a delete anyway). The job has ended:
# there is no job left to ask for a snapshot. Use is anything a person
# would call use: an SSH session of any user open on the pod (a shell of
# `launch ssh` or Run.Shell, an OpenSSH login, a following launcher's own
# connection), a process outside the guard's own that used CPU (a nohup or
# tmux loop left running after logout: see pod_scan), a GPU at least
# MIN_GPU_UTIL busy (gpu_busy, when asked for), a touch of the lease.
# Until the bound passes since the last use seen, a tick only compares
# numbers (the job's end takes the processes' CPU times once, for the
# first look to compare with); from then on it looks for later uses (a
# scan of /proc with the shell's own reads, a process or two), and while
# something holds the pod it looks at every tick, so that the bound counts
# from the last use seen. Without a readable lease, /proc or GPU nothing
# holds the pod, and it goes once KEEP_IDLE passed since the job's end.
idle_since=
idle_held=
end_action=delete
kept_idle() {
  [ "$KEEP_IDLE" -gt 0 ] && [ -n "$ended_at" ] || return 1
  if [ -z "$idle_since" ]; then
    idle_since=$ended_at
    # The job's group, which pod_scan leaves out, is read once (a job
    # found ended by its marker never had it read).
    if [ -z "$job_pgid" ]; then
      small_read "$RUN_DIR/job.pid"
      ! number "$raw" || [ "$number" -le 1 ] || job_pgid=$number
    fi
    pod_scan
  fi
  if [ -n "$idle_held" ] || [ $((n - idle_since)) -ge "$KEEP_IDLE" ]; then
    if kept_used; then
      [ -n "$idle_held" ] || log "kept_held sessions=$sessions procs=$busy_procs gpu=$gpu"
      idle_held=1
      idle_since=$n
      return 1
    fi
    if [ -n "$idle_held" ]; then
      idle_held=
      idle_since=$n
    fi
    # A touch in the future (a clock stepped back, a bad touch) counts as
    # now, unless it is more than LEASE_TTL away: one touch cannot hold
    # the pod for ever.
    touched=
    [ ! -f "$POD_DIR/lease" ] || { touched=$(stat -c %Y "$POD_DIR/lease"); } 2>/dev/null
    if number "$touched" && [ $((number - n)) -lt "$LEASE_TTL" ]; then
      [ "$number" -le "$n" ] || number=$n
      [ "$number" -le "$idle_since" ] || idle_since=$number
    fi
  fi
  if [ $((n - idle_since)) -lt "$KEEP_IDLE" ]; then
    due $((idle_since + KEEP_IDLE))
    return 1
  fi
  end_action=delete
  [ "$POD_VOLUME_GB" -eq 0 ] || end_action=stop
}

# kept_used: the kept pod was used since the last look: an SSH session is
# open, a process outside the guard's used CPU, or else a GPU is busy;
# sets $sessions, $busy_procs and $gpu (1: busy).
kept_used() {
  gpu=0
  pod_scan
  [ "$sessions" -eq 0 ] && [ "$busy_procs" -eq 0 ] || return 0
  gpu_busy || return 1
  gpu=1
}

# end_pod REASON: ends the pod as the rule chose: stop_pod when it set
# $end_action to stop (kept_idle, for a pod volume), else delete_pod.
end_pod() {
  if [ "$end_action" = stop ]; then
    stop_pod "$1"
  else
    delete_pod "$1"
  fi
}

# stop_pod REASON: stops the pod (the stop action: its pod volume stays,
# billed as storage, until the pod is removed), as delete_pod's stop step
# does: it counts once a GET confirms it (EXITED: $stopped_only; gone).
# Fails when it was not confirmed; the next tick tries again, and never
# falls back to a delete, which would take the volume's data.
stop_pod() {
  log "delete_reason reason=$1 action=stop"
  codes=
  stopped_only=0
  if [ -z "$POD_ID" ]; then
    codes=no_pod_id
    return 1
  fi
  api POST "/pods/$POD_ID/action" '{"action":"stop"}'
  tried stop
}

# pod_scan: reads the process table (/proc, with the shell's own reads: no
# process but the sshd pid file's read) and sets $sessions, the SSH
# sessions logged in to the pod's sshd (the one whose pid file the
# bootstrap had it write), and $busy_procs, the processes outside the
# guard's own that used CPU since the last scan.
#
# sshd forks a process for each connection, which, once the client
# authenticated, is titled `sshd: USER@notty` or `sshd: USER@pts/N`
# (`sshd-session:` from OpenSSH 9.8 on), whatever USER: for root that
# process itself, a child of sshd, for another user a child of it, so both
# are counted. A connection not yet authenticated has no such title (its
# end in [priv], [net] or [preauth], whatever user it asks for), so a scan
# of the pod's public port holds nothing.
#
# The guard's own processes are init (pid 1), the watchdog (the bootstrap
# exec'd it: $$), the pod's sshd, everything under the last two (the
# relay, a session's shell and what it runs, a connection being
# authenticated) and the ended job's process group (a straggler of the
# job is nobody's use). Any other process used CPU when its utime, stime,
# cutime or cstime (clock ticks, compared as strings: no arithmetic, which
# a long-lived process's ticks could overflow under mksh) differ from the
# last scan's, or, new since then (by pid and start time), when any is
# above zero. $cpu_seen keeps them between scans, ` PID/START/U.S.CU.CS`
# each. A process started over SSH and left running (nohup, setsid, tmux,
# screen) goes to init once its session ended, and counts.
PROC=${OVERBRAINER_PROC:-/proc}
SSHD_PIDFILE=${OVERBRAINER_SSHD_PIDFILE:-/etc/overbrainer/sshd.pid}
cpu_seen=
cpu_taken=
pod_scan() {
  sessions=0
  busy_procs=0
  sshd_pid=
  small_read "$SSHD_PIDFILE"
  ! number "$raw" || [ "$number" -le 1 ] || sshd_pid=$number
  # One read of each process: `PID PPID PGRP START CPU` lines.
  table=
  for proc_file in "$PROC"/[0-9]*/stat; do
    proc_fields "$proc_file" || continue
    table="$table$proc_pid $proc_ppid $proc_pgrp $proc_start $proc_cpu$NL"
  done
  # The guard's tree, a pass a generation until no pass adds one: the
  # table comes in no useful order.
  guard=" $$ ${sshd_pid:+$sshd_pid }"
  monitors=" ${sshd_pid:+$sshd_pid }"
  grown=1
  while [ "$grown" = 1 ]; do
    grown=0
    while read -r pid ppid _; do
      case $guard in *" $ppid "*) ;; *) continue ;; esac
      case $guard in *" $pid "*) continue ;; esac
      guard="$guard$pid "
      [ "$ppid" != "$sshd_pid" ] || monitors="$monitors$pid "
      grown=1
    done <<TABLE
$table
TABLE
  done
  seen=
  while read -r pid ppid pgrp start cpu; do
    [ -n "$cpu" ] || continue
    case $monitors in
      *" $ppid "*)
        title=
        read -r title 2>/dev/null <"$PROC/$pid/cmdline"
        ! ssh_title "$title" || sessions=$((sessions + 1))
        ;;
    esac
    case $guard in *" $pid "*) continue ;; esac
    if [ "$pid" = 1 ] || [ "$pgrp" = "$job_pgid" ]; then continue; fi
    seen="$seen $pid/$start/$cpu"
    case $cpu_seen in
      *" $pid/$start/$cpu "*) ;;
      *" $pid/$start/"*) busy_procs=$((busy_procs + 1)) ;;
      *) [ -z "$cpu_taken" ] || [ "$cpu" = 0.0.0.0 ] || busy_procs=$((busy_procs + 1)) ;;
    esac
  done <<TABLE
$table
TABLE
  cpu_seen="$seen "
  cpu_taken=1
}

# ssh_title TITLE: TITLE is a logged-in SSH session's (see pod_scan): after
# its last `: `, one word USER@notty or USER@pts/N.
ssh_title() {
  who=${1##*': '}
  [ "$who" != "$1" ] || return 1
  case $who in
    *' '*) return 1 ;;
    ?*@notty | ?*@pts/[0-9] | ?*@pts/[0-9][0-9] | ?*@pts/[0-9][0-9][0-9]) return 0 ;;
  esac
  return 1
}

# proc_fields FILE: sets $proc_pid, $proc_ppid, $proc_pgrp, $proc_session,
# $proc_start and $proc_cpu (utime.stime.cutime.cstime) from FILE, a
# /proc/PID/stat; fails when it cannot be read. The one parser of that
# line, for pod_scan and cpu_moved.
proc_fields() {
  proc_line=
  read -r proc_line 2>/dev/null <"$1" || return 1
  proc_pid=${1%/stat}
  proc_pid=${proc_pid##*/}
  # shellcheck disable=SC2086 # the fields are numbers and a state letter
  set -- ${proc_line##*) }
  [ "$#" -ge 20 ] || return 1
  proc_ppid=$2
  proc_pgrp=$3
  proc_session=$4
  proc_cpu=${12}.${13}.${14}.${15}
  proc_start=${20}
}

# api METHOD PATH [BODY]: sets $code to the HTTP status of the call, 000 when
# there was no answer. -q must come first: it is what stops curl reading a
# config file the job wrote. The Authorization header reaches curl on its standard
# input, written by the shell's builtin echo (printf is an external command in
# posh and mksh, whose command line anyone can read).
api() {
  if [ -n "${3:-}" ]; then
    code=$(echo "Authorization: Bearer $API_KEY" |
      curl -q --noproxy '*' -s -o /dev/null -w '%{http_code}' --max-time "$CURL_TIMEOUT" -A "$AGENT" -H @- \
        -H 'Content-Type: application/json' -X "$1" --data "$3" "$API$2" 2>/dev/null)
  else
    code=$(echo "Authorization: Bearer $API_KEY" |
      curl -q --noproxy '*' -s -o /dev/null -w '%{http_code}' --max-time "$CURL_TIMEOUT" -A "$AGENT" -H @- \
        -X "$1" "$API$2" 2>/dev/null)
  fi
  case $code in
    [0-9][0-9][0-9]) ;;
    *) code=000 ;;
  esac
}

# pod_get: GETs the pod; sets $code as api does and $pod_status to the
# status word of its body (200 only), empty when that cannot be read. The
# body is read into memory, 64 KiB of it at most (curl's bound, and head's
# for an answer that announced no size): one cut short loses its code,
# which then reads as 000, never as gone. The status is read with builtins
# only, and only when the body holds exactly one "status" key: with a
# second one (a pod named "status", an env key) it is left unread.
pod_get() {
  pod_status=
  { got=$(echo "Authorization: Bearer $API_KEY" |
    curl -q --noproxy '*' -s -w ' %{http_code}' --max-time "$CURL_TIMEOUT" --max-filesize 65536 -A "$AGENT" -H @- \
      "$API/pods/$POD_ID" 2>/dev/null | head -c 65540); } 2>/dev/null
  code=${got##* }
  case $code in
    [0-9][0-9][0-9]) ;;
    *) code=000 && return 0 ;;
  esac
  case $code:$got in
    200:*'"status"'*'"status"'*) return 0 ;;
    200:*'"status"'*) got=${got#*'"status"'} ;;
    *) return 0 ;;
  esac
  skips=0
  while [ "$skips" -lt 8 ]; do
    case $got in
      ' '* | '	'* | :* | "$NL"*) got=${got#?} ;;
      *) break ;;
    esac
    skips=$((skips + 1))
  done
  case $got in
    '"'[A-Z]*'"'*) got=${got#?} && got=${got%%'"'*} ;;
    *) return 0 ;;
  esac
  case $got in
    *[!A-Z_]* | ????????????????????????????????*) ;;
    *) pod_status=$got ;;
  esac
}

# confirm WAY TRIES: after WAY (DELETE, terminate, stop, runpodctl)
# answered $code, reads the pod up to TRIES times, a second apart (a pod
# may take a moment to show deleted), and succeeds once it is gone: a GET
# answered 404, or the status TERMINATED; after a stop, EXITED means
# stopped ($stopped_only). Sets $deleted_by to WAY (delete for DELETE) and
# logs each look.
confirm() {
  looks=0
  stopped_only=0
  while :; do
    pod_get
    log "delete_check method=$1 code=$code status=${pod_status:--}"
    case $code:$pod_status in
      404:* | 200:TERMINATED)
        deleted_by=$1
        [ "$1" != DELETE ] || deleted_by=delete
        return 0
        ;;
      200:EXITED)
        if [ "$1" = stop ]; then
          deleted_by=$1
          stopped_only=1
          return 0
        fi
        ;;
    esac
    looks=$((looks + 1))
    [ "$looks" -lt "$2" ] || return 1
    pause 1
  done
}

# probe TRIES: sets $result to `ready` when the pod's key can read the pod,
# or `failed <reason>`. No answer, 408, 429 and 5xx are retried, TRIES times
# in all, PROBE_WAIT seconds apart.
probe() {
  if [ -z "$API_KEY" ] || [ -z "$POD_ID" ]; then
    result="failed missing_key"
    return
  fi
  if ! command -v curl >/dev/null 2>&1; then
    result="failed no_curl"
    return
  fi
  tries=0
  while :; do
    api GET "/pods/$POD_ID"
    case $code in
      200) result=ready; return ;;
      000 | 408 | 429 | 5??) ;;
      *) result="failed http_$code"; return ;;
    esac
    tries=$((tries + 1))
    if [ "$tries" -ge "$1" ]; then
      if [ "$code" = 000 ]; then result="failed unreachable"; else result="failed http_$code"; fi
      return
    fi
    pause "$PROBE_WAIT"
  done
}

# verdict TEXT: replaces .pod/watchdog atomically, so the client never reads a
# half-written verdict.
verdict() {
  fresh_file "$POD_DIR/watchdog.tmp"
  printf '%s\n' "$1" >"$POD_DIR/watchdog.tmp" 2>/dev/null &&
    mv -f "$POD_DIR/watchdog.tmp" "$POD_DIR/watchdog" 2>/dev/null
}

# job_ended: the job wrote its exit code or was cancelled, or the process
# group recorded in job.pid no longer exists (killed before it could write
# anything); sets $ended_by. An empty or malformed job.pid, or one naming
# init, is never read as an ended job. Everything runs as root on the pod, so
# a live group never refuses the test signal: a failed signal means it is gone.
# A job of an earlier container (the pod's container restarted) is read as
# cancelled: the bootstrap marks it so before anything of this container can
# start a job, since its job.pid may name an unrelated live group here.
# The first valid number is kept: job.pid is written once per job (the start
# script refuses a second job but for a lost one, see the main loop), and
# reading it costs a process (head).
job_pgid=
job_ended() {
  job_marked && return 0
  if [ -z "$job_pgid" ]; then
    small_read "$RUN_DIR/job.pid"
    number "$raw" || return 1
    [ "$number" -gt 1 ] || return 1
    job_pgid=$number
  fi
  group_signal 0 "$job_pgid" && return 1
  # A job that wrote its exit code and went between the look above and the
  # signal ended by its exit code, not killed: look again (builtins only).
  job_marked && return 0
  ended_by=group_gone
}

# job_marked: exit_code or cancelled exists; sets $ended_by.
job_marked() {
  if [ -f "$RUN_DIR/exit_code" ]; then ended_by=exit_code; return 0; fi
  if [ -f "$RUN_DIR/cancelled" ]; then ended_by=cancelled; return 0; fi
  return 1
}

# cancel_reason: sets $why to ` reason=WORD` when the cancelled marker holds
# one word of [a-z_] (container_restarted: the bootstrap's), else empty.
cancel_reason() {
  why=
  small_read "$RUN_DIR/cancelled"
  case $raw in
    '' | *[!a-z_]*) ;;
    *) why=" reason=$raw" ;;
  esac
}

# delete_pod REASON: deletes the pod, falling back to the terminate action,
# then the stop action, then runpodctl (`pod delete`). A way counts only once
# confirm saw its effect: an answered DELETE (2xx or 404: the API answers 404
# to a key that may not see the pod too) is never taken on trust. Fails when
# no way was confirmed, with $codes saying what each answered; the next tick
# tries again. $deleted_by tells which one worked: only a stop
# ($stopped_only) leaves the volume billing.
delete_pod() {
  log "delete_reason reason=$1"
  codes=
  stopped_only=0
  # Without a pod id the calls below would name the pod collection, whose 404
  # must never be read as "deleted".
  if [ -z "$POD_ID" ]; then
    codes=no_pod_id
    return 1
  fi
  api DELETE "/pods/$POD_ID"
  tried DELETE && return 0
  api POST "/pods/$POD_ID/action" '{"action":"terminate"}'
  tried terminate && return 0
  api POST "/pods/$POD_ID/action" '{"action":"stop"}'
  tried stop && return 0
  pod_ctl
}

# tried WAY: logs what WAY answered ($code) and confirms an answer that may
# mean gone: for a few seconds after a 2xx, once after a 404.
tried() {
  log "delete_code method=$1 code=$code"
  way=$1:$code
  case $code in
    2??) confirm "$1" 4 ;;
    404) confirm "$1" 1 ;;
    *) false ;;
  esac
  confirmed=$?
  [ "$confirmed" = 0 ] || case $code in 2?? | 404) way=$way/unconfirmed ;; esac
  codes=$codes${codes:+,}$way
  return "$confirmed"
}

# pod_ctl: runpodctl pod delete, pointed at the pod's own API, never at
# Runpod's built-in hosts: without these variables it would call them
# (REST v1, retired, or GraphQL) with the pod's key, and under a local
# emulator send the emulator's key to Runpod. The names runpodctl reads
# (github.com/runpod/runpodctl): RUNPOD_API_URL, the REST base since 2.0
# (REST v1 paths: DELETE $RUNPOD_API_URL/pods/ID is v2's DELETE) and the
# GraphQL URL of 1.9-2.3; RUNPOD_GRAPHQL_URL, GraphQL from 2.4 on;
# RUNPOD_REST_V2_URL, the REST v2 versions' base; APIURL, what 1.8 and
# older read for GraphQL (viper's AutomaticEnv of apiUrl). `pod delete`
# makes one REST call; 1.x has no such command and calls nothing (`remove
# pod`, GraphQL before the REST v2 versions, is not used: GraphQL cannot
# reach a v2 API, and 1.x put the key in its URL). Skipped without
# OVERBRAINER_API_URL, or with one that is not http(s). Its success
# counts once confirmed, as the API's.
pod_ctl() {
  if ! command -v runpodctl >/dev/null 2>&1; then
    codes=$codes,runpodctl:absent
    return 1
  fi
  case ${OVERBRAINER_API_URL:-} in
    http://?* | https://?*) ;;
    *)
      log "delete_code method=runpodctl code=skipped why=no_http_api_url"
      codes=$codes,runpodctl:skipped
      return 1
      ;;
  esac
  RUNPOD_API_KEY=$API_KEY RUNPOD_API_URL=$API RUNPOD_REST_V2_URL=$API RUNPOD_GRAPHQL_URL=$API/graphql \
    APIURL=$API/graphql runpodctl pod delete "$POD_ID" >/dev/null 2>&1 </dev/null
  code=$?
  log "delete_code method=runpodctl code=$code"
  way=runpodctl:$code
  if [ "$code" = 0 ]; then
    confirm runpodctl 4 && return 0
    way=$way/unconfirmed
  fi
  codes=$codes,$way
  return 1
}

# ended_note REASON: writes the run directory's ended_by, `reason=REASON
# at=TIME`, before the first try to delete the pod by REASON: a run
# directory that outlives the pod (on a network volume) tells a later
# reader which rule ended it.
ended_noted=
ended_note() {
  [ "$1" != "$ended_noted" ] || return 0
  ended_noted=$1
  fresh_file "$RUN_DIR/ended_by.tmp"
  printf 'reason=%s at=%s\n' "$1" "$n" >"$RUN_DIR/ended_by.tmp" 2>/dev/null &&
    mv -f "$RUN_DIR/ended_by.tmp" "$RUN_DIR/ended_by" 2>/dev/null
}

# Stalls. The rule is off unless asked (STALL_AFTER, 0 by default): a rule
# that ends a running job is the user's to turn on. When it is on, a job
# that has not moved for STALL_AFTER seconds is asked for a snapshot, and
# its pod is deleted (stalled) SNAPSHOT_WAIT later if it still has not
# moved nor ended. The job moves when, since the look before, its output
# (job.log) grew, its progress file ($OVERBRAINER_PROGRESS) changed at its
# end, a file or directory under its outputs changed (outputs_moved), or
# its processes used at least a tenth of a core (cpu_moved); new output
# always counts, progress lines or not, so an evaluation or a save after
# the last step holds the job. With MIN_GPU_UTIL set, a GPU at least that
# busy (nvidia-smi, bounded by timeout: a wedged GPU can hang it) counts as
# movement too, asked only once nothing else moved for the window. A kept
# pod is left to keep mode. With the rule off the watchdog still looks, a
# tenth of STALL_WATCH apart (podenv.StallWarnAfter, which a test ties it
# to), and deletes nothing: each look that saw the job move writes its time
# to .pod/moved, from which a following client (watch.sh) tells a job that
# does not move, by the same reading. Looks come every tenth of the window
# (STALL_AFTER, else STALL_WATCH; processes: tail, wc, find and head), so a
# stall is seen at most a tenth of STALL_AFTER late, never early: a
# movement counts from the look that saw it.
setting OVERBRAINER_STALL_AFTER "${OVERBRAINER_STALL_AFTER:-}" 0 && STALL_AFTER=$number
setting OVERBRAINER_MIN_GPU_UTIL "${OVERBRAINER_MIN_GPU_UTIL:-}" 0 && MIN_GPU_UTIL=$number
STALL_WATCH=1800
STALL_WINDOW=$STALL_AFTER
[ "$STALL_WINDOW" -gt 0 ] || STALL_WINDOW=$STALL_WATCH
STALL_LOOK=$((STALL_WINDOW / 10))
[ "$STALL_LOOK" -ge 1 ] || STALL_LOOK=1
GPU_TIMEOUT=
if [ "$MIN_GPU_UTIL" -gt 0 ] && command -v nvidia-smi >/dev/null 2>&1 &&
  command -v timeout >/dev/null 2>&1 && timeout -k 2 10 true 2>/dev/null; then
  GPU_TIMEOUT=1
fi
moved_at=
moved_sig=
stall_look_at=
stall_asked=
stalled=0
stall_mark=a
cpu_was=
cpu_was_at=

# movement_sig: sets $sig to what shows the job's output and progress
# moving: job.log's size and the last bytes of the progress file. Regular
# files only, opened read-write as small_read does, so a FIFO never blocks.
movement_sig() {
  sig=
  if [ -f "$RUN_DIR/progress" ]; then
    { sig=$(exec 8<>"$RUN_DIR/progress" && [ -f /proc/self/fd/8 ] && exec tail -c 256 <&8); } 2>/dev/null
  fi
  sig="p:$sig"
  if [ -f "$RUN_DIR/job.log" ]; then
    { sig="$sig o:$(exec 8<>"$RUN_DIR/job.log" && [ -f /proc/self/fd/8 ] && exec wc -c <&8)"; } 2>/dev/null
  fi
}

# outputs_moved: something under the job's outputs changed since the look
# before: a file written (its mtime), or an entry made, renamed or removed
# (its directory's mtime). The look before is marked by one of two empty
# files of .pod, rewritten in turn by a redirection (no process): find
# compares with the other, so a change made while find runs counts at the
# next look too, never at neither. A mark is rewritten through a
# read-write open, which never blocks, even on a FIFO put there; anything
# but a regular file there is removed first. One find, cut short by head at the first
# name, bounds the cost to one walk of the tree's names and their stat,
# however many files changed: no du, no checksum, no content read. (A find
# that compares whole seconds, as busybox's, misses a lone change within
# the second of a mark.)
outputs_moved() {
  prev=$POD_DIR/stall_mark_$stall_mark
  case $stall_mark in a) stall_mark=b ;; *) stall_mark=a ;; esac
  fresh=$POD_DIR/stall_mark_$stall_mark
  if [ -h "$fresh" ] || { [ -e "$fresh" ] && [ ! -f "$fresh" ]; }; then
    fresh_file "$fresh"
  fi
  echo x 2>/dev/null 1<>"$fresh"
  [ -d "$RUN_DIR/outputs" ] && [ -f "$prev" ] || return 1
  found=$(find "$RUN_DIR/outputs" -newer "$prev" -print 2>/dev/null | head -c 1)
  [ -n "$found" ]
}

# cpu_moved: the job's processes (those of its process group or session,
# read from /proc by proc_fields, with the shell's own read) used at
# least a tenth of a core since the look before: user and system time,
# their waited-for children's included (a loop of short commands). The
# first look only takes the measure. /proc counts in USER_HZ ticks, 100 a
# second on every architecture a GPU pod runs (x86-64, arm64): a constant,
# where getconf CLK_TCK would cost a process.
cpu_moved() {
  [ -n "$job_pgid" ] || return 1
  cpu=0
  for proc_file in "$PROC"/[0-9]*/stat; do
    proc_fields "$proc_file" || continue
    [ "$proc_pgrp" = "$job_pgid" ] || [ "$proc_session" = "$job_pgid" ] || continue
    # The four ticks of $proc_cpu, each ended by a dot.
    t=$proc_cpu.
    while [ -n "$t" ]; do
      number "${t%%.*}" && cpu=$((cpu + number))
      t=${t#*.}
    done
  done
  was=$cpu_was
  was_at=$cpu_was_at
  cpu_was=$cpu
  cpu_was_at=$n
  [ -n "$was" ] && [ "$n" -gt "$was_at" ] || return 1
  [ $(((cpu - was) * 10)) -ge $(((n - was_at) * 100)) ]
}

# gpu_busy: MIN_GPU_UTIL is set and some GPU is at least that busy, as
# nvidia-smi says within 10 s.
gpu_busy() {
  [ -n "$GPU_TIMEOUT" ] || return 1
  { out=$(timeout -k 2 10 nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits </dev/null); } 2>/dev/null
  while read -r u _; do
    number "${u%%[!0-9]*}" || continue
    [ "$number" -lt "$MIN_GPU_UTIL" ] || return 0
  done <<GPU_OUT
$out
GPU_OUT
  return 1
}

# stall_check: looks for movement when a look is due (every reading taken
# at each look, so that each compares with the look before), writes the
# time of a look that saw some to .pod/moved, and, with the rule on, asks
# for the stall snapshot once the job has not moved for STALL_AFTER and
# sets $stalled once that request had SNAPSHOT_WAIT without movement.
stall_check() {
  stalled=0
  if [ -z "$moved_at" ]; then
    moved_at=$n
    stall_look_at=$n
  fi
  if [ "$n" -ge "$stall_look_at" ]; then
    stall_look_at=$((n + STALL_LOOK))
    movement_sig
    moved=0
    if [ "$sig" != "$moved_sig" ]; then
      moved_sig=$sig
      moved=1
    fi
    outputs_moved && moved=1
    cpu_moved && moved=1
    if [ "$moved" = 0 ] && [ $((n - moved_at)) -ge "$STALL_WINDOW" ] && gpu_busy; then
      moved=1
    fi
    if [ "$moved" = 1 ]; then
      moved_at=$n
      fresh_file "$POD_DIR/moved.tmp"
      echo "$n" 2>/dev/null >"$POD_DIR/moved.tmp" && mv -f "$POD_DIR/moved.tmp" "$POD_DIR/moved" 2>/dev/null
      if [ -n "$stall_asked" ]; then
        stall_asked=
        log "stall_over"
      fi
    fi
  fi
  [ "$STALL_AFTER" -gt 0 ] || return 0
  due "$stall_look_at"
  still=$((n - moved_at))
  if [ "$still" -lt "$STALL_AFTER" ]; then
    due $((n + STALL_AFTER - still))
    return 0
  fi
  if [ -z "$stall_asked" ]; then
    stall_asked=$n
    request_snapshot stall "still_s=$still" || :
  fi
  if span_end "$stall_asked" "$SNAPSHOT_WAIT"; then
    stalled=1
  else
    due "$span_end"
  fi
}

sleeper=
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
# HUP means the client just wrote a control file (cost_cap_at, snapshot_at,
# retrieved, ...): end the current pause so the next tick reads it at once
# instead of up to INTERVAL later. .pod/watchdog.pid says whom to signal; it
# is written once the trap is set, so a HUP can never kill the watchdog.
trap wake HUP
fresh_file "$POD_DIR/watchdog.pid.tmp"
printf '%s\n' "$$" >"$POD_DIR/watchdog.pid.tmp" 2>/dev/null &&
  mv -f "$POD_DIR/watchdog.pid.tmp" "$POD_DIR/watchdog.pid" 2>/dev/null

log "start deadline=${DEADLINE:-none} interval=$INTERVAL boot_grace=$BOOT_GRACE retrieve_grace=$RETRIEVE_GRACE lease_ttl=$LEASE_TTL keep=$KEEP boot_failed=$BOOT_FAILED"
if [ "$BOOT_FAILED" = 1 ]; then
  # The client learns of the failure at once; one probe only tells the log
  # whether the key works, before the pod is deleted.
  small_read "$POD_DIR/bootstrap_failed" 512
  boot_reason=$raw
  verdict "failed bootstrap: ${boot_reason:-unknown}"
  probe 1
  log "probe result=failed reason=bootstrap key=${result#failed } msg=${boot_reason:-unknown}"
else
  probe "$PROBE_TRIES"
  # The API has no harmless write that would prove the key may delete the
  # pod (no dry run; PATCH is another right): a ready probe proves GET
  # only. The log says so (the verdict stays `ready`); a refused delete
  # says it again, at every tick (delete_failed).
  verdict "$result"
  case $result in
    ready) log "probe result=ready delete_right=unproven" ;;
    *) log "probe result=failed reason=${result#failed }" ;;
  esac
fi

started=0
ended_at=
retrieved=0
requested_at=
held=
cost_cap_at=
snapshot_at=
retrieval_hold=
wait_s=0
last_n=$start
confirm=0
while :; do
  tick=$((tick + 1))
  synced=0
  clock_how=
  n=
  if ! clock_now || [ "$confirm" = 1 ] || [ $((tick - synced_tick)) -ge "$CLOCK_EVERY" ]; then
    clock_sync
  fi
  confirm=0
  # A clock that did not read: the tick says why, and with no time at all
  # (it never read) judges nothing but a failed bootstrap or an unsafe pod
  # directory (no time enters them, and they come before every time rule:
  # 0 stands in, and is not kept); with a time (the uptime sum, or the
  # sleeps counted) it runs, but no time rule deletes (below).
  if [ -n "$clock_how" ]; then
    log "clock_unreadable how=$clock_how msg=no delete on this tick; the next tick reads the clock again"
    if [ -z "$n" ]; then
      if [ "$BOOT_FAILED" = 0 ] && [ "$POD_DIR_UNSAFE" = 0 ]; then
        pause "$INTERVAL"
        continue
      fi
      n=0
    fi
  elif [ -z "$start" ]; then
    start=$n
    [ -z "${OVERBRAINER_DEADLINE:-}" ] || [ -n "$DEADLINE" ] || DEADLINE=$start
  fi
  [ -z "$start" ] || last_n=$n
  next=

  if [ "$started" = 0 ] && [ -f "$RUN_DIR/job.pid" ]; then
    started=1
    log "job_started"
  fi
  # A lost job (cancelled, container_restarted) that the client started
  # again in its run directory (jobctl's restart: its markers gone, a new
  # job.pid written): a job that runs again, under every rule.
  if [ -n "$ended_at" ] && [ "$ended_by" = cancelled ] && [ ! -e "$RUN_DIR/cancelled" ] && [ -f "$RUN_DIR/job.pid" ]; then
    ended_at=
    job_pgid=
    retrieval_hold=
    log "job_started again=1"
  fi
  if [ "$started" = 1 ] && [ -z "$ended_at" ] && job_ended; then
    ended_at=$n
    why=
    [ "$ended_by" != cancelled ] || cancel_reason
    log "job_ended by=$ended_by$why"
  fi
  if [ "$retrieved" = 0 ] && [ -f "$POD_DIR/retrieved" ]; then
    retrieved=1
    log "retrieved"
  fi
  kept=0
  [ "$KEEP" = 1 ] && [ "$started" = 1 ] && kept=1
  # The client only ever replaces these files with another number, so a
  # value once read holds until then: a job that removes one, or swaps a
  # FIFO in for it (never read), cannot lift its cap, and a tick run again
  # to confirm a delete (confirm) acts on what the first run read.
  pod_number cost_cap_at
  [ -z "$number" ] || cost_cap_at=$number

  # The lease matters only from SNAPSHOT_LEAD before the deadline on (and,
  # for an ended job, once the retrieve grace passed: retrieval_held): stat
  # costs a process, so a steady tick never reads it.
  lease=
  if [ -n "$DEADLINE" ] && [ "$kept" = 0 ]; then
    if [ "$n" -ge $((DEADLINE - SNAPSHOT_LEAD)) ]; then
      lease_check
    else
      due $((DEADLINE - SNAPSHOT_LEAD))
    fi
  fi
  if [ "$lease" = fresh ]; then
    due "$lease_until"
    if [ -z "$held" ] && [ "$n" -ge "$DEADLINE" ]; then
      held=1
      log "deadline_held until=$lease_until"
    fi
  fi

  if [ "$started" = 1 ] && [ -z "$ended_at" ]; then
    if [ "$KEEP" != 1 ] && [ -z "$requested_at" ]; then
      pod_number snapshot_at
      [ -z "$number" ] || snapshot_at=$number
      cost_ask_at
      if [ -n "$cost_at" ]; then
        if [ "$n" -ge "$cost_at" ]; then
          left=
          [ -z "$cost_cap_at" ] || left="cap_in_min=$(((cost_cap_at - n + 59) / 60))"
          request_snapshot cost "$left"
        else
          due "$cost_at"
        fi
      fi
      if [ -z "$requested_at" ] && [ "$lease" = stale ]; then
        request_snapshot deadline
      fi
      # The extension's end takes the pod whatever the lease: the job is
      # asked SNAPSHOT_LEAD before, as for the cost cap.
      if [ -z "$requested_at" ] && [ -n "$DEADLINE" ]; then
        span_end "$DEADLINE" "$MAX_EXTENSION"
        ext_left=$((span_end - n))
        if [ "$ext_left" -le "$SNAPSHOT_LEAD" ]; then
          request_snapshot deadline "hard_in_min=$(((ext_left + 59) / 60))"
        else
          due $((n + ext_left - SNAPSHOT_LEAD))
        fi
      fi
    fi
    # A full disk asks again whenever the job consumed the last request
    # (the trainer removes snapshot.request) and kept running.
    if [ ! -e "$RUN_DIR/snapshot.request" ] && disk_full; then
      request_snapshot disk
    fi
  fi
  stalled=0
  if [ "$started" = 1 ] && [ -z "$ended_at" ] && [ "$kept" = 0 ]; then
    stall_check
  fi

  reason=
  if [ "$BOOT_FAILED" = 1 ]; then
    reason=bootstrap_failed
  elif [ "$POD_DIR_UNSAFE" = 1 ]; then
    reason=pod_dir_unsafe
  elif [ "$kept" = 0 ]; then
    if [ -n "$cost_cap_at" ]; then
      if [ "$n" -ge "$cost_cap_at" ]; then reason=cost_cap; else due "$cost_cap_at"; fi
    fi
    if [ -z "$reason" ] && [ -n "$DEADLINE" ]; then
      if [ "$n" -lt "$DEADLINE" ]; then
        due "$DEADLINE"
      elif [ "$lease" = stale ] && deadline_due; then
        reason=deadline
      fi
      # Elapsed time against the extension, which may be up to 2^31-1 s
      # (a deadline plus it would wrap under mksh; a wrapped due time is
      # only ignored).
      if [ -z "$reason" ]; then
        if span_end "$DEADLINE" "$MAX_EXTENSION"; then
          reason=max_extension
        else
          due "$span_end"
        fi
      fi
    fi
    if [ -n "$reason" ]; then
      :
    elif [ "$stalled" = 1 ]; then
      reason=stalled
    elif [ "$retrieved" = 1 ]; then
      reason=retrieved
    elif [ -n "$ended_at" ]; then
      # Elapsed time against the grace: a time plus a grace of up to
      # 2^31-1 s would wrap negative under mksh's 32 bits (a wrapped due
      # time is only ignored).
      if ! span_end "$ended_at" "$RETRIEVE_GRACE"; then
        due "$span_end"
      elif ! retrieval_held; then
        reason=abandoned
      fi
    elif [ "$started" = 0 ]; then
      if span_end "$start" "$BOOT_GRACE"; then reason=never_started; else due "$span_end"; fi
    fi
  elif kept_idle; then
    reason=kept_idle
  fi

  # A time rule deletes on a clock that read: a tick whose date did not
  # read (before the job exists) leaves it, and the next one, an interval
  # on, reads it again (clock_unreadable said why).
  if [ -n "$clock_how" ]; then
    case $reason in
      bootstrap_failed | pod_dir_unsafe | retrieved) ;;
      *)
        reason=
        next=
        ;;
    esac
  fi
  # A delete acts on date's time: a tick that used the sum alone runs
  # again at once with date.
  if [ -n "$reason" ] && [ "$synced" = 0 ]; then
    confirm=1
    continue
  fi

  wait_s=$INTERVAL
  if [ -n "$reason" ]; then
    ended_note "$reason"
    if end_pod "$reason"; then
      if [ "$stopped_only" = 1 ]; then
        log "stopped method=stop reason=$reason msg=the pod is stopped, not deleted: its volume keeps billing until it is removed"
      else
        log "deleted method=$deleted_by"
      fi
      exit 0
    fi
    log "delete_failed retry_in=$wait_s codes=$codes"
  fi
  if [ -n "$next" ] && [ $((next - n)) -le "$wait_s" ]; then
    # A sleep that ends at a due time is measured from date: the sum at
    # its end is then at least that time, and a time rule acts at its
    # second as it did with date every tick.
    [ "$synced" = 1 ] || clock_sync
  fi
  if [ -n "$next" ] && [ $((next - n)) -lt "$wait_s" ]; then
    wait_s=$((next - n))
  fi
  [ "$wait_s" -ge 1 ] || wait_s=1
  pause "$wait_s"
done
