# session.sh RUN_DIR JOB_ENV [COMMAND] (POSIX sh): a user's SSH session on
# the pod (launch ssh), in the job's surroundings: it starts in the run
# directory, with JOB_ENV sourced (the pod's environment without its
# secrets) and the variables start.sh gives the job, then runs COMMAND
# with the user's shell, or that shell alone. The job's secrets never
# reach it: they live in the job's environment only.

run_dir=$1
job_env=$2
cd "$run_dir" 2> /dev/null || echo "overbrainer: no run directory $run_dir on this pod (yet)" >&2
if [ -f "$job_env" ]; then
  set -a
  # shellcheck source=/dev/null
  . "$job_env"
  set +a
fi
# As start.sh sets them for the job.
PYTHONUNBUFFERED=${PYTHONUNBUFFERED-1}
OVERBRAINER_OUTPUTS=$run_dir/outputs
OVERBRAINER_SNAPSHOT_REQUEST=$run_dir/snapshot.request
OVERBRAINER_PROGRESS=$run_dir/progress
export PYTHONUNBUFFERED OVERBRAINER_OUTPUTS OVERBRAINER_SNAPSHOT_REQUEST OVERBRAINER_PROGRESS
if [ "$#" -ge 3 ]; then
  exec "${SHELL:-/bin/sh}" -c "$3"
fi
exec "${SHELL:-/bin/sh}"
