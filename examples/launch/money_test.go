package main_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// creates counts the create calls the fake was sent.
func (w *world) creates() int {
	n := 0
	for _, r := range w.srv.Requests() {
		if r.Method == "POST" && r.Path == "/v2/pods" {
			n++
		}
	}
	return n
}

// short are the rules of a run whose worst case is a few cents: a
// deadline of 6 minutes and a minute's extension.
var short = []string{"--max-hours", "0.1", "--max-extension", "1m"}

// run --dry-run prints the three bounds, in dollars and time, and creates
// nothing; with a sweeper said to run (its env), the third has a figure.
func TestDryRunPrintsTheWorstCase(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.run("run", "--dry-run")
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	out := p.stderr.String()
	mustContain(t, "stderr", out, "worst case while this launcher follows: $", "worst case if this launcher dies: $",
		"worst case if its watchdog dies too: unbounded: no sweeper", "dry run: nothing created")
	// The default run: 4 h and an hour's extension, a tick (a minute)
	// for the delete.
	mustContain(t, "stderr", lineWith(out, "if this launcher dies"), " 5h1m0s ")
	if n := w.creates(); n != 0 || len(w.srv.Secrets()) != 0 {
		t.Errorf("a dry run made %d pods and %d secrets", n, len(w.srv.Secrets()))
	}
	w.env = []string{"OVERBRAINER_SWEEPER_EVERY=10m"}
	p = w.run("run", "--dry-run")
	// The sweeper's margin (5m) and period past the deadline's end.
	mustContain(t, "stderr", lineWith(p.stderr.String(), "if its watchdog dies too"), "$", " 5h15m0s ")
	if w.creates() != 0 {
		t.Error("a dry run created a pod")
	}
}

// --budget refuses a run that would take the account's committed money
// past it, naming the run that holds it: exit 2, nothing created; launch
// budget lists that run.
func TestBudgetRefusesARunPastIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	first := w.start(args([]string{"run", "--down-on-interrupt"}, fast, short, demo(600))...)
	first.waitOutput("step 2/600", patience)
	held := w.onlyRun()

	p := w.run(args([]string{"run", "--budget", "0.1"}, fast, short, demo(1))...)
	if p.code != 2 {
		t.Fatalf("exit %d, want 2", p.code)
	}
	mustContain(t, "stderr", p.stderr.String(), "past --budget $0.100", held.ID, "nothing created")
	if n := w.creates(); n != 1 {
		t.Errorf("%d pods created, want the first run's only", n)
	}
	b := w.run("budget", "--budget", "0.1")
	if b.code != 0 {
		t.Fatalf("budget exit %d", b.code)
	}
	mustContain(t, "budget", b.stdout.String(), held.ID, "committed: $")
	// A sweeper given a budget says when the account passes it.
	sw := w.run("sweep", "--dry-run", "--budget", "0.01")
	mustContain(t, "sweep", sw.stderr.String(), "past --budget $0.010", held.ID)
	// With the env instead of the flag, the same.
	w.env = []string{"OVERBRAINER_BUDGET_USD=0.1"}
	p = w.run(args([]string{"run"}, fast, short, demo(1))...)
	if p.code != 2 || w.creates() != 1 {
		t.Fatalf("exit %d with %d creates, want 2 and 1", p.code, w.creates())
	}
	// A run file's budget wins over the environment's.
	file := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(file, []byte("budget: 0.1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env = []string{"OVERBRAINER_BUDGET_USD=100"}
	p = w.run(args([]string{"run", "-f", file}, fast, short, demo(1))...)
	if p.code != 2 || w.creates() != 1 {
		t.Fatalf("run file: exit %d with %d creates, want 2 and 1", p.code, w.creates())
	}
	first.signal(syscall.SIGINT)
	first.wait(patience)
	w.waitPodGone(held, patience)
	w.assertClean()
}

// Two launchers racing for the last dollars both pass the check before
// their creates (a proxy holds each create until both are sent): the
// newer pod is deleted once it exists, its launcher exits 2 saying so,
// and the older run goes on.
func TestBudgetRace(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	target, err := url.Parse(w.srv.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	// The base URL's path is the API's prefix: the proxy forwards to
	// its host and keeps the request's path.
	target.Path = ""
	fwd := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	held, both := 0, make(chan struct{})
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/pods") {
			mu.Lock()
			held++
			if held == 2 {
				close(both)
			}
			mu.Unlock()
			select {
			case <-both:
			case <-r.Context().Done():
				return
			}
		}
		fwd.ServeHTTP(rw, r)
	}))
	t.Cleanup(proxy.Close)
	base := strings.Replace(w.srv.BaseURL(), target.Scheme+"://"+target.Host, proxy.URL, 1)
	race := args([]string{"run", "--budget", "0.12", "--api-url", base}, fast, short, demo(3))
	a, b := w.start(race...), w.start(race...)
	ca, cb := a.wait(2*patience), b.wait(2*patience)
	if ca+cb != 2 || (ca != 0 && cb != 0) {
		t.Fatalf("exits %d and %d, want one 0 and one 2", ca, cb)
	}
	loser := a
	if ca == 0 {
		loser = b
	}
	mustContain(t, "loser", loser.stderr.String(), "took the account past --budget", "the newer", "is deleted (confirmed)")
	if n := w.creates(); n != 2 {
		t.Errorf("%d creates, want 2 (both passed the first check)", n)
	}
	w.assertClean()
}

