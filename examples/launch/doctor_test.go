package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/doctor"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// allChecks are the checks a doctor with a pod makes, in order.
var allChecks = []string{
	doctor.CheckPods, doctor.CheckGPUTypes, doctor.CheckSecrets, doctor.CheckRegistries, doctor.CheckVolumes, doctor.CheckBilling, doctor.CheckOpenAPI,
	doctor.CheckSecretMake, doctor.CheckSecretRead, doctor.CheckSecretEdit, doctor.CheckSecretGone,
	doctor.CheckPodBody, doctor.CheckPodReady, doctor.CheckPodFields, doctor.CheckPodDelete, doctor.CheckPodGone,
	doctor.CheckCleanup,
}

// readReport decodes doctor --json's stdout and checks that it lists every
// check, each passing but those named in warn, which may warn.
func readReport(t *testing.T, p *proc, warn ...string) doctor.Report {
	t.Helper()
	var rep doctor.Report
	if err := json.Unmarshal([]byte(p.stdout.String()), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, p.stdout)
	}
	if len(rep.Checks) != len(allChecks) {
		t.Errorf("%d checks, want %d: %+v", len(rep.Checks), len(allChecks), rep.Checks)
	}
	for i, name := range allChecks {
		c, ok := rep.Check(name)
		switch {
		case !ok:
			t.Errorf("check %q not listed", name)
		case c.Result != doctor.ResultOK && (c.Result != doctor.ResultWarn || !slices.Contains(warn, name)):
			t.Errorf("check %q: %s (%s)", name, c.Result, c.Detail)
		case i < len(rep.Checks) && rep.Checks[i].Name != name:
			t.Errorf("check %d is %q, want %q", i, rep.Checks[i].Name, name)
		}
	}
	if rep.CreateBodyBytes == 0 || rep.PodID == "" || rep.EstimateUSD <= 0 {
		t.Errorf("report without the pod's body size, id or estimate: %+v", rep)
	}
	return rep
}

// billed checks that the report holds the pod's bill (the emulator bills
// at once unless told to lag).
func billed(t *testing.T, rep doctor.Report) {
	t.Helper()
	if rep.BilledUSD == nil || *rep.BilledUSD <= 0 {
		t.Errorf("report without the pod's bill: %v", rep.BilledUSD)
	}
}

// noSecrets checks that the doctor's output holds neither the key, nor a
// private key, nor the values of the secrets it made.
func noSecrets(t *testing.T, p *proc, key string) {
	t.Helper()
	for _, secret := range []string{key, "PRIVATE KEY", "doctor-value"} {
		if strings.Contains(p.stdout.String()+p.stderr.String(), secret) {
			t.Errorf("the doctor's output holds %q", secret)
		}
	}
}

// What CI runs: launch --local doctor passes every check, its own
// emulator's pod deleted by its watchdog with the pod's key.
func TestDoctorLocal(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	p := l.run("--local", "doctor", "--json")
	if p.code != 0 {
		t.Fatalf("doctor --local: exit %d\n%s", p.code, p.stderr)
	}
	billed(t, readReport(t, p))
}

