package chaos_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The steps of a launch, in order, and the faults of the matrix.
var (
	matrixSteps  = []string{"secret", "create", "boot", "verdict", "upload", "job_start", "follow", "retrieve", "delete"}
	matrixFaults = []string{"kill", "5xx", "429", "hang", "drop"}
)

// ruleClient is the "rule" of a cell whose launcher survives: it deletes
// the pod itself, and its bound is its own exit.
const ruleClient = "client"

// ruleNoPod is the rule of a cell that ends before any pod exists.
const ruleNoPod = "no_pod"

// killRule is the watchdog rule that must delete the pod of a launcher
// killed at a step.
var killRule = map[string]string{
	"secret":    ruleNoPod,
	"create":    string(watchdog.DeleteNeverStarted),
	"boot":      string(watchdog.DeleteNeverStarted),
	"verdict":   string(watchdog.DeleteNeverStarted),
	"upload":    string(watchdog.DeleteNeverStarted),
	"job_start": string(watchdog.DeleteDeadline),
	"follow":    string(watchdog.DeleteCostCap),
	"retrieve":  string(watchdog.DeleteAbandoned),
	"delete":    string(watchdog.DeleteRetrieved),
}

// The knobs of every matrix run: a 1 s watchdog tick and lease, a snapshot
// lead and wait of 2 s. The graces are long, so that a slow step on a
// loaded machine does not lose the pod, except in the cell whose rule they
// are: short there, to keep the cell short.
const (
	longGrace     = 2 * time.Minute
	bootGrace     = 20 * time.Second
	retrieveGrace = 4 * time.Second
	leaseTTL      = 3 * time.Second
	snapshotWait  = 2 * time.Second
	// jobStartDeadline is the deadline of the job_start kill cell, and
	// followCap the time to the cost cap of the follow kill cell: late
	// enough for the pod to boot on a loaded machine.
	jobStartDeadline = 60 * time.Second
	followCap        = 30 * time.Second
	// bigFile makes the upload and the download take long enough to be
	// killed in the middle (an SSH transfer of this many bytes).
	bigFile = 32 << 20
	// podPrice is the fake's price of the launcher's default GPU.
	podPrice = 0.69
)

// matrixParallel bounds the cells running at once. Each is a real pod
// that mostly waits (a grace, a client timeout), but its boot, transfers and
// 1 s watchdog ticks start many processes: on a 2-core machine where a
// process start costs ~4 ms, 32 cells at once starved the pods (bounds missed
// by 8 s, kills landing past their step) and 16 took no longer in all.
const matrixParallel = 16

// mutantOf is the mutant that removes what the cell's test relies on, ""
// for a cell that has no pod. A killed launcher leaves its pod to the
// watchdog rule of its step. A launcher that survives deletes its pod
// itself, but it first writes the retrieved marker and wakes the watchdog,
// whose retrieved rule may win the race (or delete the pod while the
// launcher's own delete fails and retries): the cell accepts either (see
// checkDeleted), so its mutant lacks both.
func mutantOf(step, fault string) string {
	if fault != "kill" {
		return ruleClient + "+" + string(watchdog.DeleteRetrieved)
	}
	if r := killRule[step]; r != ruleNoPod {
		return r
	}
	return ""
}

// cell is one run of the matrix and what came of it.
type cell struct {
	step, fault string
	mutant      string // what the cell's launcher lacks, if anything (see mutantOf)

	rule      string        // the rule that must delete the pod
	got       string        // who deleted it: a watchdog rule or ruleClient
	pastBound time.Duration // when the pod ended relative to its bound
	usdPast   float64       // billed past the bound
	faults    int           // fault answers the API served
	exit      int           // the launcher's exit code (-1: killed)
	leftPods  int
	err       string // why the cell failed, if it did
	// secretsLeft counts the run's secrets that rm --all-orphans left.
	secretsLeft int
	// tries counts the runs of a kill cell (see killTries).
	tries int
	// bill is what the fake billed the cell's pods, bound the worst case
	// the launcher printed before its create (checkBill).
	bill, bound float64
}

// killTries bounds the runs of a kill cell whose kill landed past its step.
const killTries = 3

// slowFirst orders cells for the matrix's workers, the slowest first, so
// that the matrix ends with its short cells: those of the create step
// (its lost or hung answer costs the client's timeout, some two minutes),
// then the hangs (a client timeout each), then the kills (a watchdog
// rule's grace), then the rest; mutants after the cells they mutate.
func slowFirst(cells []*cell) []*cell {
	rank := func(c *cell) int {
		switch {
		case c.step == "create" && (c.fault == "hang" || c.fault == "drop"):
			return 0
		case c.fault == "hang":
			return 1
		case c.fault == "kill":
			return 2
		}
		return 3
	}
	out := slices.Clone(cells)
	slices.SortStableFunc(out, func(a, b *cell) int { return cmp.Compare(rank(a), rank(b)) })
	return out
}

