package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// sweepFake is an account for Sweep: its pods and secrets, the calls made,
// and a listing that can fail.
type sweepFake struct {
	mu       sync.Mutex
	pods     []runpod.Pod
	secrets  []runpod.Secret
	listErr  error
	secErr   error // of ListSecrets
	calls    []string
	gone     map[string]bool // deleted pods: a second delete is a 404, Deleted
	deletion runpod.DeleteResult
}

func (f *sweepFake) ListPods(_ context.Context, o runpod.ListPodsOptions) ([]runpod.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "ListPods")
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []runpod.Pod
	for _, p := range f.pods {
		if strings.HasPrefix(p.Name, o.NamePrefix) && !f.gone[p.ID] {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *sweepFake) DeletePod(_ context.Context, id string) (runpod.DeleteResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "DeletePod "+id)
	if f.gone == nil {
		f.gone = map[string]bool{}
	}
	f.gone[id] = true
	if f.deletion != 0 {
		return f.deletion, nil
	}
	return runpod.Deleted, nil
}

func (f *sweepFake) ListSecrets(context.Context) ([]runpod.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "ListSecrets")
	if f.secErr != nil {
		return nil, f.secErr
	}
	return f.secrets, nil
}

func (f *sweepFake) DeleteSecret(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "DeleteSecret "+id)
	return nil
}

// sweepNow is the fake clock of the sweep tests.
var sweepNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// guarded is a marked pod of run id, created age ago, started after
// startedAfter when that is not negative, with env added.
func guarded(id string, st runpod.PodStatus, age, startedAfter time.Duration, kv ...string) runpod.Pod {
	p := runpod.Pod{ID: "pod-" + id, Name: podenv.PodNamePrefix + id, Status: st, CreatedAt: sweepNow.Add(-age), CostPerHr: 2,
		Env: podEnv(id)}
	if startedAfter >= 0 {
		s := p.CreatedAt.Add(startedAfter)
		p.StartedAt = &s
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "-" {
			delete(p.Env, kv[i])
		} else {
			p.Env[kv[i]] = kv[i+1]
		}
	}
	// A kept pod's env states its idle bound, as podenv writes it.
	if _, ok := p.Env[podenv.KeepIdleEnv]; !ok && p.Env[podenv.KeepEnv] == "1" {
		p.Env[podenv.KeepIdleEnv] = "3600"
	}
	return p
}

// Real keys, for an env that validates.
const (
	clientKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcomaqb8ckRepkDHH1CfKQjIlXD1MGWnmwCZJZcsNG3"
	hostKey   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV"
)