// launch --local doctor against a local-server leaves its emulator with
// no pod and no secret (the pod log, the doctor's only view of the pod
// key's delete from another process, may not show it: a warning).
func TestDoctorLocalServerLeavesNothing(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	srv := l.start("local-server")
	srv.waitOutput("local Runpod emulator at", patience)
	p := l.run("--local", "doctor", "--json")
	if p.code != 0 {
		t.Fatalf("doctor --local: exit %d\n%s", p.code, p.stderr)
	}
	mustContain(t, "stderr", p.stderr.String(), "using the local-server")
	billed(t, readReport(t, p, doctor.CheckPodDelete))
	info, ok := runpodtest.FindShared(l.stateDir)
	if !ok {
		t.Fatal("the local-server is gone")
	}
	c, err := runpod.New(info.Key, runpod.WithBaseURL(info.BaseURL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pods, err := c.ListPods(ctx, runpod.ListPodsOptions{})
	if err != nil || len(pods) != 0 {
		t.Errorf("pods left: %+v (%v)", pods, err)
	}
	secrets, err := c.ListSecrets(ctx)
	if err != nil || len(secrets) != 0 {
		t.Errorf("secrets left: %+v (%v)", secrets, err)
	}
	srv.signal(syscall.SIGINT)
	if code := srv.wait(patience); code != 0 {
		t.Errorf("local-server exit %d", code)
	}
}

// Against a fake that holds every exchange to the OpenAPI document, the
// doctor passes and leaves no pod and no secret. The pod log does not
// show the watchdog's delete (the container ends before its relay writes
// it), so the doctor may only warn that it could not read the status: the
// fake's request log shows it.
func TestDoctorLeavesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.run("doctor", "--json", "--boot-grace", "15s", "--watchdog-interval", "1s")
	if p.code != 0 {
		t.Fatalf("doctor: exit %d\n%s", p.code, p.stderr)
	}
	rep := readReport(t, p, doctor.CheckPodDelete)
	billed(t, rep)
	noSecrets(t, p, w.srv.APIKey())
	if n := len(w.srv.Pods()); n != 1 {
		t.Errorf("%d pods made, want 1", n)
	}
	var codes []int
	for _, r := range w.srv.Requests() {
		if r.Method == "DELETE" && r.Path == "/v2/pods/"+rep.PodID && r.Caller == rep.PodID {
			codes = append(codes, r.Status)
		}
	}
	if len(codes) == 0 || codes[0] != 204 {
		t.Errorf("the pod's own key's deletes: %v, want a 204 first", codes)
	}
	w.assertClean()
}

// Before Runpod bills the pod, --json says so (billed_usd null) beside
// the estimate, and the table says it is not billed yet.
func TestDoctorNotBilledYet(t *testing.T) {
	t.Parallel()
	w := newWorld(t, runpodtest.WithBillingDelay(time.Hour))
	p := w.run("doctor", "--json", "--boot-grace", "15s", "--watchdog-interval", "1s")
	if p.code != 0 {
		t.Fatalf("doctor: exit %d\n%s", p.code, p.stderr)
	}
	rep := readReport(t, p, doctor.CheckPodDelete)
	if rep.BilledUSD != nil {
		t.Errorf("billed %v before Runpod billed the pod", *rep.BilledUSD)
	}
	mustContain(t, "--json", p.stdout.String(), `"billed_usd": null`, `"estimate_usd": `)
	noSecrets(t, p, w.srv.APIKey())
	w.assertClean()
}

// Each of the local emulator's switches (OVERBRAINER_LOCAL_DRIFT) makes
// launch --local doctor fail, exit 1 naming the check, or warn, naming
// it; the emulator, a local-server of the case's own, is left with no pod
// and no secret. The pod key's refused DELETE is played by the in-process
// emulator, whose request log shows the doctor its status: from another
// process, the pod log may not show it before the pod goes (ended by its
// watchdog's fallback). That emulator ends with the launcher: the doctor's
// cleanup check says what it left.
func TestDoctorLocalNamesEachSwitch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		drift      string
		noPod      bool
		inProcess  bool
		fail, warn []string
	}{
		{drift: "pod-key-delete=403", inProcess: true, fail: []string{doctor.CheckPodDelete}},
		{drift: "pod-key-delete=404", inProcess: true, fail: []string{doctor.CheckPodDelete}},
		{drift: "dash-unresolved", fail: []string{doctor.CheckPodReady}},
		{drift: "max-create-body=10000", fail: []string{doctor.CheckPodBody}},
		{drift: "whole-as-fraction", noPod: true, fail: []string{doctor.CheckGPUTypes}},
		{drift: "unknown-member=spendLimit", noPod: true, warn: []string{doctor.CheckGPUTypes, doctor.CheckOpenAPI}},
		{drift: "missing-member=maxCount", noPod: true, fail: []string{doctor.CheckGPUTypes, doctor.CheckOpenAPI}},
	} {
		t.Run(tc.drift, func(t *testing.T) {
			t.Parallel()
			l := newLocal(t)
			l.env = []string{"OVERBRAINER_LOCAL_DRIFT=" + tc.drift}
			var srv *proc
			if !tc.inProcess {
				srv = l.start("local-server")
				srv.waitOutput("local Runpod emulator at", patience)
			}
			args := []string{"--local", "doctor", "--json"}
			if tc.noPod {
				args = append(args, "--no-pod")
			}
			p := l.run(args...)
			want := 0
			if len(tc.fail) > 0 {
				want = 1
			}
			if p.code != want {
				t.Errorf("exit %d, want %d\n%s", p.code, want, p.stderr)
			}
			var rep doctor.Report
			if err := json.Unmarshal([]byte(p.stdout.String()), &rep); err != nil {
				t.Fatalf("doctor --json: %v\n%s", err, p.stdout)
			}
			for _, name := range tc.fail {
				if c, _ := rep.Check(name); c.Result != doctor.ResultFail {
					t.Errorf("%s: %s (%s), want a failure", name, c.Result, c.Detail)
				}
				mustContain(t, "stderr", lineWith(p.stderr.String(), "doctor: failed: "), name)
			}
			for _, name := range tc.warn {
				if c, _ := rep.Check(name); c.Result != doctor.ResultWarn {
					t.Errorf("%s: %s (%s), want a warning", name, c.Result, c.Detail)
				}
			}
			if c, _ := rep.Check(doctor.CheckCleanup); c.Result != doctor.ResultOK {
				t.Errorf("cleanup: %s (%s)", c.Result, c.Detail)
			}
			if tc.inProcess {
				return
			}
			info, ok := runpodtest.FindShared(l.stateDir)
			if !ok {
				t.Fatal("the local-server is gone")
			}
			for _, list := range []string{"pods", "secrets"} {
				if n := countListed(t, info, list); n != 0 {
					t.Errorf("%d %s left", n, list)
				}
			}
			srv.signal(syscall.SIGINT)
			if code := srv.wait(patience); code != 0 {
				t.Errorf("local-server exit %d", code)
			}
		})
	}
}

