package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// listPages is how many pages ListPods reads for the 10,000 pods of
// BenchmarkListAtScale.
const listPages = (10000 + runpod.ListPageSize - 1) / runpod.ListPageSize

// specs are the rows of the summary, in the order of issue 9.
var specs = []Spec{
	// The watchdog's steady-state tick.
	{Part: "tick", Measure: "processes/tick, dash", Bench: "BenchmarkTickProcesses/dash", Unit: "procs/tick",
		Base: "BenchmarkLoopProcesses/dash", Goal: "≤ 2 (issue 19)", Limit: 2},
	{Part: "tick", Measure: "processes/tick, busybox sh", Bench: "BenchmarkTickProcesses/busybox", Unit: "procs/tick",
		Base: "BenchmarkLoopProcesses/busybox"},
	{Part: "tick", Measure: "processes/tick, bash", Bench: "BenchmarkTickProcesses/bash", Unit: "procs/tick",
		Base: "BenchmarkLoopProcesses/bash"},
	{Part: "tick", Measure: "processes/tick, dash, network volume", Bench: "BenchmarkTickProcesses/dash_volume", Unit: "procs/tick",
		Base: "BenchmarkLoopProcesses/dash", Goal: "≤ 2 (issue 27)", Limit: 2},
	{Part: "tick", Measure: "CPU/tick, dash", Bench: "BenchmarkTick/dash", Unit: "cpu-ms/tick",
		Base: "BenchmarkTick/loop_dash", Show: "ms", Goal: "≤ 3× loop (issue 19)", Limit: 3, OnRatio: true},
	{Part: "tick", Measure: "CPU/tick, busybox sh", Bench: "BenchmarkTick/busybox", Unit: "cpu-ms/tick",
		Base: "BenchmarkTick/loop_busybox", Show: "ms"},
	{Part: "tick", Measure: "CPU/tick, bash", Bench: "BenchmarkTick/bash", Unit: "cpu-ms/tick",
		Base: "BenchmarkTick/loop_bash", Show: "ms"},
	{Part: "tick", Measure: "max RSS, dash", Bench: "BenchmarkTick/dash", Unit: "rss-KiB",
		Base: "BenchmarkTick/loop_dash", Show: "KiB"},
	{Part: "tick", Measure: "max RSS, busybox sh", Bench: "BenchmarkTick/busybox", Unit: "rss-KiB",
		Base: "BenchmarkTick/loop_busybox", Show: "KiB"},
	{Part: "tick", Measure: "max RSS, bash", Bench: "BenchmarkTick/bash", Unit: "rss-KiB",
		Base: "BenchmarkTick/loop_bash", Show: "KiB"},

	// Reaction latency with INTERVAL=60.
	{Part: "reaction", Measure: "cost cap due → DELETE", Bench: "BenchmarkReaction/cost_cap_at", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 2 s", Limit: 2},
	{Part: "reaction", Measure: "deadline due → DELETE", Bench: "BenchmarkReaction/deadline", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 2 s", Limit: 2},
	{Part: "reaction", Measure: "boot grace due → DELETE", Bench: "BenchmarkReaction/boot_grace", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 2 s", Limit: 2},
	{Part: "reaction", Measure: "retrieve grace due → DELETE", Bench: "BenchmarkReaction/retrieve_grace", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 2 s", Limit: 2},
	{Part: "reaction", Measure: "snapshot_at due → snapshot.request", Bench: "BenchmarkReaction/snapshot_at", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 2 s", Limit: 2},
	{Part: "reaction", Measure: "deadline − lead → snapshot.request", Bench: "BenchmarkReaction/snapshot_lead", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 2 s", Limit: 2},
	{Part: "reaction", Measure: ".pod/retrieved written → DELETE", Bench: "BenchmarkMarkerReaction/retrieved", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 60 s (INTERVAL)", Limit: 62},
	{Part: "reaction", Measure: "exit_code written → DELETE", Bench: "BenchmarkMarkerReaction/job_end", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 60 s (INTERVAL)", Limit: 62},
	{Part: "reaction", Measure: ".pod/retrieved written and the watchdog woken (the launcher's put) → DELETE", Bench: "BenchmarkMarkerReaction/retrieved_woken", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 2 s", Limit: 2},
	{Part: "reaction", Measure: "exit_code written and the watchdog woken (the launcher's job wrapper) → DELETE", Bench: "BenchmarkMarkerReaction/job_end_woken", Unit: "s/reaction",
		Base: "BenchmarkReaction/interval_only", Show: "s", Goal: "≤ 2 s", Limit: 2},

	// The client against bare net/http.
	{Part: "client", Measure: "GetPod time", Bench: "BenchmarkGetPod/client", Unit: "ns/op",
		Base: "BenchmarkGetPod/bare", Scale: 1e-3, Show: "µs", Goal: "≤ 1.2× bare", Limit: 1.2, OnRatio: true, Paired: true},
	{Part: "client", Measure: "GetPod allocations", Bench: "BenchmarkGetPod/client", Unit: "allocs/op",
		Base: "BenchmarkGetPod/bare", Goal: "≤ 1.3× bare", Limit: 1.3, OnRatio: true, Paired: true},
	{Part: "client", Measure: "GetPod bytes allocated", Bench: "BenchmarkGetPod/client", Unit: "B/op",
		Base: "BenchmarkGetPod/bare", Show: "B", Paired: true},
	{Part: "client", Measure: "DeletePod time", Bench: "BenchmarkDeletePod/client", Unit: "ns/op",
		Base: "BenchmarkDeletePod/bare", Scale: 1e-3, Show: "µs", Goal: "≤ 1.3× bare", Limit: 1.3, OnRatio: true, Paired: true},
	{Part: "client", Measure: "DeletePod allocations", Bench: "BenchmarkDeletePod/client", Unit: "allocs/op",
		Base: "BenchmarkDeletePod/bare", Goal: "≤ 1.3× bare", Limit: 1.3, OnRatio: true, Paired: true},
	{Part: "client", Measure: "DeletePod bytes allocated", Bench: "BenchmarkDeletePod/client", Unit: "B/op",
		Base: "BenchmarkDeletePod/bare", Show: "B", Paired: true},
	{Part: "client", Measure: fmt.Sprintf("10,000 pods, pages of %d: one dry-run sweep (list and judge all)", runpod.ListPageSize), Bench: "BenchmarkListAtScale/sweep", Unit: "wall-s",
		Base: "BenchmarkListAtScale/bare", Show: "s", Goal: "≤ 2 s", Limit: 2},
	{Part: "client", Measure: "· sweep: peak RSS", Bench: "BenchmarkListAtScale/sweep", Unit: "peak-rss-MiB",
		Base: "BenchmarkListAtScale/bare", Show: "MiB", Goal: "≤ 200 MB", Limit: 190},
	{Part: "client", Measure: "· sweep: peak heap", Bench: "BenchmarkListAtScale/sweep", Unit: "peak-heap-MiB",
		Base: "BenchmarkListAtScale/bare", Show: "MiB"},
	{Part: "client", Measure: "· sweep: REST requests (the pods' pages and the secrets' list)", Bench: "BenchmarkListAtScale/sweep", Unit: "requests",
		Base: "BenchmarkListAtScale/bare", Goal: fmt.Sprintf("= pages (%d + 1)", listPages), Limit: listPages + 1},
	{Part: "client", Measure: "· sweep: the lister's CPU", Bench: "BenchmarkListAtScale/sweep", Unit: "cpu-s",
		Base: "BenchmarkListAtScale/bare", Show: "s"},
	{Part: "client", Measure: "· sweep: the fake's CPU (apart)", Bench: "BenchmarkListAtScale/sweep", Unit: "fake-cpu-s",
		Base: "BenchmarkListAtScale/bare", Show: "s"},
	{Part: "client", Measure: "10,000 pods: ListPods, every pod whole", Bench: "BenchmarkListAtScale/listpods", Unit: "wall-s",
		Base: "BenchmarkListAtScale/bare", Show: "s"},
	{Part: "client", Measure: "· ListPods: peak RSS", Bench: "BenchmarkListAtScale/listpods", Unit: "peak-rss-MiB",
		Base: "BenchmarkListAtScale/bare", Show: "MiB"},
	{Part: "client", Measure: "· ListPods: REST requests", Bench: "BenchmarkListAtScale/listpods", Unit: "requests",
		Base: "BenchmarkListAtScale/bare", Goal: fmt.Sprintf("= pages (%d)", listPages), Limit: listPages},

	// The launcher on the local emulator.
	{Part: "launcher", Measure: "run → job's first output line", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "total-s",
		Base: "BenchmarkLaunchFirstOutput/default", BaseUnit: "pod-s", Show: "s"},
	{Part: "launcher", Measure: "SDK share on top of the pod's boot", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "sdk-s",
		Base: "BenchmarkLaunchFirstOutput/default", BaseUnit: "pod-s", Show: "s", Goal: "≤ 0.3 s", Limit: 0.3},
	{Part: "launcher", Measure: "· create: start → create call", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "create-s", Show: "s"},
	{Part: "launcher", Measure: "· provision: create call → pod runs (pod)", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "provision-s", Show: "s"},
	{Part: "launcher", Measure: "· boot: pod runs → watchdog probe (pod)", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "boot-s", Show: "s"},
	{Part: "launcher", Measure: "· launcher sees the pod running (poll)", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "seen-running-s", Show: "s"},
	{Part: "launcher", Measure: "· connect: probe → verdict read over SSH", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "connect-s", Show: "s"},
	{Part: "launcher", Measure: "· upload: → job uploaded", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "upload-s", Show: "s"},
	{Part: "launcher", Measure: "· start: → job started", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "start-s", Show: "s"},
	{Part: "launcher", Measure: "· output: → first output line", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "output-s", Show: "s"},
	{Part: "launcher", Measure: "run → first output line, --poll 200ms", Bench: "BenchmarkLaunchFirstOutput/poll200ms", Unit: "total-s",
		Base: "BenchmarkLaunchFirstOutput/poll200ms", BaseUnit: "pod-s", Show: "s"},
	{Part: "launcher", Measure: "SDK share, --poll 200ms", Bench: "BenchmarkLaunchFirstOutput/poll200ms", Unit: "sdk-s",
		Base: "BenchmarkLaunchFirstOutput/poll200ms", BaseUnit: "pod-s", Show: "s", Goal: "≤ 1 s", Limit: 1},
	{Part: "launcher", Measure: "processes per steady look at the job (follow), dash", Bench: "BenchmarkLookProcesses/dash", Unit: "procs/look",
		Base: "BenchmarkLookProcesses/clock_only_dash"},
	{Part: "launcher", Measure: "processes per steady look, busybox sh", Bench: "BenchmarkLookProcesses/busybox", Unit: "procs/look",
		Base: "BenchmarkLookProcesses/clock_only_busybox"},
	{Part: "launcher", Measure: "processes per steady look, bash", Bench: "BenchmarkLookProcesses/bash", Unit: "procs/look",
		Base: "BenchmarkLookProcesses/clock_only_bash"},
	{Part: "launcher", Measure: "1 launch: throughput", Bench: "BenchmarkLaunchConcurrent/1", Unit: "launches/min", Show: "/min"},
	{Part: "launcher", Measure: "10 at once: throughput", Bench: "BenchmarkLaunchConcurrent/10", Unit: "launches/min",
		Base: "BenchmarkLaunchConcurrent/1", Show: "/min"},
	{Part: "launcher", Measure: "50 at once: throughput", Bench: "BenchmarkLaunchConcurrent/50", Unit: "launches/min",
		Base: "BenchmarkLaunchConcurrent/1", Show: "/min"},
	{Part: "launcher", Measure: "1 launch: duration (run → pod deleted)", Bench: "BenchmarkLaunchConcurrent/1", Unit: "s/launch", Show: "s"},
	{Part: "launcher", Measure: "10 at once: duration of each", Bench: "BenchmarkLaunchConcurrent/10", Unit: "s/launch",
		Base: "BenchmarkLaunchConcurrent/1", Show: "s"},
	{Part: "launcher", Measure: "50 at once: duration of each", Bench: "BenchmarkLaunchConcurrent/50", Unit: "s/launch",
		Base: "BenchmarkLaunchConcurrent/1", Show: "s"},
	{Part: "launcher", Measure: "10 at once: launches that failed", Bench: "BenchmarkLaunchConcurrent/10", Unit: "failed-launches",
		Goal: "none", Limit: 0.5},
	{Part: "launcher", Measure: "50 at once: launches that failed", Bench: "BenchmarkLaunchConcurrent/50", Unit: "failed-launches",
		Goal: "none", Limit: 0.5},
	{Part: "launcher", Measure: "1 launch: API requests (account key)", Bench: "BenchmarkLaunchConcurrent/1", Unit: "requests/launch"},
	{Part: "launcher", Measure: "10 at once: API requests per launch", Bench: "BenchmarkLaunchConcurrent/10", Unit: "requests/launch",
		Base: "BenchmarkLaunchConcurrent/1"},
	{Part: "launcher", Measure: "50 at once: API requests per launch", Bench: "BenchmarkLaunchConcurrent/50", Unit: "requests/launch",
		Base: "BenchmarkLaunchConcurrent/1"},
	{Part: "launcher", Measure: "200 runs at once from one program, Runpod-like quota: account requests per run", Bench: "BenchmarkLaunchesUnderQuota/200", Unit: "requests/run",
		Base: "BenchmarkLaunchesUnderQuota/1", Goal: "≤ 1.1× alone", Limit: 1.1, OnRatio: true},
	{Part: "launcher", Measure: "200 runs at once, quota: launches that failed (launch or start)", Bench: "BenchmarkLaunchesUnderQuota/200", Unit: "failed-launches",
		Goal: "none", Limit: 0.5},
	{Part: "launcher", Measure: "200 runs at once, quota: runs that failed at any step (step and reason under \"Runs that failed\")", Bench: "BenchmarkLaunchesUnderQuota/200", Unit: "failed-runs",
		Goal: "none (issue 42)", Limit: 0.5},
	{Part: "launcher", Measure: "200 runs at once, quota: 429s per run", Bench: "BenchmarkLaunchesUnderQuota/200", Unit: "429s/run"},
	{Part: "launcher", Measure: "200 runs at once, quota, pacing off: account requests per run", Bench: "BenchmarkLaunchesUnderQuota/200-unpaced", Unit: "requests/run",
		Base: "BenchmarkLaunchesUnderQuota/1"},
	{Part: "launcher", Measure: "200 runs at once, quota, pacing off: launches that failed", Bench: "BenchmarkLaunchesUnderQuota/200-unpaced", Unit: "failed-launches"},
	{Part: "launcher", Measure: "following 1 GiB of job output: peak RSS", Bench: "BenchmarkFollowFlood/flood", Unit: "rss-MiB",
		Base: "BenchmarkFollowFlood/one_line", Goal: "< 100 MB", Limit: 95},
	{Part: "launcher", Measure: "following 1 GiB of job output: lines lost", Bench: "BenchmarkFollowFlood/flood", Unit: "lines-lost",
		Goal: "none", Limit: 0.5},
	{Part: "launcher", Measure: "following 1 GiB of job output: rate", Bench: "BenchmarkFollowFlood/flood", Unit: "MiB/s"},
	{Part: "launcher", Measure: "50 at once: pods' own requests per launch", Bench: "BenchmarkLaunchConcurrent/50", Unit: "pod-requests/launch",
		Base: "BenchmarkLaunchConcurrent/1"},
	{Part: "launcher", Measure: "pod lost → job running again on a new pod (--recover)", Bench: "BenchmarkRecoverToRunning", Unit: "recover-s",
		Base: "BenchmarkRecoverToRunning", BaseUnit: "fresh-s", Show: "s", Paired: true,
		Goal: "≤ 1.2× a fresh launch (issue 28)", Limit: 1.2, OnRatio: true},

	// The pod's command and boot.
	{Part: "pod", Measure: "pod command (entrypoint and cmd)", Bench: "BenchmarkCommandSize", Unit: "cmd-bytes",
		Base: "BenchmarkCommandSize", BaseUnit: "watchdog-bytes", Show: "B", Goal: fmt.Sprintf("≤ %d B", bootstrap.MaxCommandBytes), Limit: bootstrap.MaxCommandBytes},
	{Part: "pod", Measure: "pod command, JSON-encoded in the create body", Bench: "BenchmarkCommandSize", Unit: "json-bytes",
		Base: "BenchmarkCommandSize", BaseUnit: "watchdog-bytes", Show: "B"},
	{Part: "pod", Measure: "create body of a default launch", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "body-bytes",
		Show: "B", Goal: "≤ 32 KiB (issue 42)", Limit: 32 << 10},
	{Part: "pod", Measure: "· its margin to Runpod's 102,400-byte limit", Bench: "BenchmarkLaunchFirstOutput/default", Unit: "body-margin-bytes",
		Show: "B"},
	{Part: "pod", Measure: "command that opens a look at the job (watch.sh)", Bench: "BenchmarkLookCommandSize", Unit: "cmd-bytes",
		Base: "BenchmarkLookCommandSize", BaseUnit: "script-bytes", Show: "B", Goal: "≤ 2 KB (issue 42)", Limit: 2048},
	{Part: "pod", Measure: "· sent once per pod, in its first look's session (watch.sh packed)", Bench: "BenchmarkLookCommandSize", Unit: "first-bytes",
		Base: "BenchmarkLookCommandSize", BaseUnit: "script-bytes", Show: "B"},
	{Part: "pod", Measure: "boot: start → sshd listening", Bench: "BenchmarkBootToReady/bootstrap", Unit: "s/sshd",
		Base: "BenchmarkBootToReady/baseline", Show: "s"},
	{Part: "pod", Measure: "boot: start → verdict ready", Bench: "BenchmarkBootToReady/bootstrap", Unit: "s/ready",
		Base: "BenchmarkBootToReady/baseline", Show: "s"},
	{Part: "pod", Measure: "boot: start → first SSH command", Bench: "BenchmarkBootToReady/bootstrap", Unit: "s/login",
		Base: "BenchmarkBootToReady/baseline", Show: "s"},
}

// notes explain, per part, what was measured and against what.
var notes = []struct{ part, text string }{
	{"tick", `A steady-state tick: a running job, the deadline a day away, df of the run
directory, INTERVAL=1 (the tick's work does not depend on INTERVAL). Processes per
tick come from the watchdog package's BenchmarkTickProcesses (strace -f: process
creations between consecutive sleeps, over one cycle of the watchdog's periodic
work: date every 10 ticks, df every 5 on a disk under 87% full; with a network
volume, a real du of an empty one as often instead of df); the baseline, an empty
` + "`while :; do sleep \"$INTERVAL\"; done`" + ` loop under the same shell, is counted
the same way by bench's BenchmarkLoopProcesses. CPU per tick (bench's BenchmarkTick)
is the CPU time of the shell and everything it started, from a cgroup v2 group
(µs resolution; /proc/PID/stat with 10 ms ticks where no cgroup v2 is writable),
over 20 ticks (two such cycles) after the first two, for the watchdog and for the
loop; its goal is a ratio to the loop of the same run. Max RSS is the
shell's own VmHWM. The goals are stated for dash; busybox sh and bash are shown
for information.`},
	{"reaction", `Real clock, real curl, the default INTERVAL of 60 s. Time rules come from the
watchdog package's BenchmarkReaction: the due time is set 4 s after the watchdog's
start, and interval_only (the same script with its due-time wakeup removed, i.e.
the seed's design of one look per INTERVAL) is the baseline. Markers come from
bench's BenchmarkMarkerReaction: six watchdogs per marker at once, each marker
written at a random moment of the watchdog's pause; a marker is seen at the next
tick, so its reaction is spread over 0–60 s by design (median ~30 s expected).
For job_end the retrieve grace is 0, so only the detection is measured. The
_woken rows run watchdog.WakeCommand() right after the write, as the launcher does
(its put after .pod/retrieved, its job wrapper after exit_code): the watchdog's
pause ends at once.`},
	{"client", `go test -bench -benchmem, 10 interleaved runs of 0.3 s: GetPod and DeletePod through runpod.Client
against the same request written on bare net/http (same headers, body read, status
checked, the same JSON decoded into runpod.Pod for GetPod), both against one
httptest server in a child process, so that allocations count the client side
only. Each side has its own keep-alive transport with the same settings. The ratio
is the median of the ten per-invocation ratios (client and bare measured seconds
apart), which cancels the load drifting between invocations; the medians shown are
over all ten. Lists at scale: bench's BenchmarkListAtScale, 3 runs, against
runpodtest's fake in a child process (so that the lister's memory and CPU are its own; the fake's CPU is
shown apart) seeded with 10,000 pods that look like a launcher's (the real pod command, the
real env, a host-key secret each, statuses and times for every rule), pages of runpod.ListPageSize: one dry-run
sweep.Once, which lists and judges every pod and secret, and ListPods keeping every pod whole, against bare
net/http fetching the same pages and decoding them into runpod.Pod. Wall time from the call to its return;
peak heap sampled every millisecond (runtime/metrics); peak RSS the kernel's high-water mark, reset at the
start; requests the REST ones, GraphQL apart.`},
	{"launcher", `The built launcher (examples/launch) runs ` + "`launch run --cmd 'DEMO_STEPS=1 sh train.sh'`" + `
(the demo job, one step) against runpodtest's fake Runpod with its pod runner, which
really boots each pod (the real bootstrap, sshd and watchdog in private namespaces):
the local emulator. The phases come from the launcher's output lines, stamped as
they arrive, and from the fake's request log: the create call, the pod's start
(RUNNING) and its watchdog's first probe. The pod's share (provision + boot) is the
baseline; the SDK share is the rest of the time to the first output line. "defaults"
uses the launcher's defaults (it polls every 2 s); "--poll 200ms" shows how much of
the share is polling. Concurrency: N launchers started at once, each with its own
run and state directory, against one fake with real pods (not API-only), each timed
to its "cost:" line (pod deleted, secret deleted); throughput is the successful
launches over the wall time from the first start to the last end, so one straggler
weighs on it; requests are the account key's
calls per launch, the pods' own (watchdog) calls apart. 50 real pods at once load a
2-core machine far beyond its cores, which the durations show. Processes per look:
while it follows a job the launcher polls it through watch.sh, one long-lived shell
per SSH connection; internal/jobctl's BenchmarkLookProcesses counts under strace the
processes a steady look starts (a live job, no new output, no lease to renew), as
the difference between a session of one look and one of six; the baseline is a
loop that answers each request with the pod's clock alone (` + "`date +%s`" + `), the
least a look can do. Quota: bench's BenchmarkLaunchesUnderQuota runs 200 whole guarded cycles
(launch, start, follow, collect, delete) at once on emulator pods from one program (one client, one account
key) against the fake's quota mode, 60 requests per window with RateLimit headers, the window shortened from
Runpod's minute to 10 s so that the crowd meets the quota as often in less time; the baseline is one cycle
alone under the same quota. A failed run is counted (and its pod deleted), not fatal: as a failed launch when
its launch or start failed, and among the failed runs whatever its step; the crowd runs again
with the client's pacing off, to show what the pacing saves.`},
	{"pod", `The command size is the create call's start command, sent as entrypoint and
cmd (bootstrap.Entrypoint() and bootstrap.Cmd()): its words together, and the two
JSON-encoded as members of the create body (which Runpod refuses past 102,400
bytes); the baseline is the watchdog script alone as the watchdog
package embeds it, comments included (the command carries the scripts without their
comment lines, packed with gzip and base64). The create body is the one the
launcher's default run (BenchmarkLaunchFirstOutput/default) sends, as the fake
received it. The look's command is what the client sends to open a session of
watch.sh (internal/jobctl's BenchmarkLookCommandSize): a few lines that run the
copy of watch.sh the pod keeps on its disk, named by its hash; only a pod's first
session asks for the script, which the client then sends packed on the session's
input (shown apart); the baseline is watch.sh and its helpers with their comments.
Each look then sends one request line. The boot runs the
real command (bash -c) in a private mount and PID namespace with the real sshd,
against a fake API, and times unshare's start to the bootstrap's "sshd listening",
the ready verdict, and a first command over SSH with the client key. The baseline
does the least a pod must do to get there in the same namespace: decode the host
key, start the same sshd, probe the API once with curl, write the verdict.`},
}

// writeMarkdown writes RESULTS.md.
func writeMarkdown(w io.Writer, meta Meta, rows []Row, res *Results, raw []string) {
	fmt.Fprintln(w, "# Benchmark results")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Generated by `bench/report` from one run of `bench/run.sh`; do not edit by hand.")
	fmt.Fprintln(w, "Medians of the runs, their spread as min–max with the number of runs (n), and")
	fmt.Fprintln(w, "each measure's ratio to a baseline measured in the same run. See bench/README.md.")
	fmt.Fprintln(w)
	for _, k := range meta.Keys {
		fmt.Fprintf(w, "- **%s**: %s\n", k, mdInline(meta.Values[k]))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Summary")
	fmt.Fprintln(w)
	markdownTable(w, rows)
	fmt.Fprintln(w)
	var missed []string
	for _, r := range rows {
		if r.Verdict == "MISSED" {
			got := r.cells()[3]
			if r.OnRatio {
				got = r.cells()[6]
			}
			m := fmt.Sprintf("%s (%s: %s", r.Measure, r.Goal, got)
			// An absolute goal missed is read against what the baseline
			// cost on the same machine in the same run: a machine that
			// starts processes slowly misses a CPU goal by its baseline.
			if c := r.cells(); !r.OnRatio && r.Ratio != 0 {
				m += fmt.Sprintf("; its baseline %s here, ratio %s", c[5], c[6])
			}
			missed = append(missed, m+")")
		}
	}
	if len(missed) > 0 {
		fmt.Fprintln(w, "Goals missed in this run: "+strings.Join(missed, "; ")+".")
		fmt.Fprintln(w)
	}
	writeFailed(w, res)
	fmt.Fprintln(w, "## How each part was measured")
	fmt.Fprintln(w)
	ran := map[string]bool{}
	for _, r := range rows {
		ran[r.Part] = true
	}
	for _, n := range notes {
		if !ran[n.part] {
			continue
		}
		fmt.Fprintf(w, "**%s.** %s\n\n", n.part, strings.ReplaceAll(n.text, "\n", " "))
	}
	fmt.Fprintln(w, "## Raw benchmark lines")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "```")
	for _, l := range raw {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "```")
}

// writeFailed lists the runs that failed, as each benchmark logged them:
// how many at each step, and the step and reason of each (the first ten).
func writeFailed(w io.Writer, res *Results) {
	if len(res.Failed) == 0 {
		return
	}
	fmt.Fprintln(w, "## Runs that failed")
	fmt.Fprintln(w)
	for _, name := range slices.Sorted(maps.Keys(res.Failed)) {
		failed := res.Failed[name]
		steps := map[string]int{}
		for _, f := range failed {
			step, _, _ := strings.Cut(f, ": ")
			steps[step]++
		}
		var at []string
		for _, step := range slices.Sorted(maps.Keys(steps)) {
			at = append(at, fmt.Sprintf("%d at %s", steps[step], step))
		}
		fmt.Fprintf(w, "**%s**: %d failed (%s).\n\n", procsSuffix.ReplaceAllString(name, ""), len(failed), strings.Join(at, ", "))
		for i, f := range failed {
			if i == 10 {
				fmt.Fprintf(w, "- and %d more\n", len(failed)-i)
				break
			}
			fmt.Fprintf(w, "- at %s\n", mdInline(f))
		}
		fmt.Fprintln(w)
	}
}

func mdInline(s string) string {
	if strings.ContainsAny(s, "*`<>|") {
		return "`" + strings.ReplaceAll(s, "`", "'") + "`"
	}
	return s
}
