# start.sh RUN_DIR JOB_ENV (POSIX sh): starts the run's job on the pod,
# detached from the SSH session in a session and process group of its own.
# It runs after a line, added by jobctl, that sets wake_function.
#
# Standard input carries the job's variables (secrets among them), as shell
# assignments made by jobctl.JobInput, quoted: they reach the job's
# environment without ever being on a command line, in a file or in the
# environment of another process of the pod.
# The job's top shell takes its input out of its environment, then writes
# its pid, which is its process group, to job.pid and wakes the watchdog,
# sources JOB_ENV, sets PYTHONUNBUFFERED=1 where nothing set it, runs
# command.sh in job/ with its output appended to job.log, and writes
# exit_code (tmp + mv) when it ends, then wakes the watchdog again.
# With a third argument, restart, it starts again a job lost with an earlier
# container of the pod, in its run directory, from what it left there: only
# one the bootstrap marked cancelled (container_restarted) that wrote no exit
# code and whose results were not collected (.pod/retrieved), never a job
# that ended otherwise. The lost job's markers go, job.pid first, so that the
# watchdog sees a new job only once the new job.pid is there.
# Exit status: 0 started, 3 already started, 4 no lost job to start again
# (restart), 1 anything else.

run_dir=$1
job_env=$2
: "${wake_function:?start.sh runs after the line that sets wake_function}"
cd "$run_dir" || exit 1
if [ "${3:-}" = restart ]; then
  lost=
  if [ -f job.pid ] && [ -f cancelled ] && [ ! -e exit_code ] && [ ! -e .pod/retrieved ]; then
    read -r lost < cancelled
  fi
  if [ "$lost" != container_restarted ]; then
    echo "no job lost with an earlier container to start again in $run_dir" >&2
    exit 4
  fi
  rm -f job.pid && rm -f cancelled || exit 1
fi
if [ -e job.pid ]; then
  echo "the job was already started (job.pid exists)" >&2
  exit 3
fi
if [ ! -f command.sh ]; then
  echo "no command.sh in $run_dir" >&2
  exit 1
fi
mkdir -p job outputs || exit 1
rm -f exit_code cancelled

# The job's top shell, run as sh -c with RUN_DIR and JOB_ENV as $1 and $2
# after the definition of wake_watchdog, which the start command's first line
# sets as wake_function (the watchdog package's WakeFunction, the one wake-up
# every client uses): its expansions are meant for that shell, not this one.
# shellcheck disable=SC2016
job_main='
# The input (the secrets among it) leaves the environment first: it is for
# the job, not for what this shell runs before it (mv and the rest).
job_input=$OVERBRAINER_JOB_INPUT
unset OVERBRAINER_JOB_INPUT
printf "%s\n" "$$" > "$1/job.pid.tmp" && mv -f "$1/job.pid.tmp" "$1/job.pid" || exit 1
# Wake the watchdog: its snapshot rules act only on a started job, and a
# request already due (a short cost cap, a near deadline) must reach the
# job now, not at the next tick, up to a minute later.
wake_watchdog "$1"
if [ -f "$2" ]; then
  set -a
  . "$2"
  set +a
fi
eval "$job_input"
unset job_input
# Python block-buffers its output into a file: a job printing a line a
# second would show nothing in job.log for minutes. Unbuffered, unless
# job.env (the env of the pod, --pod-env) or the job input says otherwise.
PYTHONUNBUFFERED=${PYTHONUNBUFFERED-1}
export PYTHONUNBUFFERED
OVERBRAINER_OUTPUTS=$1/outputs
OVERBRAINER_SNAPSHOT_REQUEST=$1/snapshot.request
OVERBRAINER_PROGRESS=$1/progress
export OVERBRAINER_OUTPUTS OVERBRAINER_SNAPSHOT_REQUEST OVERBRAINER_PROGRESS
cd "$1/job" || exit 1
sh "$1/command.sh"
code=$?
printf "%s\n" "$code" > "$1/exit_code.tmp" && mv -f "$1/exit_code.tmp" "$1/exit_code"
# Wake the watchdog: it sees the end now, not at its next tick, so its
# retrieve grace counts from the real end.
wake_watchdog "$1"
'

# setsid gives the job a session and process group of its own: util-linux
# has it on every Debian or Ubuntu image, busybox on the smaller ones.
if command -v setsid > /dev/null 2>&1; then
  setsid=setsid
elif busybox setsid true > /dev/null 2>&1; then
  setsid='busybox setsid'
else
  echo "neither setsid nor busybox is installed on the pod: the job cannot get a process group of its own" >&2
  exit 1
fi
# Read here, while the SSH session's input is ours; evaluated by the job's
# top shell after job.env, so that a secret wins over the pod's variable of
# that name (and a default does not). It travels in a variable exported to
# that shell alone, which unsets it.
OVERBRAINER_JOB_INPUT=$(cat) || OVERBRAINER_JOB_INPUT=
# The redirections are made by exec in a subshell rather than on the
# command: some shells (yash) keep a copy of the old descriptor for a
# command's redirection, and the job would hold the SSH session open.
(
  exec < /dev/null >> job.log 2>&1
  export OVERBRAINER_JOB_INPUT
  exec $setsid sh -c "$wake_function$job_main" overbrainer-job "$run_dir" "$job_env"
) &
OVERBRAINER_JOB_INPUT=

# Wait for the job to record itself, so that the caller knows it started.
# It does within milliseconds: the first looks come 20 ms apart, then
# 200 ms (about 20 s in all). A sleep without fractions sleeps a second.
tries=0
while [ ! -s job.pid ]; do
  tries=$((tries + 1))
  if [ "$tries" -gt 110 ]; then
    echo "the job did not write job.pid in time" >&2
    exit 1
  fi
  if [ "$tries" -le 10 ]; then
    sleep 0.02 2> /dev/null || sleep 1
  else
    sleep 0.2 2> /dev/null || sleep 1
  fi
done
cat job.pid