// podEnv is run id's env as podenv writes it: a deadline far off (which
// a test sets to its own), not kept, the default graces and extension.
func podEnv(id string) map[string]string {
	env, err := podenv.Settings{
		RunID: id, Workdir: "/workspace/overbrainer", AuthorizedKey: clientKey, Claim: hostKey,
		Rules: podenv.Rules{Deadline: sweepNow.Add(1000 * time.Hour)},
	}.Env()
	if err != nil {
		panic(err)
	}
	return env
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// Every state and age, judged: each pod's rule and whether it goes.
func TestSweepDecisions(t *testing.T) {
	h := time.Hour
	soon := unix(sweepNow.Add(h))
	for _, tc := range []struct {
		name string
		pod  runpod.Pod
		rule Rule
		del  bool
	}{
		{"running, young", guarded("a", runpod.StatusRunning, h, time.Minute, podenv.DeadlineEnv, soon), RuleKeep, false},
		{"running, no deadline kept", guarded("b", runpod.StatusRunning, 100*h, time.Minute, podenv.KeepEnv, "1"), RuleKeep, false},
		{"exited recently", guarded("c", runpod.StatusExited, h, 55*time.Minute), RuleKeep, false},
		{"exited long ago", guarded("d", runpod.StatusExited, h, time.Minute), RuleExited, true},
		{"error long ago", guarded("e", runpod.StatusError, h, time.Minute), RuleExited, true},
		{"exited, kept", guarded("f", runpod.StatusExited, h, time.Minute, podenv.KeepEnv, "1"), RuleKeep, false},
		{"terminated", guarded("g", runpod.StatusTerminated, h, time.Minute), RuleKeep, false},
		{"created, within boot grace", guarded("h", runpod.StatusProvisioning, 30*time.Minute, -1), RuleKeep, false},
		{"created, past boot grace", guarded("i", runpod.StatusProvisioning, 36*time.Minute, -1), RuleNeverRan, true},
		{"starting, own boot grace", guarded("j", runpod.StatusStarting, 11*time.Minute, -1, podenv.BootGraceEnv, "300"), RuleNeverRan, true},
		{"past deadline, within extension", guarded("k", runpod.StatusRunning, 10*h, time.Minute,
			podenv.DeadlineEnv, unix(sweepNow.Add(-h/2))), RuleKeep, false},
		{"past deadline and default extension", guarded("l", runpod.StatusRunning, 30*h, time.Minute,
			podenv.DeadlineEnv, unix(sweepNow.Add(-2*h))), RuleDeadline, true},
		{"hard deadline, within margin", guarded("m", runpod.StatusRunning, 3*h, time.Minute,
			podenv.DeadlineEnv, unix(sweepNow.Add(-4*time.Minute)), podenv.MaxExtensionEnv, "0"), RuleKeep, false},
		{"hard deadline, past margin", guarded("n", runpod.StatusRunning, 3*h, time.Minute,
			podenv.DeadlineEnv, unix(sweepNow.Add(-6*time.Minute)), podenv.MaxExtensionEnv, "0"), RuleDeadline, true},
		{"under cost cap", guarded("o", runpod.StatusRunning, 2*h, time.Minute, podenv.MaxCostEnv, "5"), RuleKeep, false},
		{"past cost cap", guarded("p", runpod.StatusRunning, 3*h, time.Minute, podenv.MaxCostEnv, "5"), RuleCostCap, true},
		{"past cost cap, kept", guarded("q", runpod.StatusRunning, 3*h, time.Minute, podenv.MaxCostEnv, "5", podenv.KeepEnv, "1"), RuleKeep, false},
		{"unmarked, exited", runpod.Pod{ID: "pod-x", Name: podenv.PodNamePrefix + "x", Status: runpod.StatusExited, CreatedAt: sweepNow.Add(-100 * h)}, RuleUnmarked, false},
		{"marker of another run", guarded("y", runpod.StatusExited, h, time.Minute, podenv.RunIDEnv, "z"), RuleUnmarked, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &sweepFake{pods: []runpod.Pod{tc.pod}}
			rep, err := Once(context.Background(), f, Policy{Now: func() time.Time { return sweepNow }})
			if err != nil || len(rep.Decisions) != 1 {
				t.Fatalf("Sweep = %+v, %v", rep, err)
			}
			d := rep.Decisions[0]
			if d.Rule != tc.rule || d.Delete != tc.del || d.Why == "" {
				t.Errorf("decision %s (rule %s, delete %v), want rule %s, delete %v", d, d.Rule, d.Delete, tc.rule, tc.del)
			}
			deleted := slices.Contains(f.calls, "DeletePod "+tc.pod.ID)
			if deleted != tc.del || d.Done != tc.del {
				t.Errorf("deleted %v, done %v; want %v (calls %v)", deleted, d.Done, tc.del, f.calls)
			}
			if tc.rule == RuleCostCap && (d.SpendUSD != 6 || d.CapUSD != 5) {
				t.Errorf("spend %v of cap %v, want 6 of 5", d.SpendUSD, d.CapUSD)
			}
		})
	}
}

