#!/bin/sh
# A tiny stand-in for a trainer (POSIX sh), the launcher's default job. It
# "trains" for DEMO_STEPS steps of DEMO_STEP_SECONDS each, prints a progress
# line per step, keeps a checkpoint in $OVERBRAINER_OUTPUTS, resumes from it,
# and honours the snapshot protocol: when $OVERBRAINER_SNAPSHOT_REQUEST
# appears (the client's stop, or the watchdog's cost, deadline, disk or
# stall reason), it writes a checkpoint and exits 0. It reports its progress
# in $OVERBRAINER_PROGRESS, one line a step (step=N total=N loss=X): that is
# what keeps it alive against the stall rule (--stall-after) and what the
# launcher reads its pace from.
set -u

out=${OVERBRAINER_OUTPUTS:-./outputs}
request=${OVERBRAINER_SNAPSHOT_REQUEST:-./snapshot.request}
progress=${OVERBRAINER_PROGRESS:-./progress}
steps=${DEMO_STEPS:-10}
pause=${DEMO_STEP_SECONDS:-1}
mkdir -p "$out" || exit 1

step=0
if [ -f "$out/checkpoint.txt" ]; then
  step=$(sed -n 's/^step=//p' "$out/checkpoint.txt")
  case $step in '' | *[!0-9]*) step=0 ;; esac
  echo "resuming from the checkpoint at step $step"
fi

# checkpoint WHY: writes the checkpoint atomically (tmp + mv), then its
# proof, snapshot.json, the same way.
checkpoint() {
  printf 'step=%s\nloss=%s\nreason=%s\n' "$step" "$(loss)" "$1" > "$out/checkpoint.tmp" &&
    mv -f "$out/checkpoint.tmp" "$out/checkpoint.txt" &&
    echo "checkpoint: step $step ($1) -> $out/checkpoint.txt" || return 1
  # The reason goes into JSON: only words of letters, digits, _ and spaces.
  case $1 in
    *[!A-Za-z0-9_\ ]*) why=other ;;
    *) why=$1 ;;
  esac
  printf '{"checkpoint": "checkpoint.txt", "step": %s, "reason": "%s"}\n' "$step" "$why" > "$out/snapshot.tmp" &&
    mv -f "$out/snapshot.tmp" "$out/snapshot.json"
}

# loss: a made-up loss that falls with the steps, as a decimal.
loss() {
  milli=$((2000 / (step + 1) + 50))
  printf '%d.%03d' $((milli / 1000)) $((milli % 1000))
}

echo "demo training: $steps steps of ${pause}s, outputs in $out"
while [ "$step" -lt "$steps" ]; do
  if [ -f "$request" ]; then
    reason=$(cat "$request" 2>/dev/null)
    echo "snapshot requested (${reason:-no reason}): checkpointing and stopping"
    checkpoint "snapshot ${reason:-}"
    exit 0
  fi
  sleep "$pause"
  step=$((step + 1))
  echo "step $step/$steps loss $(loss)"
  echo "step=$step total=$steps loss=$(loss)" >> "$progress"
  if [ $((step % 5)) -eq 0 ] && [ "$step" -lt "$steps" ]; then
    checkpoint periodic
  fi
done
checkpoint final
echo "training done"