func (c *cell) name() string {
	if c.mutant != "" {
		return c.step + "/" + c.fault + "/without_" + c.mutant
	}
	return c.step + "/" + c.fault
}

// TestChaosFaultMatrix runs a launch for every step and fault of the
// matrix, the secrets sampler watching all along, and prints the matrix.
func TestChaosFaultMatrix(t *testing.T) {
	needPods(t)
	// Every launcher, the mutants' too, is built before any cell starts:
	// builds running while the first pods boot starved them on a 2-core
	// machine (their watchdogs' first API probes timed out, so the
	// launchers deleted the pods as unreachable).
	built := time.Now()
	launcherBinary(t, "")
	for _, step := range matrixSteps {
		for _, fault := range matrixFaults {
			if m := mutantOf(step, fault); m != "" {
				launcherBinary(t, m)
			}
		}
	}
	t.Logf("launchers built in %s", time.Since(built).Round(time.Second))
	// The builds above ran in the suite's serial part; the cells share
	// the machine with the other tests' pods, a pod slot each.
	t.Parallel()
	sec := newSecretSet()
	stop := make(chan struct{})
	sampled := sec.sampleProcsUntil(stop)
	if os.Getenv("CHAOS_NOSAMPLE") != "" {
		close(stop)
		stop = make(chan struct{})
	}

	// Every cell, then each cell again without what it relies on (a
	// mutant: it must fail). The matrix prints them in this order.
	var cells []*cell
	for _, mutants := range []bool{false, true} {
		for _, step := range matrixSteps {
			for _, fault := range matrixFaults {
				c := &cell{step: step, fault: fault}
				if mutants {
					if c.mutant = mutantOf(step, fault); c.mutant == "" {
						continue
					}
				}
				cells = append(cells, c)
			}
		}
	}
	t.Run("cells", func(t *testing.T) {
		// matrixParallel workers take the cells in order, each cell
		// holding a pod slot. They call t.Run themselves, rather than
		// leave the order to t.Parallel: released parallel subtests start
		// in no set order, and a two-minute cell started last ran the
		// matrix a minute and a half past its share of the work.
		queue := make(chan *cell, len(cells))
		for _, c := range slowFirst(cells) {
			queue <- c
		}
		close(queue)
		var wg sync.WaitGroup
		for range matrixParallel {
			wg.Go(func() {
				for c := range queue {
					t.Run(c.name(), func(t *testing.T) {
						holdPodSlot(t)
						began := time.Now()
						for c.tries = 1; runCell(t, c, sec); c.tries++ {
						}
						t.Logf("cell took %s", time.Since(began).Round(time.Second))
					})
				}
			})
		}
		wg.Wait()
	})
	close(stop)
	<-sampled
	printMatrix(t, cells)
	hits, total := sec.hitList()
	for _, h := range hits {
		t.Errorf("secret found: %s", h)
	}
	record(t, "secrets", "samples checked during the matrix (process command lines and environments, files, logs, errors)", "%d", sec.samples.Load())
	record(t, "secrets", "hits during the matrix", "%d", total)
}

