package guard

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/sweep"
	"golang.org/x/crypto/ssh"
)

// withStock gives the launch a catalog cache of its own: the process's
// would carry reads over from another test.
func withStock(s *stockCache) Option { return func(cfg *config) { cfg.stock = s } }

// capAPI is the fake Runpod with a GPU type out of stock until a time on
// the fake clock: the catalog shows it NONE and a create answers the
// capacity 400 until then.
type capAPI struct {
	*fakeAPI
	clk   *fakeClock
	until time.Time
	reads []time.Time // when the catalog was read
	tries []time.Time // when a create was sent
	// sweepAt, when set, is when a sweeper deletes the account's secrets,
	// as its secret_orphan rule does to a run with no pod past its grace.
	sweepAt time.Time
	swept   map[string]string // the secrets it deleted
}

const capacityText = "There are no longer any instances available with the requested specifications. Please refresh and try again."

func (a *capAPI) back() bool { return !a.clk.Now().Before(a.until) }

func (a *capAPI) CreatePod(ctx context.Context, req runpod.CreatePodRequest) (*runpod.Pod, error) {
	a.tries = append(a.tries, a.clk.Now())
	if !a.back() {
		a.call("CreatePod %s (no capacity)", req.Name)
		return nil, &runpod.APIError{Method: "POST", Path: "/pods", StatusCode: http.StatusBadRequest, Detail: capacityText}
	}
	return a.fakeAPI.CreatePod(ctx, req)
}

func (a *capAPI) ListGPUTypes(ctx context.Context, opts ...runpod.CatalogOption) ([]runpod.GPUType, error) {
	a.reads = append(a.reads, a.clk.Now())
	if !a.sweepAt.IsZero() && !a.clk.Now().Before(a.sweepAt) && len(a.secrets) > 0 {
		a.call("sweep: secrets deleted")
		a.swept = maps.Clone(a.secrets)
		clear(a.secrets)
	}
	types, err := a.fakeAPI.ListGPUTypes(ctx, opts...)
	for i := range types {
		types[i].Availability = runpod.StockNone
		if a.back() {
			types[i].Availability = runpod.StockHigh
		}
	}
	return types, err
}

func newCapHarness(t *testing.T, until time.Duration) (*harness, *capAPI) {
	h := newHarness(t, look{st: ready})
	return h, &capAPI{fakeAPI: h.api, clk: h.clk, until: t0.Add(until)}
}

func (h *harness) launchOn(ctx context.Context, c api, spec Spec, extra ...Option) (*Run, error) {
	return launch(ctx, c, spec, h.options(append([]Option{withStock(&stockCache{})}, extra...)...)...)
}

// TestCapacityWaitCreatesWhenBack: every create answering the capacity
// 400, the launch waits, reading the catalog at most once per 30 s, tries
// no create while the catalog shows no stock, and creates its one pod
// soon after the type is back; the deadline still counts from the launch.
func TestCapacityWaitCreatesWhenBack(t *testing.T) {
	h, a := newCapHarness(t, 7*time.Minute)
	spec := h.spec()
	spec.CapacityWait = time.Hour
	r, err := h.launchOn(context.Background(), a, spec)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if len(a.tries) != 2 || a.tries[0] != t0 || a.tries[1].Before(a.until) || a.tries[1].After(a.until.Add(lastCapacityLook*5/4+catalogEvery)) {
		t.Errorf("creates at %v, want one at %s and one soon after %s", a.tries, t0, a.until)
	}
	for i := 1; i < len(a.reads); i++ {
		if d := a.reads[i].Sub(a.reads[i-1]); d < catalogEvery {
			t.Errorf("catalog read %s after the one before", d)
		}
	}
	waits := h.eventsAt(EventWaiting, StageCapacity)
	if len(waits) < 3 {
		t.Fatalf("%d capacity waits told, want several", len(waits))
	}
	for i, e := range waits {
		if e.Next <= 0 || e.Next > lastCapacityLook*5/4 || (i > 0 && e.Elapsed <= waits[i-1].Elapsed) {
			t.Errorf("wait %d: %+v", i, e)
		}
	}
	// No pod existed while it waited: its create came after every wait.
	if created := h.eventsOf(EventCreated); len(created) != 1 || created[0].Time.Before(waits[len(waits)-1].Time) {
		t.Errorf("created %+v after waits ending %s", created, waits[len(waits)-1].Time)
	}
	rec := r.Record()
	if !rec.Deadline.Equal(spec.Deadline) || a.created[0].Env[podenv.DeadlineEnv] != strconv.FormatInt(spec.Deadline.Unix(), 10) {
		t.Errorf("deadline %s (env %s), want the Spec's %s", rec.Deadline, a.created[0].Env[podenv.DeadlineEnv], spec.Deadline)
	}
	if got := []Outcome{rec.Attempts[0].Outcome, rec.Attempts[len(rec.Attempts)-1].Outcome}; got[0] != OutcomeNoCapacity || got[1] != OutcomeCreated {
		t.Errorf("attempts %+v", rec.Attempts)
	}
}

