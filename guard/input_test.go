package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// fields lists the Field of every *podenv.FieldError in err's tree.
func fields(err error) []string {
	if fe, ok := err.(*podenv.FieldError); ok {
		return []string{fe.Field}
	}
	var out []string
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, fields(e)...)
		}
	case interface{ Unwrap() error }:
		out = fields(u.Unwrap())
	}
	return out
}

// A Spec that cannot be armed fails before any pod or secret exists,
// naming each bad field; only the look-ups that check a field are made.
func TestLaunchRefusesBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name  string
		edit  func(*Spec)
		opts  []Option
		want  []string
		calls []string
	}{
		{"no deadline without keep", func(s *Spec) { s.Deadline = time.Time{} }, nil, []string{"Spec.Deadline"}, nil},
		{"a deadline passed", func(s *Spec) { s.Deadline = t0.Add(-time.Minute) }, nil, []string{"Spec.Deadline"}, nil},
		{"a missing job directory", func(s *Spec) { s.Job.Dir = missing }, nil, []string{"Spec.Job.Dir"}, nil},
		{"no command", func(s *Spec) { s.Job.Command = " " }, nil, []string{"Spec.Job.Command"}, nil},
		{"a bad run id", func(s *Spec) { s.RunID = "run 1/.." }, nil, []string{"Spec.RunID"}, nil},
		{"two at once", func(s *Spec) { s.RunID, s.Deadline = "-/-", time.Time{} }, nil, []string{"Spec.RunID", "Spec.Deadline"}, nil},
		{"a negative extension", func(s *Spec) { s.MaxExtension = -time.Hour }, nil, []string{"Spec.MaxExtension"}, nil},
		{"an extension with a hard deadline", func(s *Spec) { s.MaxExtension, s.HardDeadline = time.Hour, true }, nil, []string{"Spec.MaxExtension"}, nil},
		{"unbounded keep without keep", func(s *Spec) { s.KeepUnbounded = true }, nil, []string{"Spec.KeepUnbounded"}, nil},
		{"an idle bound with unbounded keep", func(s *Spec) { s.Keep, s.KeepUnbounded, s.KeepIdle = true, true, time.Hour }, nil, []string{"Spec.KeepIdle"}, nil},
		{"a negative idle bound", func(s *Spec) { s.Keep, s.KeepIdle = true, -time.Minute }, nil, []string{"Spec.KeepIdle"}, nil},
		{"the idle bound in PodEnv", func(s *Spec) { s.PodEnv = map[string]string{podenv.KeepIdleEnv: "0"} }, nil, []string{"Spec.PodEnv"}, nil},
		{"the host key in PodEnv", func(s *Spec) { s.PodEnv = map[string]string{podenv.HostKeyEnv: "x"} }, nil, []string{"Spec.PodEnv"}, nil},
		// The watchdog's own settings: keep mode, a knob, one Env never writes.
		{"keep mode in PodEnv", func(s *Spec) { s.PodEnv = map[string]string{podenv.KeepEnv: "1"} }, nil, []string{"Spec.PodEnv"}, nil},
		{"a knob in PodEnv", func(s *Spec) { s.PodEnv = map[string]string{podenv.MaxExtensionEnv: "99999"} }, nil, []string{"Spec.PodEnv"}, nil},
		{"the contract number in PodEnv", func(s *Spec) { s.PodEnv = map[string]string{podenv.ContractEnv: "1"} }, nil, []string{"Spec.PodEnv"}, nil},
		{"a cost cap on a GPU type without a price", func(s *Spec) { s.MaxCostUSD, s.GPUTypeID = 5, "NVIDIA Nothing" }, nil,
			[]string{"Spec.MaxCostUSD"}, []string{"GetGPUType"}},
		{"a cost cap on a cloud without the type", func(s *Spec) { s.MaxCostUSD, s.Cloud = 5, runpod.CommunityCloud }, nil,
			[]string{"Spec.MaxCostUSD"}, []string{"GetGPUType"}},
		{"an unknown network volume", func(s *Spec) { s.NetworkVolumeID = "vol-9" }, nil,
			[]string{"Spec.NetworkVolumeID"}, []string{"GetNetworkVolume"}},
		{"a largest volume size without a network volume", func(s *Spec) { s.MaxVolumeGB = 100 }, nil, []string{"Spec.MaxVolumeGB"}, nil},
		{"a largest volume size past Runpod's", func(s *Spec) { s.NetworkVolumeID, s.MaxVolumeGB = "vol-1", runpod.MaxVolumeGB+1 }, nil,
			[]string{"Spec.MaxVolumeGB"}, nil},
		{"a lease renewed no sooner than it lapses", nil, []Option{WithLeaseEvery(podenv.DefaultLeaseTTL)}, []string{"WithLeaseEvery"}, nil},
		{"no poll interval", nil, []Option{WithPoll(0)}, []string{"WithPoll"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			spec := h.spec()
			if tc.edit != nil {
				tc.edit(&spec)
			}
			r, err := h.launch(context.Background(), spec, tc.opts...)
			if r != nil || err == nil {
				t.Fatalf("Launch = %v, %v", r, err)
			}
			if diff := cmp.Diff(tc.want, fields(err)); diff != "" {
				t.Errorf("fields of %v (-want +got):\n%s", err, diff)
			}
			if diff := cmp.Diff(tc.calls, h.api.methods()); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
			if h.dialCount() != 0 || len(h.allSaved()) != 0 {
				t.Errorf("%d dials, %d records saved, want none", h.dialCount(), len(h.allSaved()))
			}
		})
	}
}

