// Package bench holds the project's performance benchmarks that belong to no
// single package: the watchdog's CPU time and memory per steady-state tick,
// its reaction to the marker files, the launcher end to end, guarded runs
// by the hundred under Runpod's quota, and a large account listed and
// swept. They run
// with `go test -bench` like any other, quickly by default (a smoke test);
// bench/run.sh sets OVERBRAINER_BENCH_FULL=1 for the real measurement and
// turns the output of these and of the other packages' benchmarks into the
// summary table and RESULTS.md. See README.md in this directory.
package bench