// countListed counts what the emulator lists as pods or secrets, read as
// bare JSON: a drifted emulator's answers may not decode as the client's.
func countListed(t *testing.T, info runpodtest.Shared, list string) int {
	t.Helper()
	path := map[string]string{"pods": "/pods", "secrets": "/account/secrets"}[list]
	req, err := http.NewRequest(http.MethodGet, info.BaseURL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+info.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d (%v)", path, resp.StatusCode, err)
	}
	items, _ := body[list].([]any)
	return len(items)
}

// An unknown switch is refused, naming it.
func TestDoctorLocalUnknownSwitch(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	l.env = []string{"OVERBRAINER_LOCAL_DRIFT=bogus"}
	bad := l.run("--local", "doctor", "--no-pod")
	if bad.code != 1 {
		t.Errorf("an unknown drift: exit %d, want 1", bad.code)
	}
	mustContain(t, "stderr", bad.stderr.String(), `unknown drift "bogus"`)
}

// Ctrl-C once the pod is up ends the doctor, whose cleanup still deletes
// the pod and its secret and confirms them gone.
func TestDoctorInterrupted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start("doctor", "--boot-grace", "10m", "--watchdog-interval", "1s")
	p.waitOutput(doctor.CheckPodReady+": ok", patience)
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 1 {
		t.Errorf("interrupted doctor: exit %d, want 1", code)
	}
	mustContain(t, "stderr", p.stderr.String(), "doctor: interrupted")
	noSecrets(t, p, w.srv.APIKey())
	mustContain(t, "cleanup", lineWith(p.stdout.String(), doctor.CheckCleanup), " ok ")
	mustContain(t, "pod's delete", lineWith(p.stdout.String(), doctor.CheckPodDelete), " skipped ", "interrupted")
	mustContain(t, "cost", lineWith(p.stdout.String(), "estimated cost"), "billed $")
	w.assertClean()
}

// run warns before its create when launch doctor, with this key, found
// something runs rely on failing: here, the create body over the API's
// limit.
func TestRunWarnsAfterAFailedDoctor(t *testing.T) {
	t.Parallel()
	w := newWorld(t, runpodtest.WithDrift(runpodtest.Drift{MaxCreateBody: 10000}))
	const warning = "warning: launch doctor found"
	before := w.run(args([]string{"run"}, fast, demo(1))...)
	if strings.Contains(before.stderr.String(), warning) {
		t.Errorf("a warning before any doctor ran:\n%s", before.stderr)
	}
	d := w.run("doctor", "--boot-grace", "15s", "--watchdog-interval", "1s")
	if d.code != 1 {
		t.Fatalf("doctor: exit %d, want 1\n%s", d.code, d.stderr)
	}
	after := w.run(args([]string{"run"}, fast, demo(1))...)
	mustContain(t, "run's stderr", lineWith(after.stderr.String(), warning), doctor.CheckPodBody)
	w.assertClean()
}