// TestCapacityWaitMovesTheDeadline: with DeadlineFromCreate the deadline
// (the Record's and the pod's env) counts from the create.
func TestCapacityWaitMovesTheDeadline(t *testing.T) {
	h, a := newCapHarness(t, 7*time.Minute)
	spec := h.spec()
	spec.CapacityWait, spec.DeadlineFromCreate = time.Hour, true
	r, err := h.launchOn(context.Background(), a, spec)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	waited := a.tries[len(a.tries)-1].Sub(t0)
	want := spec.Deadline.Add(waited).Truncate(time.Second)
	if got := r.Record().Deadline; !got.Equal(want) || a.created[0].Env[podenv.DeadlineEnv] != strconv.FormatInt(want.Unix(), 10) {
		t.Errorf("deadline %s (env %s), want %s: the Spec's moved on by the %s wait", got, a.created[0].Env[podenv.DeadlineEnv], want, waited)
	}
	if e := h.eventsOf(EventCreated); len(e) != 1 || !e[0].Deadline.Equal(want) {
		t.Errorf("created event %+v", e)
	}
}

// TestCapacityWaitKeepsTheSecret: a sweeper deletes the host key secret
// of a run that waited for capacity past the secret grace. The launch
// makes it again, with the same key, before its pod; a recovery on a
// network volume, whose kept secret cannot be made again, fails before
// any pod and says why.
func TestCapacityWaitKeepsTheSecret(t *testing.T) {
	t.Run("own key", func(t *testing.T) {
		h, a := newCapHarness(t, 90*time.Minute)
		a.sweepAt = t0.Add(sweep.DefaultSecretGrace)
		spec := h.spec()
		spec.CapacityWait, spec.Deadline = 3*time.Hour, t0.Add(4*time.Hour)
		r, err := h.launchOn(context.Background(), a, spec)
		if err != nil {
			t.Fatalf("Launch: %v\n%v", err, a.allCalls())
		}
		name := r.Record().SecretName
		if calls := strings.Join(a.methods(), " "); !strings.Contains(calls, "sweep: ListGPUTypes") || !strings.Contains(calls, "FindSecret CreateSecret CreatePod") {
			t.Errorf("calls %s: want the secret made again after the sweep, before the pod", calls)
		}
		if before, after := secretKey(t, a.swept[name]), secretKey(t, a.secrets[name]); !bytes.Equal(before, after) {
			t.Error("the secret was made again with another key than the pod's claim")
		}
		if w := h.eventsOf(EventWarning); len(w) != 1 || !strings.Contains(w[0].Err.Error(), "deleted during the wait") {
			t.Errorf("warnings %+v, want one that says the secret was made again", w)
		}
		if w := h.eventsOf(EventWarning); len(w) != 1 || !strings.Contains(w[0].Err.Error(), "deleted during the wait") {
			t.Errorf("warnings %+v", w)
		}
	})
	t.Run("kept for a volume recovery", func(t *testing.T) {
		h, a := newCapHarness(t, 90*time.Minute)
		a.sweepAt = t0.Add(sweep.DefaultSecretGrace)
		spec := h.spec()
		spec.CapacityWait, spec.Deadline = 3*time.Hour, t0.Add(4*time.Hour)
		host, err := podssh.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		a.secrets = map[string]string{podenv.HostKeySecretName(spec.RunID): "kept"}
		kept := func(c *config) { c.keptHost = keptHost{claim: host.AuthorizedKey(""), secretID: fakeSecretID} }
		r, err := h.launchOn(context.Background(), a, spec, kept)
		if r != nil || !errors.Is(err, runpod.ErrNotFound) || !strings.Contains(err.Error(), "could not claim the run directory") {
			t.Fatalf("Launch: a run %v, %v; want no run and the deleted secret named", r != nil, err)
		}
		if len(a.created) != 0 || a.count("CreateSecret") != 0 {
			t.Errorf("calls %v", a.allCalls())
		}
	})
}

