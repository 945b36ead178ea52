package guard

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/sweep"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// podsAPI is the fake Runpod making one pod after another: a create while
// the last pod is not gone is a second pod alive at once, which the test
// fails on.
type podsAPI struct {
	*fakeAPI
	t       *testing.T
	creates int
}

func (a *podsAPI) CreatePod(ctx context.Context, req runpod.CreatePodRequest) (*runpod.Pod, error) {
	a.mu.Lock()
	alive := a.podName != "" && !a.gone
	a.gone, a.deleted, a.status = false, false, runpod.StatusRunning
	a.mu.Unlock()
	if alive {
		a.t.Error("a pod was created while the run's last one was not confirmed gone")
	}
	a.creates++
	return a.fakeAPI.CreatePod(ctx, req)
}

// lost launches a run and loses its pod (EXITED, as a failed host leaves
// it) an hour later; it returns the harness, the API and the run's Record.
func lost(t *testing.T, spec func(*Spec)) (*harness, *podsAPI, Record) {
	h := newHarness(t, look{st: ready})
	a := &podsAPI{fakeAPI: h.api, t: t}
	s := h.spec()
	if spec != nil {
		spec(&s)
	}
	if s.NetworkVolumeID != "" {
		h.api.volumes[s.NetworkVolumeID] = 20
	}
	r, err := launch(context.Background(), a, s, h.options()...)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	h.clk.Sleep(context.Background(), time.Hour)
	a.setStatus(runpod.StatusExited, false)
	return h, a, r.Record()
}

// TestRelaunchOnePodAtATime: the lost pod is deleted and confirmed gone
// before the next is made; the new Record keeps the lost pod's attempt,
// with how it ended and what it cost, under the run's deadline.
func TestRelaunchOnePodAtATime(t *testing.T) {
	h, a, prev := lost(t, func(s *Spec) { s.MaxCostUSD = 5 })
	r, err := relaunch(context.Background(), a, prev, h.spec(), "host failed", h.options()...)
	if err != nil {
		t.Fatalf("Relaunch: %v", err)
	}
	calls := a.methods()
	del, create := -1, -1
	for i, m := range calls {
		if m == "DeletePod" && del < 0 {
			del = i
		}
		if m == "CreatePod" {
			create = i
		}
	}
	if del < 0 || create < del || a.creates != 2 {
		t.Errorf("calls %v: want the lost pod deleted before the next create", calls)
	}
	rec := r.Record()
	if len(rec.Attempts) != 2 || rec.Attempts[0].Ended != "host failed" || rec.Attempts[1].Outcome != OutcomeCreated || rec.Attempts[1].Ended != "" {
		t.Fatalf("attempts %+v", rec.Attempts)
	}
	if got, want := rec.Attempts[0].CostUSD, 0.69; got < want-0.01 || got > want+0.01 {
		t.Errorf("the lost pod's cost %v, want ~%v (an hour at 0.69/h)", got, want)
	}
	if !rec.Deadline.Equal(prev.Deadline) || rec.ID != prev.ID || rec.MoneyLeft(rec.earlierCost()) != 5-rec.Attempts[0].CostUSD {
		t.Errorf("deadline %s id %s budget %v: want the run's across pods", rec.Deadline, rec.ID, rec.MoneyLeft(rec.earlierCost()))
	}
	if env := a.created[1].Env[podenv.MaxCostEnv]; env == "" || env == "5" {
		t.Errorf("the new pod's cap in its env is %q, want what is left of 5", env)
	}
	// The run's worst case is the one planned before its first pod: the
	// bill of all its pods is held to it.
	if rec.WorstCase == nil || prev.WorstCase == nil || *rec.WorstCase != *prev.WorstCase {
		t.Errorf("worst case %+v after the recovery, want the run's %+v", rec.WorstCase, prev.WorstCase)
	}
}