// accountCheck and doctorWarning are what run says when it checks the
// key's account, and when a check runs rely on failed.
const (
	accountCheck  = "checking what runs rely on with this key"
	doctorWarning = "warning: launch doctor found"
)

// openAPIFetches counts the doctor's reads of the fake's OpenAPI text:
// one per account check.
func openAPIFetches(srv *runpodtest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Method == "GET" && r.Path == "/v2/openapi.json" {
			n++
		}
	}
	return n
}

// run checks the key's account before its first create, once: the next
// run reads the report kept under a hash of the key (never the key),
// and a report of another SDK version is checked again.
func TestRunChecksTheAccountOncePerKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env = []string{"OVERBRAINER_ACCOUNT_CHECK=on"}
	first := w.run(args([]string{"run"}, fast, demo(1))...)
	if first.code != 0 {
		t.Fatalf("first run: exit %d\n%s", first.code, first.stderr)
	}
	mustContain(t, "first run's stderr", first.stderr.String(), accountCheck)
	if strings.Contains(first.stderr.String(), doctorWarning) {
		t.Errorf("a warning from a passing check:\n%s", first.stderr)
	}
	if n := openAPIFetches(w.srv); n != 1 {
		t.Errorf("first run: %d account checks, want 1", n)
	}
	second := w.run(args([]string{"run"}, fast, demo(1))...)
	if second.code != 0 {
		t.Fatalf("second run: exit %d\n%s", second.code, second.stderr)
	}
	if strings.Contains(second.stderr.String(), accountCheck) || openAPIFetches(w.srv) != 1 {
		t.Errorf("second run checked again (%d checks):\n%s", openAPIFetches(w.srv), second.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(w.stateDir, "doctor", "*"))
	if len(files) != 1 {
		t.Fatalf("kept reports: %q, want one", files)
	}
	w.assertPrivate(w.srv.APIKey())
	var kept map[string]any
	b, err := os.ReadFile(files[0])
	if err == nil {
		err = json.Unmarshal(b, &kept)
	}
	if err != nil || kept["version"] != podenv.Version {
		t.Fatalf("kept report: version %v, want %s (%v)", kept["version"], podenv.Version, err)
	}
	kept["version"] = "v0.0.1-older"
	if b, err = json.Marshal(kept); err != nil || os.WriteFile(files[0], b, 0o600) != nil {
		t.Fatal(err)
	}
	third := w.run(args([]string{"run"}, fast, demo(1))...)
	if third.code != 0 {
		t.Fatalf("third run: exit %d\n%s", third.code, third.stderr)
	}
	mustContain(t, "stderr of a run after an SDK change", third.stderr.String(), accountCheck)
	if n := openAPIFetches(w.srv); n != 2 {
		t.Errorf("after an SDK change: %d account checks, want 2", n)
	}
	w.assertClean()
}

// Where the API has drifted from what runs rely on (here, the GPU types'
// "community" member gone), run's account check warns, naming the checks,
// before its create; the run still goes on. The fake is not held to the
// document: its answers are off it on purpose.
func TestRunWarnsOfDriftBeforeItsCreate(t *testing.T) {
	t.Parallel()
	needPods(t)
	srv := runpodtest.NewTestServer(t, runpodtest.WithPodRunner(), runpodtest.WithDrift(runpodtest.Drift{MissingMember: "community"}))
	w := &world{t: t, srv: srv, stateDir: filepath.Join(t.TempDir(), "state"), env: []string{"OVERBRAINER_ACCOUNT_CHECK=on"}}
	p := w.run(args([]string{"run"}, fast, demo(1))...)
	if p.code != 0 {
		t.Fatalf("run: exit %d\n%s", p.code, p.stderr)
	}
	stderr := p.stderr.String()
	warn, create := strings.Index(stderr, doctorWarning), strings.Index(stderr, "(state in ")
	if warn < 0 || create < 0 || warn > create {
		t.Fatalf("want the warning before the create:\n%s", stderr)
	}
	mustContain(t, "the warning", lineWith(stderr, doctorWarning), doctor.CheckGPUTypes, doctor.CheckOpenAPI)
	if n := len(srv.Pods()); n != 1 {
		t.Errorf("%d pods made, want 1", n)
	}
	w.assertClean()
}
