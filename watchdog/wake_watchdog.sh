# wake_watchdog RUN_DIR: sends HUP to the watchdog of RUN_DIR so that it acts
# on a file just written (a client's control file, the job's exit_code) now
# rather than at its next tick, up to a minute later. It always succeeds: a
# pod without a watchdog must not fail the command that woke it.
#
# The pid file lies in the pod, where the job can write it, so it is trusted
# only as far as checked: read only when a regular file (a FIFO would hang
# the caller) and only its first bytes, and only a plain pid above 1 is
# signalled (kill -1, 0 or 1 would reach every process, the caller's group
# or the pod's init).
wake_watchdog() {
  wake_watchdog_pid=
  if [ -f "$1/.pod/watchdog.pid" ]; then
    wake_watchdog_pid=$(head -c 20 "$1/.pod/watchdog.pid" 2>/dev/null)
  fi
  case $wake_watchdog_pid in
    '' | 0* | 1 | *[!0-9]*) ;;
    *) kill -s HUP "$wake_watchdog_pid" 2>/dev/null ;;
  esac
  return 0
}
