# poll.sh RUN_DIR OFFSET TOUCH MAX (POSIX sh): one look at the run, for the
# client's follow loop. With TOUCH=1 it first touches .pod/lease, so the
# lease's mtime is the pod's clock. It prints one header line:
#   ob1 PID EXIT ALIVE CANCELLED SIZE NOW REQUEST DU_KIB
# (a - for what does not exist), then the verdict line (empty while there is
# none), then up to MAX bytes of job.log from byte OFFSET on. The
# group_signal helper is prepended by the Go package.

run_dir=$1
offset=$2
cd "$run_dir" || exit 1
if [ "$3" = 1 ]; then
  touch .pod/lease || exit 1
fi

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

pid=$(field job.pid)
code=$(field exit_code)
alive=-
if [ "$pid" != - ] && [ "$pid" -gt 1 ]; then
  if group_signal 0 "$pid"; then alive=1; else alive=0; fi
fi
cancelled=0
[ -f cancelled ] && cancelled=1
size=0
[ -f job.log ] && size=$(wc -c < job.log)
size=$((size + 0))
request=-
if [ -f snapshot.request ]; then
  request=$(head -c 64 snapshot.request 2> /dev/null | tr -d '\n' | tr -c 'A-Za-z0-9_-' _)
  [ -n "$request" ] || request=_
fi
du_kib=$(field .pod/du)
verdict=$(head -n 1 .pod/watchdog 2> /dev/null | tr -d '\r')
printf 'ob1 %s %s %s %s %s %s %s %s\n%s\n' "$pid" "$code" "$alive" "$cancelled" \
  "$size" "$(date +%s)" "$request" "$du_kib" "$verdict"
if [ "$size" -gt "$offset" ]; then
  tail -c +"$((offset + 1))" job.log | head -c "$4"
fi
