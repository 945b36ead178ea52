# watch.sh RUN_DIR (POSIX sh): the client's long-lived session with the run,
# one per SSH connection, so that a look or a small write costs no new
# session (nor a new login shell with its rc files). It reads requests on
# standard input, one a line:
#
#   poll OFFSET TOUCH MAX
#
# answered with one header line
#
#   ob1 PID EXIT ALIVE CANCELLED SIZE NOW REQUEST DU_KIB WHY N
#
# (a - for what does not exist), the verdict line (empty while there is
# none), then exactly N bytes of job.log from byte OFFSET on (N <= MAX).
# CANCELLED is 0 without the cancelled marker, else the word of [a-z_] it
# holds (container_restarted: the bootstrap found the job of an earlier
# container, whose group number means nothing now, so ALIVE is 0), or 1 when
# it holds none. WHY is the reason of the watchdog's last delete_reason line
# since it started, the rule that is deleting the pod. With TOUCH=1 the look
# first touches .pod/lease, so the lease's mtime is the pod's clock.
#
#   put NAME VALUE
#
# replaces one of the client's pod files (tmp + mv) with VALUE, a word of
# [A-Za-z0-9_-] or nothing, and answers "ob1-ok". Anything else is answered
# "ob1-error WHY". The group_signal and wake_watchdog helpers are prepended
# by the Go package.

cd "$1" || exit 1
chunk=.pod/watch.$$.chunk
trap 'rm -f "$chunk"' EXIT

# field FILE: prints the number that starts FILE (.pod/du holds du's whole
# line, "KIB<tab>DIR"), or - when there is none.
field() {
  value=
  read -r value _ < "$1" 2> /dev/null
  case $value in
    '' | *[!0-9]*) value=- ;;
  esac
  printf '%s' "$value"
}

# delete_why: prints the reason of the last delete_reason line the watchdog
# logged since its last start, or -. Only the log's tail is read: the
# watchdog logs the line again at every try, and a regular file only (a
# fifo would hang the look).
delete_why() {
  if [ -f .pod/watchdog.log ]; then
    tail -c 4096 .pod/watchdog.log 2> /dev/null | awk '
$2 == "start" { why = "" }
$2 == "delete_reason" && $3 ~ /^reason=[a-z_]+$/ { why = substr($3, 8) }
END { print (why == "" ? "-" : substr(why, 1, 64)) }'
  else
    printf '%s' -
  fi
}

# look OFFSET TOUCH MAX: one answer.
look() {
  if [ "$2" = 1 ]; then
    touch .pod/lease
  fi
  pid=$(field job.pid)
  alive=-
  if [ "$pid" != - ] && [ "$pid" -gt 1 ]; then
    if group_signal 0 "$pid"; then alive=1; else alive=0; fi
  fi
  # Read after the group's check: the job writes its exit code before its
  # group goes, so a gone group seen without one was killed. Read before,
  # a job ending in between would look killed.
  code=$(field exit_code)
  cancelled=0
  if [ -f cancelled ]; then
    cancelled=$(head -c 64 cancelled 2> /dev/null | tr -d '\n')
    case $cancelled in
      '' | *[!a-z_]*) cancelled=1 ;;
      container_restarted) alive=0 ;;
    esac
  fi
  size=0
  [ -f job.log ] && size=$(wc -c < job.log)
  size=$((size + 0))
  request=-
  if [ -f snapshot.request ]; then
    request=$(head -c 64 snapshot.request 2> /dev/null | tr -d '\n' | tr -c 'A-Za-z0-9_-' _)
    [ -n "$request" ] || request=_
  fi
  du_kib=$(field .pod/du)
  why=$(delete_why)
  verdict=$(head -n 1 .pod/watchdog 2> /dev/null | tr -d '\r')
  # The bytes go through a file, so that N counts what is sent even while
  # the log grows.
  : > "$chunk"
  if [ "$size" -gt "$1" ]; then
    tail -c +"$(($1 + 1))" job.log | head -c "$3" > "$chunk"
  fi
  n=$(wc -c < "$chunk")
  printf 'ob1 %s %s %s %s %s %s %s %s %s %s\n%s\n' "$pid" "$code" "$alive" "$cancelled" \
    "$size" "$(date +%s)" "$request" "$du_kib" "$why" "$((n + 0))" "$verdict"
  cat "$chunk"
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
  if printf '%s' "$2" > "$file.$$.tmp" && mv -f "$file.$$.tmp" "$file"; then
    # Wake the watchdog so that it reads the file now rather than at its
    # next tick, up to a minute later.
    wake_watchdog .
    echo "ob1-ok"
  else
    rm -f "$file.$$.tmp"
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