// printMatrix logs the matrix and records its figures.
func printMatrix(t *testing.T, cells []*cell) {
	var b strings.Builder
	fmt.Fprintf(&b, "fault matrix (rule that deleted the pod, its time past the bound; ! = failed)\n%-10s", "step")
	for _, f := range matrixFaults {
		fmt.Fprintf(&b, " %-28s", f)
	}
	b.WriteString("\n")
	byName := map[string]*cell{}
	for _, c := range cells {
		byName[c.name()] = c
	}
	tried, left, secretsLeft := 0, 0, 0
	var worst time.Duration
	worstCell := "-"
	usd := 0.0
	for _, step := range matrixSteps {
		fmt.Fprintf(&b, "%-10s", step)
		for _, f := range matrixFaults {
			c := byName[step+"/"+f]
			fmt.Fprintf(&b, " %-28s", c.summary())
			if c.got == "" && c.err == "" {
				continue // not run (filtered out)
			}
			tried++
			left += c.leftPods
			secretsLeft += c.secretsLeft
			if c.pastBound > worst || worstCell == "-" {
				worst, worstCell = c.pastBound, c.name()
			}
			usd += c.usdPast
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "(!secret: rm --all-orphans left the run's secret)\n\n"+
		"without its rule (the cell run again by a launcher built without what it relies on; kept = the pod outlived\n"+
		"the cell's bound + slack, so the cell fails without it; ! = deleted anyway; client = the launcher's own delete)\n%-10s", "step")
	for _, f := range matrixFaults {
		fmt.Fprintf(&b, " %-28s", f)
	}
	b.WriteString("\n")
	mutants, kept := 0, 0
	for _, step := range matrixSteps {
		fmt.Fprintf(&b, "%-10s", step)
		for _, f := range matrixFaults {
			m := mutantOf(step, f)
			if m == "" {
				fmt.Fprintf(&b, " %-28s", "n/a: no pod")
				continue
			}
			c := byName[step+"/"+f+"/without_"+m]
			fmt.Fprintf(&b, " %-28s", c.summary())
			if c == nil || c.got == "" && c.err == "" {
				continue
			}
			mutants++
			left += c.leftPods
			secretsLeft += c.secretsLeft
			if c.got == "kept" && c.err == "" {
				kept++
			}
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())
	record(t, "fault matrix", "cells tried", "%d", tried)
	record(t, "fault matrix", "pods left running", "%d", left)
	record(t, "fault matrix", "worst delay past the bound", "%s (%s)", seconds(max(worst, 0)), worstCell)
	record(t, "fault matrix", "dollars billed past the bound", "$%.6f", usd)
	ratio, ratioCell, pastWorst := billRatios(cells)
	record(t, "fault matrix", "largest bill / worst case printed before the create", "%.4f (%s); cells billed past it: %d (must be 0)", ratio, ratioCell, pastWorst)
	record(t, "fault matrix", "secrets left after rm --all-orphans", "%d", secretsLeft)
	record(t, "fault matrix", "cells run without their rule", "%d of %d kept their pod past the bound (so each cell fails without its rule)", kept, mutants)
}

func (c *cell) summary() string {
	var s string
	switch {
	case c == nil:
		return "-"
	case c.err != "":
		s = "! " + c.got + " " + firstLine(c.err)
	case c.got == "":
		return "-"
	case c.mutant != "" && c.got == "kept":
		s = "w/o " + c.mutant + ": kept"
	default:
		s = fmt.Sprintf("%s %+.1fs", c.got, c.pastBound.Seconds())
	}
	if c.secretsLeft > 0 {
		s += " !secret"
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// env is one cell's world: a fake Runpod with the pod runner, a network
// volume (the run directory lives there, so the watchdog's log outlives
// the pod), a state directory, an HF token.
type env struct {
	t        *testing.T
	c        *cell
	sec      *secretSet
	srv      *runpodtest.Server
	vol      runpodtest.NetworkVolume
	stateDir string
	hf       string
	bin      string
	job      string // a job directory with a big file, for upload and retrieve cells
	// bootGrace and retrieveGrace are the watchdog's graces in this cell.
	bootGrace, retrieveGrace time.Duration
}

func (e *env) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNPOD_") && !strings.HasPrefix(kv, "OVERBRAINER_") {
			out = append(out, kv)
		}
	}
	return append(out, "RUNPOD_API_KEY="+e.srv.APIKey(), "CHAOS_HF="+e.hf)
}

func (e *env) global() []string {
	return []string{"--state-dir", e.stateDir, "--api-url", e.srv.BaseURL()}
}

// runArgs are the cell's `launch run` flags.
func (e *env) runArgs() []string {
	args := append([]string{"run"}, e.global()...)
	args = append(args,
		"--network-volume", e.vol.ID, "--volume-path", "/workspace",
		"--poll", "1s", "--lease-every", "1s", "--lease-ttl", dur(leaseTTL), "--watchdog-interval", "1s",
		"--probe-wait", "1s", "--snapshot-lead", "2s", "--snapshot-wait", dur(snapshotWait),
		"--start-timeout", "3m", "--verdict-timeout", "3m",
		"--boot-grace", dur(e.bootGrace), "--retrieve-grace", dur(e.retrieveGrace),
		"--hf-token-env", "CHAOS_HF", "--pod-env", "OVERBRAINER_CURL_TIMEOUT=3",
	)
	hours := func(d time.Duration) string { return strconv.FormatFloat(d.Hours(), 'f', -1, 64) }
	switch {
	case e.c.fault == "kill" && e.c.step == "job_start":
		return append(args, "--max-hours", hours(jobStartDeadline), "--job", e.job, "--cmd", "sh stubborn.sh")
	case e.c.fault == "kill" && e.c.step == "follow":
		usd := podPrice * followCap.Hours()
		return append(args, "--max-hours", "1", "--max-cost-usd", strconv.FormatFloat(usd, 'f', -1, 64),
			"--job", e.job, "--cmd", "sh stubborn.sh")
	case e.c.step == "upload" || e.c.step == "retrieve":
		return append(args, "--max-hours", "1", "--job", e.job, "--cmd", "sh job.sh")
	}
	return append(args, "--max-hours", "1", "--cmd", "DEMO_STEPS=3 sh train.sh")
}

func dur(d time.Duration) string { return strconv.Itoa(int(math.Ceil(d.Seconds()))) + "s" }

// stubbornJob writes a job that runs until killed and ignores snapshot
// requests: only the rule under test can end its pod (a job that obeyed the
// snapshot would end, and the retrieve grace would delete the pod too).
func stubbornJob(t *testing.T) string {
	dir := t.TempDir()
	script := "i=0\nwhile :; do i=$((i + 1)); echo \"step $i/\"; sleep 1; done\n"
	if err := os.WriteFile(filepath.Join(dir, "stubborn.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bigJob writes a job whose directory and outputs hold a big file.
func bigJob(t *testing.T) string {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "blob"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(bigFile); err != nil {
		t.Fatal(err)
	}
	f.Close()
	script := fmt.Sprintf("head -c %d /dev/zero > \"$OVERBRAINER_OUTPUTS/blob\"\necho done\n", bigFile)
	if err := os.WriteFile(filepath.Join(dir, "job.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// faultFor is the cell's fault as runpodtest injects it: twice for a
// status or a dropped connection (the client's retries get through), once
// for a hang (the client waits for its timeout).
func faultFor(kind string) runpodtest.Fault {
	switch kind {
	case "5xx":
		return runpodtest.Fault{Times: 2, Status: 503}
	case "429":
		return runpodtest.Fault{Times: 2, Status: 429, RetryAfter: "1"}
	case "hang":
		return runpodtest.Fault{Times: 1, Hang: true}
	case "drop":
		return runpodtest.Fault{Times: 2, Drop: true}
	}
	panic("unknown fault " + kind)
}

// apiPatterns are every API path a launch calls.
var apiPatterns = []string{"/v2/account/secrets", "/v2/account/secrets/*", "/v2/pods", "/v2/pods/*", "/v2/pods/*/action", "/v2/network-volumes/*"}

// stepMarkers are what the launcher writes when it enters each step after
// the pod's create (the create itself is seen in the fake's request log).
var stepMarkers = map[string]string{
	"boot":      ") created: ",
	"verdict":   "; SSH at ",
	"upload":    "watchdog verdict: ",
	"job_start": "uploaded ",
	"follow":    "job started",
	"retrieve":  "job ended",
	"delete":    "results downloaded to ",
}

// ruleLeft is what the launcher says once a kill cell's rule no longer
// applies: the job started (never_started), ended (cost_cap), or its
// results were downloaded (abandoned). A kill after it tested another rule.
var ruleLeft = map[string]string{
	string(watchdog.DeleteNeverStarted): "job started",
	string(watchdog.DeleteCostCap):      "job ended",
	string(watchdog.DeleteAbandoned):    "results downloaded to ",
}

// nextMarker is what the launcher writes when it leaves each step.
var nextMarker = map[string]string{
	"boot": "; SSH at ", "verdict": "watchdog verdict: ", "upload": "uploaded ",
	"job_start": "job started", "follow": "job ended", "retrieve": "results downloaded to ",
}

// runCell runs c once; again says a kill cell's kill landed past its step,
// and it should run again.
func runCell(t *testing.T, c *cell, sec *secretSet) (again bool) {
	e := &env{t: t, c: c, sec: sec, stateDir: filepath.Join(t.TempDir(), "state"),
		hf: fmt.Sprintf("hf_chaos%dToken%x", time.Now().UnixNano(), os.Getpid())}
	e.bin = launcherBinary(t, c.mutant)
	opts := []runpodtest.Option{runpodtest.WithPodRunner()}
	if c.mutant != "" {
		// The mutant's pod outlives its bound on purpose; the test
		// deletes it below.
		opts = append(opts, runpodtest.AllowPodsLeft())
	}
	e.srv = checkedfake.NewTestServer(t, opts...)
	e.vol = e.srv.AddNetworkVolume("", 20)
	switch {
	case c.step == "upload" || c.step == "retrieve":
		e.job = bigJob(t)
	case c.fault == "kill" && (c.step == "job_start" || c.step == "follow"):
		e.job = stubbornJob(t)
	}
	sec.add(kindAccount, e.srv.APIKey())
	sec.add(kindHF, e.hf)
	c.rule = ruleClient
	if c.fault == "kill" {
		c.rule = killRule[c.step]
	}
	e.bootGrace, e.retrieveGrace = longGrace, longGrace
	switch c.rule {
	case string(watchdog.DeleteNeverStarted):
		e.bootGrace = bootGrace
	case string(watchdog.DeleteAbandoned):
		e.retrieveGrace = retrieveGrace
	}
	defer func() {
		if t.Failed() && c.err == "" && c.secretsLeft == 0 {
			c.err = "failed"
		}
	}()

	// Faults the launcher meets on its first call of a kind.
	if c.fault != "kill" {
		f := faultFor(c.fault)
		switch c.step {
		case "secret":
			e.srv.Fail("POST", "/v2/account/secrets", f)
		case "create":
			e.srv.Fail("POST", "/v2/pods", f)
		case "boot":
			f.Caller = runpodtest.CallerAccount
			e.srv.Fail("GET", "/v2/pods/*", f)
		case "delete":
			f.Caller = runpodtest.CallerAccount
			e.srv.Fail("DELETE", "/v2/pods/*", f)
		}
	} else if c.step == "delete" {
		// Hold the launcher in its delete call, to kill it there.
		e.srv.Fail("DELETE", "/v2/pods/*", runpodtest.Fault{Times: 1, Hang: true, Caller: runpodtest.CallerAccount})
	} else if c.step == "secret" {
		// Hold it in the secret's create call.
		e.srv.Fail("POST", "/v2/account/secrets", runpodtest.Fault{Times: 1, Hang: true})
	}

	began := time.Now()
	l := startLauncher(t, e.bin, e.environ(), e.runArgs()...)
	watchPods := make(chan struct{})
	go e.watchPods(watchPods)
	defer close(watchPods)

	var killedAt time.Time
	switch {
	case c.fault == "kill":
		if c.step == "verdict" {
			// Hold the watchdog's probe (until its curl times out) so
			// that the launcher waits for the verdict long enough to be
			// killed there: it reads a prompt verdict within a quarter
			// of a second and would be past the step.
			var id string
			if !l.waitFor(func() bool { id = e.podID(); return id != "" }) {
				t.Fatalf("no pod (%s)", l.state())
			}
			e.srv.Fail("GET", "/v2/pods/*", runpodtest.Fault{Times: 1, Hang: true, Caller: id})
		}
		if !l.waitFor(e.killTrigger(l)) {
			c.err = "the launcher never reached the step"
			t.Fatalf("the launcher never reached step %s (%s)", c.step, l.state())
		}
		l.kill()
		killedAt = time.Now()
		c.exit = -1
		if left := ruleLeft[c.rule]; left != "" && l.says(left)() {
			if c.tries < killTries {
				// The launcher outran the kill: a loaded machine
				// delays this test's look more than the launcher's
				// step. The pod no longer tests the cell's rule, so it
				// goes, and the cell runs again.
				t.Logf("try %d: the launcher was killed after it said %q: trying the cell again", c.tries, left)
				e.deleteByHand()
				return true
			}
			c.err = "killed past its rule"
			t.Fatalf("the launcher was killed after it said %q, where rule %s no longer applies: the cell tested another rule", left, c.rule)
		}
	case c.step == "verdict":
		// The watchdog's own probe fails: its key's calls, once the pod
		// exists.
		var id string
		if !l.waitFor(func() bool { id = e.podID(); return id != "" }) {
			t.Fatalf("no pod (%s)", l.state())
		}
		f := faultFor(c.fault)
		f.Caller = id
		e.srv.Fail("GET", "/v2/pods/*", f)
	case stepMarkers[c.step] != "" && c.step != "boot" && c.step != "delete":
		// Steps over SSH: every API call fails while the launcher is there.
		if !l.waitFor(l.says(stepMarkers[c.step])) {
			t.Fatalf("the launcher never reached step %s (%s)", c.step, l.state())
		}
		for _, p := range apiPatterns {
			e.srv.Fail("", p, faultFor(c.fault))
		}
		l.waitFor(l.says(nextMarker[c.step]))
		e.srv.ClearFaults()
	}
	if c.fault != "kill" {
		c.exit = l.wait()
		if c.exit != 0 {
			c.err = fmt.Sprintf("launcher exit %d", c.exit)
			t.Errorf("the launcher failed (exit %d) under %s at %s", c.exit, c.fault, c.step)
		}
	}
	for _, r := range e.srv.Requests() {
		if r.Fault {
			c.faults++
		}
	}
	if c.fault != "kill" && c.faults == 0 && stepMarkers[c.step] == "" {
		t.Errorf("no fault was served: the cell tested nothing")
	}

	// A create the fake received may still be on its way to the pod
	// list: the launcher can be killed the moment its call arrives.
	shtest.Eventually(t, wait, e.createsAnswered, "the fake's answer to each pod create")
	pod, ok := e.pod()
	switch {
	case !ok && c.rule == ruleNoPod:
		c.got = ruleNoPod
	case !ok:
		c.err = "no pod"
		t.Fatalf("no pod was created")
	case c.mutant != "":
		e.checkMutant(pod, killedAt, l)
	default:
		e.checkDeleted(pod, began, killedAt, l)
	}
	e.cleanUp(l)
	return false
}

// killTrigger says when the launcher is inside the cell's step.
func (e *env) killTrigger(l *launcher) func() bool {
	sent := func(method, path string) func() bool {
		return func() bool {
			for _, r := range e.srv.Requests() {
				if r.Method == method && r.Path == path {
					return true
				}
			}
			return false
		}
	}
	switch e.c.step {
	case "secret":
		// Its first call, which hangs, follows this line at once.
		return func() bool {
			if !l.says(" (state in ")() {
				return false
			}
			time.Sleep(300 * time.Millisecond)
			return true
		}
	case "create":
		return sent("POST", "/v2/pods")
	case "job_start":
		return l.says("job started")
	case "follow":
		return l.says("step 2/")
	case "delete":
		return func() bool {
			for _, r := range e.srv.Requests() {
				if r.Method == "DELETE" && r.Caller == runpodtest.CallerAccount {
					return true
				}
			}
			return false
		}
	}
	return l.says(stepMarkers[e.c.step])
}

// createsAnswered says that the fake answered every pod create it
// received (or served it a fault), so its pod list holds their pods.
func (e *env) createsAnswered() bool {
	for _, r := range e.srv.Requests() {
		if r.Method == "POST" && r.Path == "/v2/pods" && r.Status == 0 && !r.Fault {
			return false
		}
	}
	return true
}

func (e *env) pod() (runpodtest.Pod, bool) {
	pods := e.srv.Pods()
	if len(pods) > 1 {
		e.t.Errorf("%d pods for one launch", len(pods))
	}
	if len(pods) == 0 {
		return runpodtest.Pod{}, false
	}
	return pods[0], true
}

func (e *env) podID() string {
	if p, ok := e.pod(); ok {
		return p.ID
	}
	return ""
}

// watchPods registers each pod's key and the run's host key with the
// secrets sampler as soon as they exist.
func (e *env) watchPods(stop <-chan struct{}) {
	for {
		for _, p := range e.srv.Pods() {
			e.sec.add(kindPod, e.srv.PodKey(p.ID))
		}
		for _, s := range e.srv.Secrets() {
			e.sec.addHostKey(s.Value)
		}
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// runDir is the run's directory on the network volume, on this host.
func (e *env) runDir() string {
	m, _ := filepath.Glob(filepath.Join(e.vol.Dir, "overbrainer", "*", watchdog.PodDir))
	if len(m) != 1 {
		return ""
	}
	return filepath.Dir(m[0])
}

// events parses the watchdog's log on the volume.
func (e *env) events() []watchdog.Event {
	dir := e.runDir()
	if dir == "" {
		return nil
	}
	b, _ := os.ReadFile(filepath.Join(dir, watchdog.Log))
	var evs []watchdog.Event
	for _, line := range strings.Split(string(b), "\n") {
		if ev, err := watchdog.ParseLine(line); err == nil {
			evs = append(evs, ev)
		}
	}
	return evs
}

func eventTime(evs []watchdog.Event, kind string) (time.Time, bool) {
	for _, ev := range evs {
		if ev.Kind == kind {
			return ev.Time, true
		}
	}
	return time.Time{}, false
}

func (e *env) fileNumber(name string) (int64, bool) {
	b, err := os.ReadFile(filepath.Join(e.runDir(), name))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// bound is the latest time the cell's rule may delete the pod, from the
// watchdog's own log and the run's settings; ok is false when the log
// lacks what the rule counts from.
func (e *env) bound(rule string, killedAt time.Time, l *launcher) (time.Time, bool) {
	evs := e.events()
	switch rule {
	case ruleClient:
		return l.exitedAt, !l.exitedAt.IsZero()
	case string(watchdog.DeleteNeverStarted):
		at, ok := eventTime(evs, watchdog.KindStart)
		return at.Add(e.bootGrace + ruleBound), ok
	case string(watchdog.DeleteDeadline):
		// The lease was last touched before the kill; past the deadline
		// the watchdog asks for a snapshot and waits SNAPSHOT_WAIT for it
		// (the job here never obeys).
		deadline := time.Now()
		for _, ev := range evs {
			if ev.Kind == watchdog.KindStart {
				if n, err := strconv.ParseInt(ev.Fields["deadline"], 10, 64); err == nil {
					deadline = time.Unix(n, 0)
				}
			}
		}
		stale := killedAt.Add(leaseTTL)
		if stale.Before(deadline) {
			stale = deadline
		}
		return stale.Add(snapshotWait + ruleBound), true
	case string(watchdog.DeleteCostCap):
		n, ok := e.fileNumber(watchdog.CostCapAt)
		return time.Unix(n, 0).Add(ruleBound), ok
	case string(watchdog.DeleteAbandoned):
		// The retrieve grace counts from the job's end, and a lease the
		// launcher renewed (during its download) holds the rule off until
		// leaseTTL after its last touch, the lease's mtime: the later.
		at, ok := eventTime(evs, watchdog.KindJobEnded)
		due := at.Add(e.retrieveGrace)
		if fi, err := os.Stat(filepath.Join(e.runDir(), watchdog.Lease)); err == nil && fi.ModTime().Add(leaseTTL).After(due) {
			due = fi.ModTime().Add(leaseTTL)
		}
		return due.Add(ruleBound), ok
	case string(watchdog.DeleteRetrieved):
		at, ok := eventTime(evs, watchdog.KindRetrieved)
		return at.Add(ruleBound), ok
	}
	return time.Time{}, false
}

// deletedBy says who deleted the pod: ruleClient when the account's
// DELETE or terminate ended it, else the watchdog's logged reason.
func (e *env) deletedBy(pod runpodtest.Pod) string {
	if r, ok := e.endingCall(pod); ok && r.Caller == runpodtest.CallerAccount {
		return ruleClient
	}
	for _, ev := range e.events() {
		if ev.Kind == watchdog.KindDeleteReason {
			return ev.Fields["reason"]
		}
	}
	return "unknown"
}

// endingCall is the first DELETE or terminate of the pod that the API
// answered with success: the call that ended it.
func (e *env) endingCall(pod runpodtest.Pod) (runpodtest.Request, bool) {
	for _, r := range e.srv.Requests() {
		if r.Fault || r.Status/100 != 2 {
			continue
		}
		if r.Method == "DELETE" && r.Path == "/v2/pods/"+pod.ID ||
			r.Method == "POST" && r.Path == "/v2/pods/"+pod.ID+"/action" && strings.Contains(string(r.Body), "terminate") {
			return r, true
		}
	}
	return runpodtest.Request{}, false
}

// checkDeleted waits for the pod to end and checks the rule and its bound.
func (e *env) checkDeleted(pod runpodtest.Pod, began, killedAt time.Time, l *launcher) {
	t, c := e.t, e.c
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	final, err := e.srv.WaitStatus(ctx, pod.ID, runpodtest.StatusTerminated)
	if err != nil {
		c.leftPods = 1
		c.err = "pod left running"
		t.Fatalf("pod %s still %s after %s", pod.ID, final.Status, wait)
	}
	c.got = e.deletedBy(final)
	if c.rule == ruleClient && c.got == string(watchdog.DeleteRetrieved) {
		// The launcher marks the results retrieved and wakes the
		// watchdog before its own delete call (which a fault may also
		// fail): the watchdog may delete the pod first, by that marker.
		// Either is right; the bound is the rule's.
		c.rule = string(watchdog.DeleteRetrieved)
	}
	if c.got != c.rule {
		c.err = "deleted by " + c.got
		t.Errorf("the pod was deleted by %q, want %q\nwatchdog log:\n%s", c.got, c.rule, e.logText())
	}
	bound, ok := e.bound(c.rule, killedAt, l)
	if !ok {
		c.err = "no bound"
		t.Fatalf("the watchdog's log lacks what rule %s counts from:\n%s", c.rule, e.logText())
	}
	c.pastBound = final.EndedAt.Sub(bound)
	if c.pastBound > 0 {
		c.usdPast = final.CostPerHr * c.pastBound.Hours()
	}
	var wd []string
	for _, ev := range e.events() {
		if ev.Kind == watchdog.KindDeleteReason || ev.Kind == watchdog.KindDeleted || ev.Kind == watchdog.KindStart {
			wd = append(wd, fmt.Sprintf("%s at %+.0fs", ev.Kind, ev.Time.Sub(began).Seconds()))
		}
	}
	// The fake marks the pod TERMINATED once its processes are gone: when
	// the pod ends late, when the call came tells the watchdog's (or the
	// launcher's) lateness from the teardown's.
	called := "no ending call logged"
	if r, ok := e.endingCall(final); ok {
		called = fmt.Sprintf("%s %s received %+.2fs from the bound", r.Method, r.Path, r.Time.Sub(bound).Seconds())
	}
	t.Logf("deleted by %s, %+.2fs from the bound (%s); launch began %s before the pod ended (watchdog: %s)",
		c.got, c.pastBound.Seconds(), called, final.EndedAt.Sub(began).Round(time.Millisecond), strings.Join(wd, ", "))
	if c.pastBound > Slack {
		c.err = "late"
		t.Errorf("the pod ended %s past its bound (slack %s)\nwatchdog log:\n%s", seconds(c.pastBound), Slack, e.logText())
	}
}

// checkMutant: without what it relies on, the cell's pod must outlive the
// latest end its test accepts: its rule's bound plus the slack, and for a
// launcher that survives the later of its exit and the retrieved marker's
// bound, since the cell accepts either (see checkDeleted).
func (e *env) checkMutant(pod runpodtest.Pod, killedAt time.Time, l *launcher) {
	t, c := e.t, e.c
	limit := func() (time.Time, bool) {
		b, ok := e.bound(c.rule, killedAt, l)
		if ok && c.rule == ruleClient {
			// The watchdog may log the marker after the launcher's exit.
			if r, rok := e.bound(string(watchdog.DeleteRetrieved), killedAt, l); rok && r.After(b) {
				b = r
			}
		}
		return b.Add(Slack), ok
	}
	waitUntil(t, func() bool {
		_, ok := limit()
		return ok
	}, func() string {
		return fmt.Sprintf("the watchdog's log never showed what rule %s counts from:\n%s", c.rule, e.logText())
	})
	for {
		lim, _ := limit()
		if !time.Now().Before(lim) {
			break
		}
		if p, _ := e.srv.Pod(pod.ID); p.Status == runpodtest.StatusTerminated {
			c.got = e.deletedBy(p)
			c.err = "deleted without its rule"
			t.Fatalf("without %s the pod was still deleted (by %s): the cell does not depend on it\nwatchdog log:\n%s",
				c.mutant, c.got, e.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.got = "kept"
	c.pastBound = -Slack
	t.Logf("without %s the pod outlived its bound + slack (%s)", c.mutant, Slack)
	e.deleteByHand()
}

// deleteByHand deletes the cell's pod through the API, as a user would.
func (e *env) deleteByHand() {
	e.t.Helper()
	id := e.podID()
	if id == "" {
		return
	}
	api := checkedfake.Client(e.t, e.srv)
	if _, err := api.DeletePod(context.Background(), id); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) logText() string {
	b, _ := os.ReadFile(filepath.Join(e.runDir(), watchdog.Log))
	return string(b)
}

// cleanUp runs `launch rm --all-orphans`, which must leave no pod and no
// secret, and scans everything the run left for secrets.
func (e *env) cleanUp(l *launcher) {
	t := e.t
	rm := startLauncher(t, e.bin, e.environ(), append(append([]string{"rm"}, e.global()...), "--all-orphans")...)
	if code := rm.wait(); code != 0 {
		t.Errorf("launch rm --all-orphans: exit %d", code)
	}
	for _, p := range e.srv.Billing() {
		e.c.leftPods++
		t.Errorf("pod %s (%s) still %s and billing after rm --all-orphans", p.ID, p.Name, p.Status)
	}
	for _, s := range e.srv.Secrets() {
		e.c.secretsLeft++
		t.Errorf("secret %s left after rm --all-orphans", s.Name)
	}
	if e.c.mutant == "" { // a mutant keeps its pod past its bound
		e.checkBill(l)
	}
	name := e.c.name()
	e.sec.scanTree(t, name+": the network volume", e.vol.Dir)
	e.sec.scanTree(t, name+": the state directory", e.stateDir)
	e.sec.check(name+": the launcher's output and errors", []byte(l.output()+rm.output()), nil)
	for _, p := range e.srv.Pods() {
		e.sec.check(name+": the pod's log", []byte(e.srv.PodLog(p.ID)), nil)
		env := fmt.Sprint(p.Env, p.Args)
		e.sec.check(name+": the pod's env and command in the create call", []byte(env), nil)
	}
}

// waitUntil polls cond for the package's wait, failing with msg().
func waitUntil(t *testing.T, cond func() bool, msg func() string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
