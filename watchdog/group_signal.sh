# group_signal SIG PGID: sends SIG (a signal name, or 0 to only test) to every
# process in the process group PGID. It succeeds when the signal reached the
# group. The watchdog uses `group_signal 0 PGID` to tell whether a job is still
# alive; the job scripts use it to interrupt or kill a whole job tree.
group_signal() {
  kill -s "$1" -- "-$2" 2>/dev/null
}
