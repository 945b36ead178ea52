#!/usr/bin/env bash
# bench/run.sh: runs the project's benchmarks on this machine and prints the
# summary table (goal, median, spread, baseline, ratio); --write regenerates
# bench/RESULTS.md. See bench/README.md.
#
#   bash bench/run.sh [--write] [--out DIR] [PART...]
#
# PART is any of: tick reaction client launcher pod (default: all).
set -uo pipefail

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

all_parts=(tick reaction client launcher pod)
parts=()
write=0
out=
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    --write) write=1 ;;
    --out) shift; out=${1:-} ;;
    -h | --help) usage ;;
    tick | reaction | client | launcher | pod) parts+=("$1") ;;
    *) echo "bench/run.sh: unknown part or option: $1" >&2; usage ;;
  esac
  shift
done
[ ${#parts[@]} -gt 0 ] || parts=("${all_parts[@]}")
want() {
  local p
  for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done
  return 1
}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/overbrainer-bench.XXXXXX")}
mkdir -p "$out/bin"
bin=$out/bin
export OVERBRAINER_BENCH_FULL=1
started=$(date +%s)

say() { printf '== %s\n' "$*" >&2; }

# --- requirements --------------------------------------------------------
need_cmd() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ -n "${2:-}" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing $2 (for $1)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 ||
      { DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1; }
    command -v "$1" >/dev/null 2>&1 && return 0
  fi
  say "missing $1: the parts that need it are skipped (see bench/README.md)"
  return 1
}
need_cmd go || exit 1
need_cmd curl curl
need_cmd dash dash
need_cmd busybox busybox
if want tick || want launcher; then need_cmd strace strace; fi
if want pod || want launcher; then
  need_cmd unshare util-linux
  [ -x /usr/sbin/sshd ] || need_cmd sshd openssh-server
  [ "$(id -u)" = 0 ] || say "not root: the boot and launcher parts are skipped"
fi

# --- the run's description -----------------------------------------------
meta=$out/meta.env
{
  echo "command=bash bench/run.sh ${args[*]}"
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "machine=$(uname -srm); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(nproc) CPUs; $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo)"
  echo "software=$(go version | cut -d' ' -f3); $(dpkg-query -W -f='${Package} ${Version}, ' dash busybox bash curl openssh-server strace 2>/dev/null | sed 's/, $//')"
  echo "load average at start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$meta"

# --- build ---------------------------------------------------------------
build() { # NAME PACKAGE
  go test -c -o "$bin/$1.test" "$2" || { say "build of $2 failed"; return 1; }
}
say "building test binaries in $bin"
pkgs=()
want tick && pkgs+=(bench:./bench watchdog:./watchdog)
want reaction && pkgs+=(bench:./bench watchdog:./watchdog)
want client && pkgs+=(runpod:./runpod bench:./bench)
want pod && pkgs+=(bootstrap:./bootstrap jobctl:./internal/jobctl)
want launcher && pkgs+=(bench:./bench jobctl:./internal/jobctl)
declare -A built=()
for p in "${pkgs[@]}"; do
  name=${p%%:*}
  [ -n "${built[$name]:-}" ] && continue
  built[$name]=1
  build "$name" "${p#*:}"
done

# bench NAME PKGDIR PATTERN [ARGS...]: runs one test binary's benchmarks,
# in its package directory as go test would, into $out/NAME.txt.
bench() {
  local name=$1 dir=$2 pattern=$3
  shift 3
  local exe
  exe=$bin/$(basename "$dir").test
  if [ ! -x "$exe" ]; then
    echo "--- FAIL: ${pattern//[\^\$]/}" >"$out/$name.txt"
    echo "    run.sh: no test binary $exe" >>"$out/$name.txt"
    return 1
  fi
  (cd "$dir" && "$exe" -test.v -test.run '^$' -test.bench "$pattern" "$@") >"$out/$name.txt" 2>&1 ||
    say "$name: the benchmark failed (see $out/$name.txt)"
}

pids=()
# --- reaction: long and mostly asleep, so it runs behind the rest --------
if want reaction; then
  say "reaction: 3 runs of the watchdog's BenchmarkReaction and the marker bench, in the background (~2.5 min)"
  for i in 1 2 3; do
    bench "reaction.$i" watchdog '^BenchmarkReaction$' -test.benchtime 1x &
    pids+=($!)
  done
  bench marker bench '^BenchmarkMarkerReaction$' -test.benchtime 1x &
  pids+=($!)
fi

# --- tick ----------------------------------------------------------------
if want tick; then
  say "tick: CPU time and RSS per tick, watchdog and baseline loop, 3 runs each (~1.5 min)"
  tp=()
  for v in dash loop_dash busybox loop_busybox bash loop_bash; do
    bench "tick.$v" bench "^BenchmarkTick\$/^$v\$" -test.count 3 &
    tp+=($!)
  done
  wait "${tp[@]}"
  say "tick: processes per tick under strace, 3 runs each (~1 min)"
  tp=()
  for v in dash busybox bash dash_volume; do
    bench "procs.$v" watchdog "^BenchmarkTickProcesses\$/^$v\$" -test.count 3 &
    tp+=($!)
  done
  bench procs.loop bench '^BenchmarkLoopProcesses$' -test.count 3 &
  tp+=($!)
  wait "${tp[@]}"
fi

# --- client --------------------------------------------------------------
if want client; then
  say "client: GetPod and DeletePod, client vs bare net/http, 10 runs (~40 s)"
  # Ten short invocations rather than -count 10, which would run all of one
  # side before the other: interleaved, both sides see the same load.
  for i in 1 2 3 4 5 6 7 8 9 10; do
    bench "client.$i" runpod '^Benchmark(GetPod|DeletePod)$' -test.benchmem -test.benchtime 0.3s
  done
  say "client: 10,000 pods listed and swept against the fake, 3 runs (~40 s)"
  for i in 1 2 3; do
    bench "list.$i" bench '^BenchmarkListAtScale$' -test.benchtime 1x
  done
fi

# --- pod -----------------------------------------------------------------
if want pod; then
  say "pod: command size, boot to ready, 5 runs; the look's command size"
  bench pod bootstrap '^Benchmark(CommandSize|BootToReady)$' -test.benchtime 1x -test.count 5
  bench pod.look internal/jobctl '^BenchmarkLookCommandSize$' -test.benchtime 1x
fi

if [ ${#pids[@]} -gt 0 ]; then
  say "waiting for the reaction benchmarks"
  wait "${pids[@]}"
fi

# --- launcher: last, since 50 real pods at once load the machine ---------
if want launcher; then
  echo "load average before the launcher part=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$meta"
  if go build -o "$bin/launch" ./examples/launch; then
    export OVERBRAINER_BENCH_LAUNCH=$bin/launch
  else
    say "launcher: build failed"
  fi
  say "launcher: processes per steady look at the job under strace, 3 runs each (~10 s)"
  bench look internal/jobctl '^BenchmarkLookProcesses$' -test.count 3
  say "launcher: run to the first output line, 3 runs of each variant (~1 min)"
  for i in 1 2 3; do
    bench "launcher.first.$i" bench '^BenchmarkLaunchFirstOutput$' -test.benchtime 1x
  done
  say "launcher: 1, 10 and 50 launches at once, real pods (~2 min)"
  bench launcher.concurrent bench '^BenchmarkLaunchConcurrent$' -test.benchtime 1x
  say "launcher: following a job that prints 1 GiB (~1 min)"
  bench launcher.flood bench '^BenchmarkFollowFlood$' -test.benchtime 1x
  say "launcher: a pod lost mid-run and the job running again on a new pod, 3 runs (~3 min)"
  bench launcher.recover bench '^BenchmarkRecoverToRunning$' -test.benchtime 1x -test.count 3
  say "launcher: 200 guarded runs at once from one program under the quota, paced and not (~8 min)"
  bench launcher.quota bench '^BenchmarkLaunchesUnderQuota$' -test.benchtime 1x
fi

{
  echo "load average at end=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "wall time=$(($(date +%s) - started)) s"
  echo "parts=${parts[*]}"
} >>"$meta"

say "summary (raw output in $out)"
report_args=(-in "$out")
[ "$write" = 1 ] && report_args+=(-write "$root/bench/RESULTS.md")
go run ./bench/report "${report_args[@]}"