// TestRelaunchOnVolumeTakesOver: the next pod of a run on a network
// volume keeps the run's host key and its secret, so that its claim on
// the run directory there is the run's, is told to take that directory
// over from the lost pod, and uploads nothing over the outputs there.
func TestRelaunchOnVolumeTakesOver(t *testing.T) {
	h, a, prev := lost(t, func(s *Spec) { s.NetworkVolumeID = "vol1" })
	spec := h.spec()
	spec.NetworkVolumeID = "vol1"
	spec.Job.ResumeFrom = t.TempDir()
	r, err := relaunch(context.Background(), a, prev, spec, "host failed", h.options()...)
	if err != nil {
		t.Fatalf("Relaunch: %v", err)
	}
	rec := r.Record()
	if rec.HostKey != prev.HostKey || rec.SecretID == "" || rec.SecretID != prev.SecretID {
		t.Errorf("host key %q secret %q: want the run's %q, %q", rec.HostKey, rec.SecretID, prev.HostKey, prev.SecretID)
	}
	a.mu.Lock()
	_, kept := a.secrets[rec.SecretName]
	a.mu.Unlock()
	if !kept {
		t.Errorf("the run's host key secret %s went", rec.SecretName)
	}
	if len(a.created) != 2 {
		t.Fatalf("%d creates", len(a.created))
	}
	first, next := a.created[0].Env, a.created[1].Env
	if _, ok := first[podenv.TakeOverEnv]; ok || next[podenv.TakeOverEnv] != "1" || next[podenv.ClaimEnv] != prev.HostKey {
		t.Errorf("take-over %q then %q, claim %q: want only the next pod to take over, under the run's claim",
			first[podenv.TakeOverEnv], next[podenv.TakeOverEnv], next[podenv.ClaimEnv])
	}
	if rec.ResumeFrom != "" {
		t.Errorf("ResumeFrom %q: a pull would go up over the outputs on the volume", rec.ResumeFrom)
	}
}

// TestRelaunchRefused: no new pod when the lost one cannot be confirmed
// gone, when the earlier pods spent the cap, or past the deadline.
func TestRelaunchRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*harness, *podsAPI, *Record)
		is    error
	}{
		{"delete unconfirmed", func(h *harness, a *podsAPI, _ *Record) {
			a.mu.Lock()
			a.lingers = -1
			a.mu.Unlock()
		}, ErrDeleteUnconfirmed},
		{"cap spent", func(h *harness, a *podsAPI, rec *Record) { rec.MaxCostUSD = 0.5 }, ErrCapSpent},
		{"deadline passed", func(h *harness, a *podsAPI, rec *Record) { h.clk.Sleep(context.Background(), 2*time.Hour) }, nil},
		{"network volume without its secret", func(h *harness, a *podsAPI, rec *Record) {
			// The new pod could not claim the run directory there.
			rec.NetworkVolumeID = "vol1"
			a.mu.Lock()
			delete(a.secrets, rec.SecretName)
			a.mu.Unlock()
		}, runpod.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, a, prev := lost(t, nil)
			tc.setup(h, a, &prev)
			r, err := relaunch(context.Background(), a, prev, h.spec(), "lost", h.options()...)
			if r != nil || err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Relaunch: %v, %v; want %v", r, err, tc.is)
			}
			if a.creates != 1 {
				t.Errorf("%d creates: the run got another pod", a.creates)
			}
		})
	}
}