// A dry run decides and deletes nothing; a failed listing deletes nothing;
// two sweeps at once delete each pod and the second sees it gone.
func TestSweepDryRunPartialAndTwice(t *testing.T) {
	pods := []runpod.Pod{
		guarded("d", runpod.StatusExited, time.Hour, time.Minute),
		guarded("a", runpod.StatusRunning, time.Hour, time.Minute),
	}
	clock := Policy{Now: func() time.Time { return sweepNow }}
	f := &sweepFake{pods: pods}
	dry := clock
	dry.DryRun = true
	rep, err := Once(context.Background(), f, dry)
	if err != nil || len(rep.Decisions) != 2 || !rep.Decisions[0].Delete || rep.Deleted() != 0 {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	if diff := cmp.Diff([]string{"ListPods", "ListSecrets"}, f.calls); diff != "" {
		t.Errorf("dry run calls (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(rep.Decisions[0].String(), "would delete pod pod-d") {
		t.Errorf("dry run says %q", rep.Decisions[0])
	}

	f = &sweepFake{pods: pods, listErr: errors.New("page 3: 500")}
	if _, err := Once(context.Background(), f, clock); err == nil || !strings.Contains(err.Error(), "nothing deleted") {
		t.Errorf("failed listing: %v", err)
	}
	if slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "Delete") }) {
		t.Errorf("a delete on a failed listing: %v", f.calls)
	}

	f = &sweepFake{pods: pods}
	var wg sync.WaitGroup
	reps := make([]Report, 2)
	for i := range reps {
		wg.Go(func() {
			var err error
			if reps[i], err = Once(context.Background(), f, clock); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := reps[0].Deleted() + reps[1].Deleted(); n < 1 || n > 2 {
		t.Errorf("%d deletes in two sweeps", n)
	}
	if rep, _ := Once(context.Background(), f, clock); rep.Deleted() != 0 || rep.Pods != 1 {
		t.Errorf("a third sweep: %+v", rep)
	}

	f = &sweepFake{pods: pods[:1], deletion: runpod.Stopped}
	if rep, err := Once(context.Background(), f, clock); err == nil || rep.Decisions[0].Err == nil {
		t.Errorf("a pod only stopped: %+v, %v", rep, err)
	}
}

// Host-key secrets: one whose pod exists is kept; one whose pod is gone is
// deleted once its run is older than the grace; one whose run id is not
// of NewRunID's form, and another secret, are not judged.
func TestSweepSecrets(t *testing.T) {
	f := &sweepFake{
		pods: []runpod.Pod{guarded("20260302-100000-aaaa", runpod.StatusRunning, time.Hour, time.Minute)},
		secrets: []runpod.Secret{
			{ID: "s1", Name: podenv.HostKeySecretName("20260302-100000-aaaa")},
			{ID: "s2", Name: podenv.HostKeySecretName("20260302-100000-bbbb")},
			{ID: "s3", Name: podenv.HostKeySecretName("20260302-113000-cccc")},
			{ID: "s4", Name: podenv.HostKeySecretName("my-run")},
			{ID: "s5", Name: "HF_TOKEN"},
		},
	}
	rep, err := Once(context.Background(), f, Policy{Now: func() time.Time { return sweepNow }})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range rep.Decisions {
		if d.Secret != "" {
			got[d.RunID] = d.Delete
		}
	}
	want := map[string]bool{"20260302-100000-aaaa": false, "20260302-100000-bbbb": true, "20260302-113000-cccc": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secret decisions (-want +got):\n%s", diff)
	}
	if !slices.Contains(f.calls, "DeleteSecret s2") || len(f.calls) != 3 {
		t.Errorf("calls %v, want one DeleteSecret s2", f.calls)
	}
}

// A secret whose run may still need it with no pod (a recovery on its
// network volume takes the same key) says until when in its description:
// it is left until then plus the secret grace, even when this sweep
// deletes its pod; a description the sweeper cannot read leaves it too.
// A secret that states nothing goes as before.
func TestSweepSecretNeededByItsRun(t *testing.T) {
	h := time.Hour
	const started = "20260302-070000-" // 5h before sweepNow
	secret := func(sid, run string, need time.Duration) runpod.Secret {
		s := runpod.Secret{ID: sid, Name: podenv.HostKeySecretName(started + run)}
		if need != 0 {
			s.Description = podenv.HostKeySecretDescription(started+run, sweepNow.Add(need))
		}
		return s
	}
	foreign := secret("sE", "eeee", 0)
	foreign.Description = "my note: the volume run of Tuesday"
	f := &sweepFake{
		pods: []runpod.Pod{guarded(started+"dddd", runpod.StatusExited, 2*h, time.Minute)},
		secrets: []runpod.Secret{
			secret("sA", "aaaa", 2*h),  // needed later
			secret("sB", "bbbb", -h/2), // needed until half an hour ago: within the grace
			secret("sC", "cccc", -2*h), // past its need and the grace
			secret("sD", "dddd", 2*h),  // its pod is deleted now, needed later
			foreign,                    // cannot be read
			secret("sF", "ffff", 0),    // states nothing, past the grace
			{ID: "sG", Name: podenv.HostKeySecretName(started + "a9a9"), Description: podenv.HostKeySecretDescription(started+"aaaa", sweepNow.Add(2*h))}, // another run's
		},
	}
	rep, err := Once(context.Background(), f, Policy{Now: func() time.Time { return sweepNow }})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range rep.Decisions {
		if d.Secret != "" {
			got[d.SecretID] = fmt.Sprintf("%s %v", d.Rule, d.Delete)
			if d.Why == "" {
				t.Errorf("%s: no why", d)
			}
		}
	}
	want := map[string]string{
		"sA": "keep false", "sB": "keep false", "sC": "secret_orphan true", "sD": "keep false",
		"sE": "cannot_judge false", "sF": "secret_orphan true", "sG": "cannot_judge false",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secret decisions (-want +got):\n%s", diff)
	}
	wantCalls := []string{"ListPods", "ListSecrets", "DeletePod pod-" + started + "dddd", "DeleteSecret sC", "DeleteSecret sF"}
	if diff := cmp.Diff(wantCalls, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestSweepPolicyRefusesNegatives(t *testing.T) {
	var fe *podenv.FieldError
	_, err := Once(context.Background(), &sweepFake{}, Policy{Margin: -time.Second})
	if !errors.As(err, &fe) || fe.Field != "Policy.Margin" {
		t.Errorf("Sweep with a negative margin: %v", err)
	}
}

// Write says the deletes and the unmarked pods (every decision on a dry
// run) and a total, or writes one JSON line per decision that reads back.
func TestReportWrite(t *testing.T) {
	f := &sweepFake{pods: []runpod.Pod{
		guarded("d", runpod.StatusExited, time.Hour, time.Minute),
		guarded("a", runpod.StatusRunning, time.Hour, time.Minute),
		{ID: "pod-x", Name: podenv.PodNamePrefix + "x", Status: runpod.StatusRunning},
	}}
	rep, err := Once(context.Background(), f, Policy{Now: func() time.Time { return sweepNow }})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.Write(&b, false, false, nil); err != nil {
		t.Fatal(err)
	}
	want := "deleted pod pod-d (overbrainer-d, EXITED): exited: EXITED, last started 59m0s ago, past the exited grace of 10m0s\n" +
		"NOT MARKED, left pod pod-x (overbrainer-x, RUNNING): unmarked: named like a guarded run's pod, but its env's run marker is \"\"\n" +
		"sweep: 3 pods, 0 secrets, 1 deleted\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("Write (-want +got):\n%s", diff)
	}
	b.Reset()
	if err := rep.Write(&b, true, false, nil); err != nil {
		t.Fatal(err)
	}
	var got []Decision
	for line := range strings.Lines(b.String()) {
		var d Decision
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, d)
	}
	if len(got) != 3 || got[0].Rule != RuleExited || !got[0].Done || got[2].Rule != RuleUnmarked {
		t.Errorf("JSON decisions %+v", got)
	}
}

// What the sweeper cannot prove abandoned it leaves: a large cap whose
// time does not fit a Duration, a pod without its creation time, a status
// it does not know, a kept pod that only stopped, a garbled marker of
// keep mode. Each was deleted before.
func TestSweepDoesNoHarm(t *testing.T) {
	h := time.Hour
	noCreated := guarded("b", runpod.StatusRunning, h, time.Minute, podenv.MaxCostEnv, "5")
	noCreated.CreatedAt = time.Time{}
	for _, tc := range []struct {
		name string
		pod  runpod.Pod
		rule Rule
	}{
		{"large valid cap, two minutes old", guarded("a", runpod.StatusRunning, 2*time.Minute, time.Minute,
			podenv.MaxCostEnv, "2000000000"), RuleKeep},
		{"no createdAt", noCreated, RuleCannotJudge},
		{"unknown status, never started", guarded("c", "PAUSED", h, -1), RuleCannotJudge},
		{"kept, exited long ago", guarded("d", runpod.StatusExited, 10*h, time.Minute, podenv.KeepEnv, "1"), RuleKeep},
		{"keep marker garbled, past deadline", guarded("e", runpod.StatusRunning, 30*h, time.Minute,
			podenv.KeepEnv, "yes", podenv.DeadlineEnv, unix(sweepNow.Add(-25*h))), RuleCannotJudge},
		{"deadline garbled", guarded("f", runpod.StatusRunning, 30*h, time.Minute, podenv.DeadlineEnv, "+1"), RuleCannotJudge},
		{"deadline past what the watchdog counts", guarded("g", runpod.StatusRunning, 30*h, time.Minute, podenv.DeadlineEnv, "9999999999"), RuleCannotJudge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &sweepFake{pods: []runpod.Pod{tc.pod}}
			rep, err := Once(context.Background(), f, Policy{Now: func() time.Time { return sweepNow }})
			if err != nil || len(rep.Decisions) != 1 {
				t.Fatalf("Sweep = %+v, %v", rep, err)
			}
			d := rep.Decisions[0]
			if d.Delete || slices.Contains(f.calls, "DeletePod "+tc.pod.ID) || d.Rule != tc.rule || d.Why == "" {
				t.Errorf("decision %s (rule %s, delete %v), want rule %s, left (calls %v)", d, d.Rule, d.Delete, tc.rule, f.calls)
			}
		})
	}
}

// A secrets listing that fails does not stop the pods from being judged
// and the abandoned ones deleted: only the secret cleanup is skipped, and
// the error says so.
func TestSweepWithoutSecrets(t *testing.T) {
	f := &sweepFake{
		pods:    []runpod.Pod{guarded("d", runpod.StatusExited, time.Hour, time.Minute), guarded("a", runpod.StatusRunning, time.Hour, time.Minute)},
		secrets: []runpod.Secret{{ID: "s2", Name: podenv.HostKeySecretName("20260302-100000-bbbb")}},
		secErr:  errors.New("graphql: gone"),
	}
	rep, err := Once(context.Background(), f, Policy{Now: func() time.Time { return sweepNow }})
	if err == nil || !strings.Contains(err.Error(), "secrets not swept") || !strings.Contains(err.Error(), "graphql: gone") {
		t.Errorf("Sweep error %v, want the secrets listing's, saying they were not swept", err)
	}
	if !slices.Contains(f.calls, "DeletePod pod-d") || slices.Contains(f.calls, "DeletePod pod-a") || rep.Deleted() != 1 {
		t.Errorf("calls %v, deleted %d: want pod-d deleted alone", f.calls, rep.Deleted())
	}
	if rep.SecretsSkipped == "" || slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "DeleteSecret") }) {
		t.Errorf("SecretsSkipped %q, calls %v", rep.SecretsSkipped, f.calls)
	}
}

