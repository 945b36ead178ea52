// Package doctor proves, against a Runpod account (or the emulator), what
// this module relies on and no document states: that the key reads every
// list the SDK reads and the client decodes each answer, that a secret with
// a run id's dash in its name and a description round-trips byte for byte,
// and that a guarded pod comes up ready with its host key (its secret
// placeholder resolved) and is deleted by its own watchdog with its own key.
//
// Run returns a typed Report and never prints; the launcher's "launch
// doctor" words it. Everything Run makes is removed and confirmed gone
// before it returns, whatever failed, ctx ending included.
//
// It lives apart from guard, which it drives through guard's public Launch
// like any program: guard's documentation stays about running jobs.
package doctor

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Result is the outcome of one check.
type Result string

// The results of a check. Only ResultFail fails the report.
const (
	ResultOK      Result = "ok"
	ResultFail    Result = "fail"
	ResultWarn    Result = "warn"
	ResultSkipped Result = "skipped"
)

// The checks' names, in the order Run makes them.
const (
	CheckPods       = "key: pods"
	CheckGPUTypes   = "key: gpu types"
	CheckSecrets    = "key: secrets"
	CheckRegistries = "key: registries"
	CheckVolumes    = "key: network volumes"
	CheckBilling    = "key: billing"
	CheckOpenAPI    = "api: OpenAPI text as ours"
	CheckSecretMake = "secret: create (dashed name, description)"
	CheckSecretRead = "secret: read back byte for byte"
	CheckSecretEdit = "secret: update"
	CheckSecretGone = "secret: delete, confirmed gone"
	CheckPodBody    = "pod: create body size"
	CheckPodReady   = "pod: ready, host key matches"
	CheckPodFields  = "pod: fields"
	CheckPodDelete  = "pod: its own key deletes it"
	CheckPodGone    = "pod: gone (account key)"
	CheckCleanup    = "cleanup: nothing left"
)

// Check is one proven (or refuted) assumption.
type Check struct {
	Name   string `json:"name"`
	Result Result `json:"result"`
	// Detail is what was seen: sizes, codes, the error.
	Detail string `json:"detail,omitempty"`
	// Meaning is what the result means for a run.
	Meaning string `json:"meaning"`
}