// ls shows per run its worst case beside the estimate and the bill, and
// a bill above its worst case loudly, asking for a report.
func TestLsShowsTheBillBesideTheBound(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if p := w.run(args([]string{"run"}, fast, short, demo(1))...); p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	r := w.onlyRun()
	if r.WorstCase == nil || r.WorstCase.Guarded().Unbounded {
		t.Fatalf("the run kept no worst case: %+v", r.WorstCase)
	}
	ls := w.run("ls")
	mustContain(t, "ls", ls.stdout.String(), "WORST CASE", "ESTIMATED", "BILLED")
	mustContain(t, "ls", lineWith(ls.stdout.String(), r.ID), costplan.Money(r.WorstCase.Guarded().USD))
	if strings.Contains(ls.stdout.String(), "report it") {
		t.Errorf("a bill within its bound is flagged:\n%s", ls.stdout)
	}
	if r.Bill == nil || r.Bill.USD <= 0 {
		t.Fatalf("no bill read: %+v", r.Bill)
	}
	// A bound the bill passed (here, one made smaller than the bill).
	r.WorstCase.Follow.USD, r.WorstCase.Watchdog.USD = r.Bill.USD/2, r.Bill.USD/2
	st, err := state.Open(w.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(r); err != nil {
		t.Fatal(err)
	}
	ls = w.run("ls")
	mustContain(t, "ls", ls.stdout.String(), "ABOVE ITS WORST CASE", "please report it", r.ID)
	w.assertClean()
}

// A worst case that cannot be planned (a network volume that does not
// exist) does not stop the launch, which fails as it did, its run saved
// as failed; a dry run, which needs the figure, stops there.
func TestAWorstCaseThatCannotBePlanned(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.run("run", "--network-volume", "nonesuch")
	if p.code != 1 {
		t.Fatalf("exit %d, want 1", p.code)
	}
	mustContain(t, "stderr", p.stderr.String(), "worst case: cannot be planned")
	if r := w.onlyRun(); r.Phase != state.PhaseFailed {
		t.Errorf("run %s: phase %s, want failed", r.ID, r.Phase)
	}
	if p := w.run("run", "--dry-run", "--network-volume", "nonesuch"); p.code != 1 {
		t.Errorf("dry run: exit %d, want 1", p.code)
	}
}

// The committed sum needs the pods' listing alone: launch budget reads it
// when the secrets' listing fails.
func TestBudgetWithoutTheSecretsListing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.srv.Fail("GET", "/v2/account/secrets", runpodtest.Fault{Status: http.StatusInternalServerError, Times: -1})
	p := w.run("budget", "--budget", "1")
	if p.code != 0 {
		t.Fatalf("exit %d, want 0", p.code)
	}
	mustContain(t, "budget", p.stdout.String(), "committed: $0", "$1.000 left")
}