// A bad job given to Start is refused, naming the field, and ends nothing.
func TestStartRefusesABadJob(t *testing.T) {
	h := newHarness(t, look{st: ready})
	ctx := context.Background()
	r, err := h.launch(ctx, h.spec())
	if err != nil {
		t.Fatal(err)
	}
	err = r.Start(ctx, Job{Dir: filepath.Join(t.TempDir(), "missing"), Command: "true"})
	if diff := cmp.Diff([]string{"Job.Dir"}, fields(err)); diff != "" {
		t.Errorf("fields of %v (-want +got):\n%s", err, diff)
	}
	if n := h.api.count("DeletePod"); n != 0 || len(h.pod.starts) != 0 {
		t.Errorf("%d deletes, %d starts after a refused job", n, len(h.pod.starts))
	}
}

// launched is a run's Record after a Launch, its connection closed.
func launched(t *testing.T, h *harness) Record {
	t.Helper()
	r, err := h.launch(context.Background(), h.spec())
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	return r.Record()
}

// A Record that is not its pod's run is refused before anything is sent
// to the pod, and nothing is deleted: the pod may be someone else's.
func TestRecordOfAnotherRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Record, *fakeAPI)
	}{
		{"another pod name", func(r *Record, _ *fakeAPI) { r.PodName = podenv.PodNamePrefix + "run2" }},
		{"another run id", func(r *Record, _ *fakeAPI) { r.ID = "run2" }},
		{"another secret", func(r *Record, _ *fakeAPI) { r.SecretName = podenv.HostKeySecretName("run2") }},
		{"another API", func(r *Record, _ *fakeAPI) { r.APIURL = "https://elsewhere.example/v2" }},
		{"a pod of another name", func(_ *Record, a *fakeAPI) { a.podName = podenv.PodNamePrefix + "run2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, look{st: ready})
			rec := launched(t, h)
			tc.edit(&rec, h.api)
			dials := h.dialCount()
			r, err := attach(context.Background(), h.api, rec, h.options()...)
			if r != nil || !errors.Is(err, ErrRecordMismatch) {
				t.Fatalf("attach = %v, %v; want ErrRecordMismatch", r, err)
			}
			if h.dialCount() != dials {
				t.Error("attach dialled the pod of another run")
			}
			if n, m := h.api.count("DeletePod"), h.api.count("DeleteSecret"); n != 0 || m != 0 {
				t.Errorf("attach deleted %d pods and %d secrets", n, m)
			}
		})
	}
}