// Report is what Run found. It holds no secret value.
type Report struct {
	APIURL  string        `json:"api_url"`
	Checks  []Check       `json:"checks"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// PodID and GPU are the test pod's, when one was made: GPU is its
	// GPU type, or its CPU flavor for a CPU pod (CPU).
	PodID string `json:"pod_id,omitempty"`
	GPU   string `json:"gpu,omitempty"`
	CPU   bool   `json:"cpu,omitempty"`
	// CreateBodyBytes is the size of the pod's create body (0: none sent).
	CreateBodyBytes int `json:"create_body_bytes,omitempty"`
	// CostPerHr and EstimateUSD are the pod's price and its estimated
	// cost (price × the time from its create to its delete).
	CostPerHr   float64 `json:"cost_per_hr,omitempty"`
	EstimateUSD float64 `json:"estimate_usd"`
	// BilledUSD is what Runpod billed the pod, read once it is gone; nil
	// while Runpod has not billed it (its billing lags) or could not say.
	BilledUSD *float64 `json:"billed_usd"`
	// APIChanges are how the live OpenAPI text differs from ours, for the
	// operations this SDK calls (CheckOpenAPI).
	APIChanges []APIChange `json:"api_changes,omitempty"`
	// Interrupted says ctx was cancelled before every check ran: those
	// not run are skipped.
	Interrupted bool `json:"interrupted,omitempty"`
}

// OK reports that no check failed (warnings do not fail).
func (r Report) OK() bool { return len(r.Failed()) == 0 }

// Failed returns the checks that failed.
func (r Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Result == ResultFail {
			out = append(out, c)
		}
	}
	return out
}

// Check returns the check named name.
func (r Report) Check(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// DefaultTimeout bounds a whole Run.
const DefaultTimeout = 3 * time.Minute

// Options say what Run talks to and how.
type Options struct {
	Key     string // the account key
	BaseURL string // REST v2 base URL: runpod.DefaultBaseURL when empty
	// Transport carries the requests (nil: http.DefaultTransport).
	Transport http.RoundTripper
	UserAgent string
	Logger    *slog.Logger
	// Timeout bounds the run (DefaultTimeout when 0); the cleanup gets a
	// minute more of its own.
	Timeout time.Duration
	// NoPod skips the pod's checks (the account ones alone cost nothing).
	NoPod bool
	// AccountOnly makes the read-only checks alone: the key's lists and
	// the live OpenAPI text (what the launcher runs once per key).
	AccountOnly bool
	// BootGrace and Interval are the test pod watchdog's: the pod is never
	// given a job, so the watchdog deletes it a BootGrace after its boot
	// (defaults 1m and 5s).
	BootGrace, Interval time.Duration
	// PodEnv adds variables to the pod's env (tests).
	PodEnv map[string]string
	// DeleteCodes, when set, tells the statuses the API answered to the
	// pod's own key's deletes of pod id (the emulator's request log); by
	// default they are read from the pod log's delete_code lines.
	DeleteCodes func(podID string) []int
	// Progress, when set, is told each check as it ends.
	Progress func(Check)
}

// Run makes every check and returns the report; it removes what it made,
// with a context of its own, before it returns.
func Run(ctx context.Context, o Options) (rep Report) {
	start := time.Now()
	d := &doc{o: o, rec: &recorder{base: cmp.Or[http.RoundTripper](o.Transport, http.DefaultTransport), bodies: map[string][]byte{}}}
	copts := []runpod.Option{runpod.WithHTTPClient(&http.Client{Timeout: runpod.DefaultTimeout, Transport: d.rec})}
	if o.BaseURL != "" {
		copts = append(copts, runpod.WithBaseURL(o.BaseURL))
	}
	if o.UserAgent != "" {
		copts = append(copts, runpod.WithUserAgent(o.UserAgent))
	}
	if o.Logger != nil {
		copts = append(copts, runpod.WithLogger(o.Logger))
	}
	c, err := runpod.New(o.Key, copts...)
	if err != nil {
		d.add(CheckPods, ResultFail, err.Error(), "no client: nothing can be checked")
		return d.rep
	}
	d.c = c
	d.rep.APIURL = c.BaseURL()
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(o.Timeout, DefaultTimeout))
	defer cancel()
	// Deferred: a panic in a check still removes what was made.
	defer func() {
		d.cleanup()
		d.bill()
		d.rep.Elapsed = time.Since(start)
		rep = d.rep
	}()
	d.account(ctx)
	d.openAPI(ctx)
	if o.AccountOnly {
		return d.rep
	}
	d.secret(ctx)
	if o.NoPod {
		for _, n := range []string{CheckPodBody, CheckPodReady, CheckPodFields, CheckPodDelete, CheckPodGone} {
			d.add(n, ResultSkipped, "no pod asked for", "not proven: the first run proves it, or fails")
		}
	} else {
		d.pod(ctx)
	}
	return d.rep
}

type doc struct {
	o   Options
	c   *runpod.Client
	rec *recorder
	rep Report

	mu sync.Mutex
	// made, to remove whatever fails: secret ids, and the pod's record.
	secretIDs []string
	podRec    *guard.Record
}

func (d *doc) add(name string, r Result, detail, meaning string) {
	ch := Check{Name: name, Result: r, Detail: detail, Meaning: meaning}
	d.rep.Checks = append(d.rep.Checks, ch)
	if d.o.Progress != nil {
		d.o.Progress(ch)
	}
}

// failed adds the check as failed with err, or as skipped when err is
// ctx's interruption (Ctrl-C), which proves nothing about the account.
func (d *doc) failed(ctx context.Context, name string, err error, meaning string) {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		d.rep.Interrupted = true
		d.add(name, ResultSkipped, "interrupted: "+err.Error(), "not proven")
		return
	}
	d.add(name, ResultFail, err.Error(), meaning)
}

// account lists what the key must read, each decoded by the client and its
// answer held to the fields the client reads.
func (d *doc) account(ctx context.Context) {
	c := d.c
	lists := []struct {
		name, path, meaning string
		list                func() (int, error)
	}{
		{CheckPods, "/pods", "runs, ls, sweep and rm find pods by listing them", func() (int, error) {
			pods, err := c.ListPods(ctx, runpod.ListPodsOptions{})
			for _, p := range pods {
				if p.Unreadable != nil {
					return len(pods), fmt.Errorf("pod %s: %v", p.ID, p.Unreadable)
				}
			}
			return len(pods), err
		}},
		{CheckGPUTypes, "/catalog/gpus", "run picks and prices a GPU type from the catalog", func() (int, error) { return count(c.ListGPUTypes(ctx)) }},
		{CheckSecrets, "/account/secrets", "every run keeps its host key in a secret; the sweeper lists them", func() (int, error) { return count(c.ListSecrets(ctx)) }},
		{CheckRegistries, "/registries", "run --registry-auth pulls a private image", func() (int, error) { return count(c.ListRegistries(ctx)) }},
		{CheckVolumes, "/network-volumes", "run --network-volume mounts and grows a volume", func() (int, error) { return count(c.ListNetworkVolumes(ctx)) }},
		{CheckBilling, "/billing/pods", "ls and run print what Runpod billed", func() (int, error) {
			b, err := c.PodBilling(ctx, runpod.PodBillingOptions{Bucket: runpod.BucketDay, LastN: 1})
			if b == nil {
				return 0, err
			}
			return len(b.Records), err
		}},
	}
	for _, l := range lists {
		n, err := l.list()
		if err != nil {
			d.failed(ctx, l.name, err, l.meaning+": it fails")
			continue
		}
		res, detail := d.fields(l.path)
		d.add(l.name, res, fmt.Sprintf("%d listed%s", n, detail), l.meaning)
	}
}

// count is a list call's length and error.
func count[T any](s []T, err error) (int, error) { return len(s), err }

// fields holds the last answer at path to the fields the client knows.
func (d *doc) fields(path string) (Result, string) {
	body := d.rec.body(path)
	if body == nil {
		return ResultOK, ""
	}
	dr := driftOf(path, body)
	switch {
	case len(dr.bad) > 0:
		return ResultFail, "; " + strings.Join(dr.bad, "; ")
	case len(dr.unknown) > 0:
		return ResultWarn, "; fields this SDK does not know (drift): " + strings.Join(dr.unknown, ", ")
	}
	return ResultOK, ""
}

// secret round-trips a secret named as a run's host key is (a run id's
// dash included), with a description as the sweeper reads it.
func (d *doc) secret(ctx context.Context) {
	const meaning = "every run keeps its host key in such a secret; the sweeper reads its description"
	id, err := podenv.NewRunID(time.Now())
	if err != nil {
		d.add(CheckSecretMake, ResultFail, err.Error(), meaning)
		return
	}
	name := podenv.HostKeySecretName(id)
	desc := podenv.HostKeySecretDescription(id, time.Now().Add(time.Hour).Truncate(time.Second))
	s, err := d.c.CreateSecretWithDescription(ctx, name, "doctor-value-1", desc)
	if err != nil {
		d.failed(ctx, CheckSecretMake, err, meaning+": no run can start")
		for _, n := range []string{CheckSecretRead, CheckSecretEdit, CheckSecretGone} {
			d.add(n, ResultSkipped, "no secret", "")
		}
		return
	}
	d.mu.Lock()
	d.secretIDs = append(d.secretIDs, s.ID)
	d.mu.Unlock()
	d.add(CheckSecretMake, ResultOK, fmt.Sprintf("%s (%d-byte description)", name, len(desc)), meaning)

	got, err := d.c.FindSecret(ctx, name)
	switch {
	case err != nil:
		d.failed(ctx, CheckSecretRead, err, "a run's secret cannot be found again by its name")
	case got.Name != name || got.Description != desc:
		d.add(CheckSecretRead, ResultFail, fmt.Sprintf("name %q, description %q: want %q, %q", got.Name, got.Description, name, desc),
			"the sweeper cannot tell how long a run needs its secret: it leaves such secrets")
	default:
		res, detail := d.fields("/account/secrets")
		d.add(CheckSecretRead, res, "name and description as sent"+detail, "the sweeper reads the description back")
	}

	if _, err := d.c.UpdateSecretValue(ctx, s.ID, "doctor-value-2"); err != nil {
		d.failed(ctx, CheckSecretEdit, err, "a recovered run cannot rotate its secret")
	} else {
		d.add(CheckSecretEdit, ResultOK, "value replaced", "a secret's value can be rotated")
	}

	if err := d.c.DeleteSecret(ctx, s.ID); err != nil {
		d.failed(ctx, CheckSecretGone, err, "runs would leave their secrets behind")
		return
	}
	if _, err := d.c.FindSecret(ctx, name); !errors.Is(err, runpod.ErrNotFound) {
		if err != nil && ctx.Err() != nil {
			d.failed(ctx, CheckSecretGone, err, "")
			return
		}
		d.add(CheckSecretGone, ResultFail, fmt.Sprintf("still listed after its delete (%v)", err), "runs would leave their secrets behind")
		return
	}
	d.mu.Lock()
	d.secretIDs = nil
	d.mu.Unlock()
	d.add(CheckSecretGone, ResultOK, "deleted, no longer listed", "a run's secret goes with it")
}

// recorder keeps the size of each pod create body and the last answer of
// each GET, by path under the base URL.
type recorder struct {
	base http.RoundTripper

	mu           sync.Mutex
	bodies       map[string][]byte
	creates      []int
	createStatus []int
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	isCreate := req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/pods")
	resp, err := r.base.RoundTrip(req)
	if isCreate {
		r.mu.Lock()
		r.creates = append(r.creates, int(req.ContentLength))
		st := 0
		if resp != nil {
			st = resp.StatusCode
		}
		r.createStatus = append(r.createStatus, st)
		r.mu.Unlock()
	}
	path := apiPath(req.URL.Path)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK || !checked(path) {
		return resp, err
	}
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if rerr != nil {
		// The client sees the same failure, after what was read.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{rerr}))
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	r.mu.Lock()
	r.bodies[path] = b
	r.mu.Unlock()
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func (r *recorder) body(path string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[path]
}

// lastCreate is the size and status of the last create body sent.
func (r *recorder) lastCreate() (size, status int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.creates) == 0 {
		return 0, 0, false
	}
	return r.creates[len(r.creates)-1], r.createStatus[len(r.createStatus)-1], true
}

// apiPath is a request path without the base URL's (/v2 and above).
func apiPath(p string) string {
	if i := strings.Index(p, "/v2/"); i >= 0 {
		return p[i+3:]
	}
	return p
}

// tempJob is a directory for the job guard requires (never started).
func tempJob() (string, func(), error) {
	dir, err := os.MkdirTemp("", "overbrainer-doctor-")
	if err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("launch doctor: never started\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
