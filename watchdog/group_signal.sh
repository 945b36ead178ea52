# group_signal SIG PGID: sends SIG (a signal name such as TERM or KILL, or 0
# to only test) to every process of the process group PGID, and succeeds when
# the signal reached the group. The watchdog uses `group_signal 0 PGID` to see
# whether a job is still alive; job scripts use it to stop a whole job tree.
#
# A PGID that is not a number above 1 is refused: `kill -- -1` would signal
# every process on the machine.
#
# Shells disagree on how to name a group to their kill: dash and mksh take
# `-s SIG -- -PGID` and read a bare `-PGID` as an option; busybox rejects the
# `--`; posh has no kill of its own, and procps kill reports success for a
# bare `-PGID` that does not exist. The first call therefore finds which form
# this shell accepts, trying each on a target known to exist (this shell's own
# pid, then its own process group), so that a failure can only mean "usage",
# and remembers it in group_signal_form.
group_signal() {
  case $2 in
    '' | *[!0-9]*) return 2 ;;
  esac
  [ "$2" -gt 1 ] 2>/dev/null || return 2
  [ -n "${group_signal_form:-}" ] || group_signal_detect
  case $group_signal_form in
    dashdash) kill -s "$1" -- "-$2" 2>/dev/null ;;
    bare) kill -s "$1" "-$2" 2>/dev/null ;;
    *) "$group_signal_form" -s "$1" -- "-$2" 2>/dev/null ;;
  esac
}

group_signal_detect() {
  group_signal_form=dashdash
  kill -s 0 -- "$$" 2>/dev/null && return 0
  group_signal_pgrp=
  read -r _ _ _ _ group_signal_pgrp _ 2>/dev/null </proc/$$/stat
  case $group_signal_pgrp in
    '' | *[!0-9]*) ;;
    *)
      if kill -s 0 "-$group_signal_pgrp" 2>/dev/null; then
        group_signal_form=bare
        return 0
      fi
      ;;
  esac
  for group_signal_kill in /bin/kill /usr/bin/kill; do
    if [ -x "$group_signal_kill" ] && "$group_signal_kill" -s 0 -- "$$" 2>/dev/null; then
      group_signal_form=$group_signal_kill
      return 0
    fi
  done
  group_signal_form=bare
}
