package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A detached run whose pod its watchdog deletes is explained: the detach
// message names the stall rule and the retrieve grace with their times,
// and once the pod is gone, ls and attach name the rule whose time had
// come (nothing saw the watchdog's own line).
func TestDetachedPodGoneIsExplained(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(args([]string{"run", "--retrieve-grace", "3s", "--stall-after", "45m"}, fast, demo(8))...)
	p.waitOutput("step 1/8", patience)
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130", code)
	}
	mustContain(t, "stderr", p.stderr.String(), "detached from pod",
		"should the job not move for 45m0s (--stall-after", "30s later if it still has not moved (--snapshot-wait)",
		"once the job ends, the pod goes 3s later unless its results are collected")
	r := w.onlyRun()
	w.waitPodGone(r, patience)

	ls := w.run("ls")
	if line := lineWith(ls.stdout.String(), r.ID); !strings.Contains(line, "gone") || !strings.Contains(line, "abandoned?") {
		t.Errorf("ls line %q lacks gone and abandoned?\n%s", line, ls.stdout)
	}
	mustContain(t, "ls", ls.stdout.String(), "a reason with ? had its time come", "abandoned: the job ended and its results were not collected")

	at := w.run("attach", r.ID)
	if at.code == 0 {
		t.Fatalf("attach of a gone pod: exit 0")
	}
	mustContain(t, "attach stderr", at.stderr.String(), "these were due by then: abandoned (the job ended and its results were not collected")
	// What attach found is kept: ls says it still.
	ls = w.run("ls")
	if line := lineWith(ls.stdout.String(), r.ID); !strings.Contains(line, "abandoned?") {
		t.Errorf("ls after attach: %q", line)
	}
	w.assertClean()
}

// The watchdog's own reason, in the ended_by file of a copy of the run
// directory here, names the rule: ls shows it without a "?", attach and
// logs say it.
func TestEndedByNamesTheRule(t *testing.T) {
	t.Parallel()
	w := newAPIWorld(t)
	id := "20260101-000000-bbbb"
	st, err := state.Open(w.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	client, err := podssh.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	host, err := podssh.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	pem, err := client.PrivatePEM("test")
	if err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-time.Hour)
	r := &state.Run{Record: guard.Record{
		ID: id, PodName: podenv.PodName(id), SecretName: podenv.HostKeySecretName(id), PodID: "gonepod1", APIURL: w.srv.BaseURL(), RunDir: "/workspace/run",
		HostKey: host.AuthorizedKey("host"), ClientKey: guard.PEM(pem),
		Phase: state.PhaseDetached, BillingStart: then, JobStarted: then,
		Plan: podenv.Plan{Rules: podenv.Rules{RetrieveGrace: time.Minute, StallAfter: 10 * time.Minute}},
	}, Created: then, OutDir: filepath.Join(st.RunPath(id), "results")}
	if err := st.Create(r); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.OutDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ended := fmt.Sprintf("reason=%s at=%d\n", watchdog.DeleteStalled, then.Add(20*time.Minute).Unix())
	if err := os.WriteFile(filepath.Join(r.OutDir, watchdog.EndedByFile), []byte(ended), 0o600); err != nil {
		t.Fatal(err)
	}

	ls := w.run("ls")
	line := lineWith(ls.stdout.String(), id)
	if !strings.Contains(line, "stalled") || strings.Contains(line, "?") {
		t.Errorf("ls line %q: want stalled, no rule in doubt", line)
	}
	mustContain(t, "ls", ls.stdout.String(), "stalled: the job stalled")

	logs := w.run("logs", id, "--pod")
	mustContain(t, "logs stderr", logs.stderr.String(), "pod gonepod1 is gone: its watchdog deleted it (stalled): the job did not move")

	at := w.run("attach", id)
	if at.code == 0 {
		t.Fatalf("attach of a gone pod: exit 0")
	}
	mustContain(t, "attach stderr", at.stderr.String(), "its watchdog deleted it (stalled): the job did not move")
	if strings.Contains(at.stderr.String(), "these were due by then") {
		t.Errorf("attach listed rules in doubt though ended_by names one:\n%s", at.stderr)
	}
}
