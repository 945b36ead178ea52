# watch.sh RUN_DIR (POSIX sh): the client's long-lived session with the run,
# one per SSH connection, so that a look or a small write costs no new
# session (nor a new login shell with its rc files). It reads requests on
# standard input, one a line:
#
#   poll OFFSET TOUCH MAX
#
# answered with one header line
#
#   ob1 PID EXIT ALIVE CANCELLED SIZE NOW REQUEST DU_KIB WHY RIGHT FAILED MOVED N
#
# (a - for what does not exist), the verdict line (empty while there is
# none), the progress line (the last line of the job's progress file, its
# last 256 bytes at most; empty while there is none), then exactly N bytes
# of job.log from byte OFFSET on (N <= MAX).
# CANCELLED is 0 without the cancelled marker, else the word of [a-z_] it
# holds (container_restarted: the bootstrap found the job of an earlier
# container, whose group number means nothing now, so ALIVE is 0), or 1 when
# it holds none. WHY is the reason of the watchdog's last delete_reason line
# since it started, the rule that is deleting the pod; RIGHT the
# delete_right of its probe line (unproven); FAILED, after a delete the
# watchdog could not confirm, TIME@CODES of its last delete_failed line.
# MOVED is the pod's time of the watchdog's last look that saw the job
# move (.pod/moved: its output, progress, outputs or CPU), so that the
# client judges a stall by the watchdog's own reading. With TOUCH=1 the look
# first touches .pod/lease, so the lease's mtime is the pod's clock.
#
#   put NAME VALUE
#
# replaces one of the client's pod files (tmp + mv) with VALUE, a word of
# [A-Za-z0-9_-] or nothing, and answers "ob1-ok". Anything else is answered
# "ob1-error WHY". The group_signal and wake_watchdog helpers are prepended
# by the Go package (WatchScript), which sends the whole without comment
# lines, packed (gzip, then base64), on a pod's first session only: the pod
# keeps it on its disk, and the next sessions run that copy.
#
# A write to the run directory, which a hung network volume may block for
# ever, is given OVERBRAINER_WRITE_WAIT (10) seconds: a put or a lease that
# the volume does not take in time is answered with an error, so that
# watch.sh goes on reading (and ends when the session closes) instead of
# hanging with the write.

cd "$1" || exit 1
# The chunk lives on the container's disk, where a write cannot hang.
chunk=$(mktemp "${TMPDIR:-/tmp}/overbrainer-watch.XXXXXX") || exit 1
trap 'rm -f "$chunk"' EXIT
write_wait=${OVERBRAINER_WRITE_WAIT:-10}
case $write_wait in '' | *[!0-9]* | 0) write_wait=10 ;; esac
timed_out=0
trap 'timed_out=1' USR1
cr=$(printf '\r')
nl='
'
# The watchdog log's size when delete_why last read it (- for no log), and
# what it found: the log only grows, so a look whose size is the same reuses
# the reason.
why_size=-
why='- - -'

# A look runs on every poll of a running job (each second at --poll 1s), so
# its steady state starts as few processes as it can: `date` for the pod's
# clock, one `wc` for both logs' sizes, and `touch` when it renews the lease.
# The job's output costs tail, head, wc and cat only when there is some.

# field FILE: sets $value to the number that starts FILE (.pod/du holds du's
# whole line, "KIB<tab>DIR"), or - when there is none; a builtin read, from a
# regular file only (a fifo would hang the look).
field() {
  value=
  if [ -f "$1" ]; then
    { read -r value _ < "$1"; } 2> /dev/null
  fi
  case $value in
    '' | *[!0-9]*) value=- ;;
  esac
}

# sizes: sets $size to job.log's size in bytes (0 without one) and $log_size
# to the watchdog log's (- without one), with one wc for both. Regular files
# only: wc would wait on a fifo.
sizes() {
  size=0
  log_size=-
  set --
  if [ -f job.log ]; then set -- job.log; fi
  if [ -f .pod/watchdog.log ]; then set -- "$@" .pod/watchdog.log; fi
  [ "$#" -gt 0 ] || return 0
  counted=$(wc -c "$@" 2> /dev/null)
  # Lines of "BYTES NAME" (and a total): each name follows its count.
  last=
  for word in $counted; do
    case $word in
      job.log) size=$last ;;
      .pod/watchdog.log) log_size=$last ;;
    esac
    last=$word
  done
  case $size in
    '' | *[!0-9]*) size=0 ;;
  esac
  case $log_size in
    '' | *[!0-9]*) log_size=- ;;
  esac
}

# delete_why: prints, of what the watchdog logged since its last start,
# the reason of the last delete_reason line, the delete_right of the probe
# line, and TIME@CODES of the last delete_failed line: - for each it did
# not log. Only the log's tail is read: the watchdog logs the reason again
# at every try (and the probe line comes soon after its start).
delete_why() {
  tail -c 4096 .pod/watchdog.log 2> /dev/null | awk '
$2 == "start" { why = ""; right = ""; failed = "" }
$2 == "delete_reason" && $3 ~ /^reason=[a-z_]+$/ { why = substr($3, 8) }
$2 == "probe" { for (i = 3; i <= NF; i++) if ($i ~ /^delete_right=[a-z_]+$/) right = substr($i, 14) }
$2 == "delete_failed" && $1 ~ /^[0-9]+$/ {
  failed = $1 "@"
  for (i = 3; i <= NF; i++) if ($i ~ /^codes=[A-Za-z0-9_:,\/]+$/) failed = failed substr($i, 7)
}
END {
  print (why == "" ? "-" : substr(why, 1, 64)), (right == "" ? "-" : substr(right, 1, 32)),
    (failed == "" ? "-" : substr(failed, 1, 240))
}'
}

