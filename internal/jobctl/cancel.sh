# cancel.sh RUN_DIR (POSIX sh): cancels the run's job at once, without asking
# it for a checkpoint: the cancelled marker (reason client) first, so that
# the watchdog and the client read the job's end as a cancel, then TERM to the
# job's whole process group, and KILL to what is left of it 2 seconds later.
# It runs after the group_signal and wake_watchdog helpers, and prints one
# word: "cancelled" when it stopped a running job, "ended" when the job had
# ended already (its exit code, a cancelled marker, or its group gone),
# "none" when no job was started.

cd "$1" || exit 1
pid=
if [ -f job.pid ]; then
  { read -r pid < job.pid; } 2> /dev/null
fi
case $pid in
  '' | *[!0-9]*)
    echo none
    exit 0
    ;;
esac
if [ -f exit_code ] || [ -f cancelled ] || ! group_signal 0 "$pid"; then
  echo ended
  exit 0
fi
{ printf 'client\n' > cancelled.tmp && mv -f cancelled.tmp cancelled; } || exit 1
group_signal TERM "$pid"
# A look every tenth of a second (a second where sleep takes no fractions).
tries=0
while group_signal 0 "$pid"; do
  tries=$((tries + 1))
  if [ "$tries" -gt 20 ]; then
    group_signal KILL "$pid"
    break
  fi
  sleep 0.1 2> /dev/null || sleep 1
done
# The watchdog sees the end now, and its retrieve grace counts from it.
wake_watchdog .
echo cancelled