// A server without the run's host key is refused at the first dial, never
// dialled again: in Launch and Attach, and in a reconnect.
func TestHostKeyMismatchIsFinal(t *testing.T) {
	mismatch := fmt.Errorf("fake: handshake: %w", podssh.ErrHostKeyMismatch)
	ctx := context.Background()
	t.Run("launch", func(t *testing.T) {
		h := newHarness(t, look{st: ready})
		h.dialErrs = []error{mismatch}
		if _, err := h.launch(ctx, h.spec()); !errors.Is(err, podssh.ErrHostKeyMismatch) {
			t.Fatalf("Launch: %v", err)
		}
		if n := h.dialCount(); n != 1 {
			t.Errorf("%d dials, want 1", n)
		}
		// The verdict was never read: nothing guards the pod but us.
		if n := h.api.count("DeletePod"); n != 1 {
			t.Errorf("%d pod deletes, want 1", n)
		}
	})
	t.Run("attach", func(t *testing.T) {
		h := newHarness(t, look{st: ready})
		rec := launched(t, h)
		h.dialErrs = []error{mismatch}
		if _, err := attach(ctx, h.api, rec, h.options()...); !errors.Is(err, podssh.ErrHostKeyMismatch) {
			t.Fatalf("attach: %v", err)
		}
		if n := h.dialCount(); n != 2 {
			t.Errorf("%d dials, want 2 (the launch's and one)", n)
		}
	})
	t.Run("reconnect", func(t *testing.T) {
		h := newHarness(t, look{st: ready}, look{st: running}, look{err: io.ErrUnexpectedEOF}, look{st: running})
		r := h.mustStart(h.spec())
		h.dialErrs = []error{mismatch}
		if _, err := r.Follow(ctx, io.Discard); !errors.Is(err, podssh.ErrHostKeyMismatch) {
			t.Fatalf("Follow: %v", err)
		}
		if n := h.dialCount(); n != 2 {
			t.Errorf("%d dials, want 2", n)
		}
		if slices.Contains(h.kinds(), EventReconnected.String()) {
			t.Error("told reconnected")
		}
	})
}

// Launch tells of the account's guarded pods that nothing will delete
// (EXITED or ERROR: their watchdogs no longer run), and of no others.
func TestLaunchWarnsOfUnguardedPods(t *testing.T) {
	h := newHarness(t, look{st: ready})
	h.api.others = []runpod.Pod{
		{ID: "p-old", Name: podenv.PodNamePrefix + "old-1", Status: runpod.StatusExited},
		{ID: "p-live", Name: podenv.PodNamePrefix + "live-2", Status: runpod.StatusRunning},
		{ID: "p-err", Name: podenv.PodNamePrefix + "bad-3", Status: runpod.StatusError},
	}
	if _, err := h.launch(context.Background(), h.spec()); err != nil {
		t.Fatal(err)
	}
	ws := h.eventsOf(EventWarning)
	if len(ws) != 1 {
		t.Fatalf("warnings %v, want one", ws)
	}
	w := ws[0].Err.Error()
	for _, want := range []string{"2 guarded pods", "p-old", "p-err", "nothing will delete them"} {
		if !strings.Contains(w, want) {
			t.Errorf("the warning %q does not say %q", w, want)
		}
	}
	if strings.Contains(w, "p-live") {
		t.Errorf("the warning %q names a pod its watchdog guards", w)
	}
}

// testPodEnv is the env podenv writes for s, with a workdir and keys
// filled in.
func testPodEnv(t testing.TB, s podenv.Settings) map[string]string {
	t.Helper()
	s.Workdir = "/workspace/overbrainer"
	s.AuthorizedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcomaqb8ckRepkDHH1CfKQjIlXD1MGWnmwCZJZcsNG3"
	s.Claim = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV"
	env, err := s.Env()
	if err != nil {
		t.Fatal(err)
	}
	return env
}