# bounded CMD...: runs CMD in the background and waits for it at most
# write_wait seconds; fails when CMD failed or did not end in time (it is
# then killed, and left behind should it not die). A timer signals the
# shell (USR1), which ends the wait.
bounded() {
  timed_out=0
  "$@" </dev/null >/dev/null 2>&1 &
  bounded_pid=$!
  (
    sleep "$write_wait" &
    timer_sleep=$!
    trap 'kill "$timer_sleep" 2>/dev/null; exit 0' TERM
    wait "$timer_sleep" && kill -s USR1 "$$"
  ) </dev/null >/dev/null 2>&1 &
  timer=$!
  wait "$bounded_pid"
  bounded_rc=$?
  # posh's wait may return early, with another child's status: wait
  # again while the write's process still shows (a bounded number of
  # times, in case its pid was reused).
  rewaits=0
  while [ "$timed_out" = 0 ] && [ -d "/proc/$bounded_pid" ] && [ "$rewaits" -lt 50 ]; do
    wait "$bounded_pid"
    bounded_rc=$?
    rewaits=$((rewaits + 1))
  done
  kill "$timer" 2>/dev/null
  if [ "$timed_out" = 1 ]; then
    kill -s KILL "$bounded_pid" 2>/dev/null
    return 1
  fi
  return "$bounded_rc"
}

# write_file FILE VALUE: replaces FILE with VALUE (tmp + mv).
write_file() {
  printf '%s' "$2" > "$1.$$.tmp" && mv -f "$1.$$.tmp" "$1" && return 0
  rm -f "$1.$$.tmp"
  return 1
}

# look OFFSET TOUCH MAX: one answer.
look() {
  if [ "$2" = 1 ]; then
    bounded touch .pod/lease
  fi
  field job.pid
  pid=$value
  alive=-
  if [ "$pid" != - ] && [ "$pid" -gt 1 ]; then
    if group_signal 0 "$pid"; then alive=1; else alive=0; fi
  fi
  # Read after the group's check: the job writes its exit code before its
  # group goes, so a gone group seen without one was killed. Read before,
  # a job ending in between would look killed.
  field exit_code
  code=$value
  cancelled=0
  if [ -f cancelled ]; then
    cancelled=$(head -c 64 cancelled 2> /dev/null | tr -d '\n')
    case $cancelled in
      '' | *[!a-z_]*) cancelled=1 ;;
      container_restarted) alive=0 ;;
    esac
  fi
  sizes
  request=-
  if [ -f snapshot.request ]; then
    request=$(head -c 64 snapshot.request 2> /dev/null | tr -d '\n' | tr -c 'A-Za-z0-9_-' _)
    [ -n "$request" ] || request=_
  fi
  field .pod/du
  du_kib=$value
  field .pod/moved
  moved=$value
  if [ "$log_size" != "$why_size" ]; then
    why='- - -'
    [ "$log_size" = - ] || why=$(delete_why)
    why_size=$log_size
  fi
  # The verdict's first line, without its carriage returns.
  verdict=
  if [ -f .pod/watchdog ]; then
    { IFS= read -r verdict < .pod/watchdog; } 2> /dev/null
  fi
  while :; do
    case $verdict in
      *"$cr"*) verdict=${verdict%%"$cr"*}${verdict#*"$cr"} ;;
      *) break ;;
    esac
  done
  # The job's last progress line: one process (tail), only once the job
  # wrote the file; a regular file only, as the others.
  progress=
  if [ -f progress ]; then
    progress=$(tail -c 256 progress 2> /dev/null)
    progress=${progress##*"$nl"}
    while :; do
      case $progress in
        *"$cr"*) progress=${progress%%"$cr"*}${progress#*"$cr"} ;;
        *) break ;;
      esac
    done
  fi
  # The bytes go through a file, so that N counts what is sent even while
  # the log grows.
  n=0
  if [ "$size" -gt "$1" ]; then
    tail -c +"$(($1 + 1))" job.log | head -c "$3" > "$chunk"
    n=$(wc -c < "$chunk")
    n=$((n + 0))
  fi
  printf 'ob1 %s %s %s %s %s %s %s %s %s %s %s\n%s\n%s\n' "$pid" "$code" "$alive" "$cancelled" \
    "$size" "$(date +%s)" "$request" "$du_kib" "$why" "$moved" "$n" "$verdict" "$progress"
  if [ "$n" -gt 0 ]; then
    cat "$chunk"
  fi
}

# put NAME VALUE: one answer.
put() {
  case $1 in
    snapshot_at | cost_cap_at | volume_gb | retrieved) file=.pod/$1 ;;
    snapshot.request) file=$1 ;;
    *)
      echo "ob1-error not a client file: $1"
      return
      ;;
  esac
  case $2 in
    *[!A-Za-z0-9_-]*)
      echo "ob1-error bad value"
      return
      ;;
  esac
  if bounded write_file "$file" "$2"; then
    # Wake the watchdog so that it reads the file now rather than at its
    # next tick, up to a minute later.
    wake_watchdog .
    echo "ob1-ok"
  elif [ "$timed_out" = 1 ]; then
    echo "ob1-error cannot write $file: the volume did not take it in ${write_wait}s"
  else
    echo "ob1-error cannot write $file"
  fi
}

while IFS=' ' read -r what a b c; do
  case $what:$a:$c in
    poll:*[!0-9]*:* | poll:*:*[!0-9]* | poll::* | poll:*:) echo "ob1-error bad request" ;;
    poll:*) look "$a" "$b" "$c" < /dev/null ;;
    put:*) put "$a" "$b" < /dev/null ;;
    *) echo "ob1-error unknown request" ;;
  esac
done