// A dry run's report says every decision, the pods it cannot judge with
// the reason; a name from the API is escaped.
func TestReportSaysCannotJudge(t *testing.T) {
	odd := guarded("c", "PAUSED", time.Hour, -1)
	kept := guarded("k", runpod.StatusExited, time.Hour, time.Minute, podenv.KeepEnv, "1")
	f := &sweepFake{pods: []runpod.Pod{odd, kept, {ID: "pod-x", Name: podenv.PodNamePrefix + "x\x1b[31m", Status: runpod.StatusRunning}}}
	rep, err := Once(context.Background(), f, Policy{DryRun: true, Now: func() time.Time { return sweepNow }})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.Write(&b, false, false, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`CANNOT JUDGE, left pod pod-c (overbrainer-c, PAUSED): cannot_judge: status "PAUSED" is not one this sweeper knows`,
		"keep pod pod-k (overbrainer-k, EXITED): keep: kept (--keep-pod), EXITED: not running, its storage still bills",
		"NOT MARKED, left pod pod-x (overbrainer-x\\x1b[31m, RUNNING)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("the report holds an escape byte: %q", out)
	}
}

// The total says one pod and one secret in the singular.
func TestReportTotalCountsInWords(t *testing.T) {
	var b strings.Builder
	if err := (Report{Pods: 1, Secrets: 1}).Write(&b, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if want := "sweep: 1 pod, 1 secret, 0 deleted\n"; b.String() != want {
		t.Errorf("Write: %q, want %q", b.String(), want)
	}
}