// TestRecoverable: only a pod lost under the job, a failed verdict or a
// lost job are recovered; a rule's ending, a delete by someone, ctx never.
func TestRecoverable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&PodGoneError{PodID: "p", Status: runpod.StatusExited}, true},
		{&PodGoneError{PodID: "p", Status: runpod.StatusError}, true},
		{fmt.Errorf("following: %w", &PodGoneError{PodID: "p", Status: runpod.StatusExited}), true},
		{&PodGoneError{PodID: "p", Status: runpod.StatusExited, DeleteReason: watchdog.DeleteReason("deadline")}, false},
		{&PodGoneError{PodID: "p"}, false},
		{&PodGoneError{PodID: "p", Status: runpod.StatusTerminated}, false},
		{&VerdictError{Verdict: watchdog.ParseVerdict("failed probe")}, true},
		{End{How: HowLost, ExitCode: -1}.Err(), true},
		{End{How: HowExited, ExitCode: 1}.Err(), false},
		{&EnforcedError{Reason: watchdog.DeleteReason("cost_cap")}, false},
		{fmt.Errorf("%w: %w", context.Canceled, &PodGoneError{PodID: "p", Status: runpod.StatusExited}), false},
		{errors.New("other"), false},
		{nil, false},
	} {
		if got := Recoverable(tc.err); got != tc.want {
			t.Errorf("Recoverable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if !(End{How: HowRunDirLost}).Recoverable() || (End{How: HowExited}).Recoverable() || (End{How: HowCancelled}).Recoverable() {
		t.Error("End.Recoverable")
	}
}

// sweptAPI is the fake's account as a sweeper sees it: the pods it lists
// by prefix, and the secrets made, with their descriptions; a sweep's
// delete of a secret removes it.
type sweptAPI struct{ *fakeAPI }

func (a sweptAPI) ListSecrets(context.Context) ([]runpod.Secret, error) {
	defer a.called("sweep: ListSecrets")()
	var out []runpod.Secret
	for name := range a.secrets {
		out = append(out, runpod.Secret{ID: name, Name: name, Description: a.secretDescs[name]})
	}
	return out, nil
}

func (a sweptAPI) DeleteSecret(_ context.Context, id string) error {
	defer a.called("sweep: DeleteSecret %s", id)()
	delete(a.secrets, id)
	return nil
}

// TestRelaunchOnVolumeAfterASweep: a run on a network volume whose pod
// was lost long after its start keeps its host key through a sweep: the
// secret states until when the run may need it, so the sweeper leaves it,
// and the recovery's pod claims the run directory with it. It failed on
// main: a sweeper deleted the secret of a run with no pod once the run
// was older than its secret grace, and the recovery could make no pod.
func TestRelaunchOnVolumeAfterASweep(t *testing.T) {
	const id = "20260301-120000-abcd" // t0's
	h, a, prev := lost(t, func(s *Spec) { s.RunID, s.NetworkVolumeID, s.Deadline = id, "vol1", t0.Add(12*time.Hour) })
	h.clk.Sleep(context.Background(), 4*time.Hour) // 5 h since the start, past the secret grace
	rep, err := sweep.Once(context.Background(), sweptAPI{a.fakeAPI}, sweep.Policy{Now: h.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Decisions) != 1 || rep.Decisions[0].Delete || rep.Decisions[0].Rule != sweep.RuleKeep {
		t.Fatalf("sweep %+v: want the secret kept", rep.Decisions)
	}
	spec := h.spec()
	spec.RunID, spec.NetworkVolumeID, spec.Deadline = id, "vol1", prev.Deadline
	r, err := relaunch(context.Background(), a, prev, spec, "host failed", h.options()...)
	if err != nil {
		t.Fatalf("Relaunch after the sweep: %v", err)
	}
	if rec := r.Record(); rec.SecretID != prev.SecretID || rec.HostKey != prev.HostKey || a.creates != 2 {
		t.Errorf("secret %q host key %q, %d creates: want the run's, and a second pod", rec.SecretID, rec.HostKey, a.creates)
	}
}

// The host key secret of a run on a network volume states until when the
// run may need it with no pod: its deadline plus its extension, and the
// longest wait for capacity when that wait moves the deadline. Another
// run's secret states nothing, for its pod's next one makes its own.
func TestHostKeySecretStatesItsNeed(t *testing.T) {
	deadline := t0.Add(6 * time.Hour)
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		need time.Time // zero: no description
	}{
		{"no volume", func(*Spec) {}, time.Time{}},
		{"volume", func(s *Spec) { s.NetworkVolumeID = "vol1" }, deadline.Add(time.Hour)},
		{"volume, extension 3h", func(s *Spec) { s.NetworkVolumeID, s.MaxExtension = "vol1", 3*time.Hour }, deadline.Add(3 * time.Hour)},
		{"volume, hard deadline", func(s *Spec) { s.NetworkVolumeID, s.HardDeadline = "vol1", true }, deadline},
		{"volume, deadline from the create", func(s *Spec) {
			s.NetworkVolumeID, s.CapacityWait, s.DeadlineFromCreate = "vol1", 2*time.Hour, true
		}, deadline.Add(3 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, look{st: ready})
			h.api.volumes["vol1"] = 20
			spec := h.spec()
			spec.Deadline = deadline
			tc.edit(&spec)
			r, err := h.launch(context.Background(), spec)
			if err != nil {
				t.Fatalf("Launch: %v", err)
			}
			name := r.Record().SecretName
			h.api.mu.Lock()
			got, made := h.api.secretDescs[name]
			h.api.mu.Unlock()
			want := ""
			if !tc.need.IsZero() {
				want = podenv.HostKeySecretDescription(spec.RunID, tc.need)
			}
			if !made || got != want {
				t.Errorf("description %q (made %v), want %q", got, made, want)
			}
		})
	}
}