// TestCapacityWaitEnds: the wait ends with ErrNoGPU at its limit, or at
// the deadline when that comes first, and when ctx ends; never a pod,
// and the secret is deleted each time.
func TestCapacityWaitEnds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wait     time.Duration
		deadline time.Duration
		fromCrt  bool
		cancel   bool
		is       error
		by       time.Duration
	}{
		{"limit", 10 * time.Minute, 2 * time.Hour, false, false, ErrNoGPU, 10 * time.Minute},
		{"deadline first", time.Hour, 20 * time.Minute, false, false, ErrNoGPU, 20 * time.Minute},
		{"deadline from create: limit", 30 * time.Minute, 20 * time.Minute, true, false, ErrNoGPU, 30 * time.Minute},
		{"cancelled", time.Hour, 2 * time.Hour, false, true, context.Canceled, lastCapacityLook},
		{"no wait", 0, 2 * time.Hour, false, false, ErrNoGPU, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, a := newCapHarness(t, 1000*time.Hour)
			spec := h.spec()
			spec.CapacityWait, spec.Deadline, spec.DeadlineFromCreate = tc.wait, t0.Add(tc.deadline), tc.fromCrt
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			waits := 0
			r, err := h.launchOn(ctx, a, spec, WithEvents(func(e Event) {
				if e.Kind == EventWaiting && e.Stage == StageCapacity {
					waits++
					if tc.cancel {
						cancel()
					}
				}
			}))
			if r != nil || !errors.Is(err, tc.is) {
				t.Fatalf("Launch: %v, %v; want %v", r, err, tc.is)
			}
			if end := h.clk.Now(); end.After(t0.Add(tc.by)) {
				t.Errorf("the launch ended at %s, want by %s", end.Sub(t0), tc.by)
			}
			if n := a.count("CreatePod"); n == 0 || len(a.created) != 0 {
				t.Errorf("%d creates, %d pods made", n, len(a.created))
			}
			if a.count("DeleteSecret") != 1 || h.lastSaved().Phase != PhaseFailed {
				t.Errorf("calls %v, phase %s", a.allCalls(), h.lastSaved().Phase)
			}
			if (waits == 0) != (tc.wait == 0) {
				t.Errorf("%d waits told", waits)
			}
		})
	}
}

// TestCapacityWaitAuto: AutoGPU finding no type in stock waits too, and
// picks the type from the catalog once it is back.
func TestCapacityWaitAuto(t *testing.T) {
	h, a := newCapHarness(t, 3*time.Minute)
	spec := h.spec()
	spec.GPUTypes, spec.CapacityWait = []string{AutoGPU}, time.Hour
	r, err := h.launchOn(context.Background(), a, spec)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if len(a.tries) != 1 || a.tries[0].Before(a.until) || r.Record().GPU != DefaultGPU {
		t.Errorf("creates at %v of %q, want one after %s", a.tries, r.Record().GPU, a.until)
	}
	if len(h.eventsAt(EventWaiting, StageCapacity)) == 0 {
		t.Error("no wait told")
	}
}

// secretKey is the public key of a host key secret's value.
func secretKey(t *testing.T, value string) []byte {
	t.Helper()
	pem, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		t.Fatalf("secret value: %v", err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatalf("secret value: %v", err)
	}
	return signer.PublicKey().Marshal()
}
