package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// pod launches the cheapest pod that runs the start command through
// guard's own Launch (the real bootstrap, watchdog and env): a CPU pod
// where the API offers one, else the cheapest GPU in stock. It never
// gives it a job, and waits for its watchdog to delete it with the pod's
// own key after the boot grace.
func (d *doc) pod(ctx context.Context) {
	dir, done, err := tempJob()
	if err != nil {
		d.add(CheckPodBody, ResultFail, err.Error(), "no pod was tried")
		return
	}
	defer done()
	id, err := podenv.NewRunID(time.Now())
	if err != nil {
		d.add(CheckPodBody, ResultFail, err.Error(), "no pod was tried")
		return
	}
	spec := guard.Spec{
		RunID: id, Job: guard.Job{Dir: dir, Command: "true"}, GPUTypes: []string{guard.AutoGPU},
		WatchdogAPIURL: d.c.BaseURL(), PodEnv: d.o.PodEnv, DeadlineFromCreate: true,
	}
	if flavor, ok := d.cheapestCPU(ctx); ok {
		spec.GPUTypes, spec.CPUFlavor = nil, flavor
	}
	spec.BootGrace = cmp.Or(d.o.BootGrace, time.Minute)
	spec.Interval = cmp.Or(d.o.Interval, 5*time.Second)
	spec.Deadline = time.Now().Add(cmp.Or(d.o.Timeout, DefaultTimeout)).Truncate(time.Second)
	spec.HardDeadline = true
	var verdict watchdog.Verdict
	save := func(rec guard.Record) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.podRec = &rec
		return nil
	}
	events := func(e guard.Event) {
		if e.Kind == guard.EventVerdict {
			verdict = e.Verdict
		}
	}
	run, err := guard.Launch(ctx, d.c, spec, guard.WithSave(save), guard.WithEvents(events), guard.WithLogger(d.o.Logger),
		guard.WithStartTimeout(cmp.Or(d.o.Timeout, DefaultTimeout)), guard.WithVerdictTimeout(cmp.Or(d.o.Timeout, DefaultTimeout)))
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		d.rep.Interrupted = true
		names := []string{CheckPodReady, CheckPodFields, CheckPodDelete, CheckPodGone}
		if _, _, sent := d.rec.lastCreate(); sent {
			d.bodyCheck()
		} else {
			names = append([]string{CheckPodBody}, names...)
		}
		for _, n := range names {
			d.add(n, ResultSkipped, "interrupted before the pod was ready", "not proven")
		}
		return
	}
	d.bodyCheck()
	if err != nil {
		d.add(CheckPodReady, ResultFail, fmt.Sprintf("verdict %q: %v", verdict, err),
			"no run can start: the pod did not come up ready with the run's host key (an unresolved secret placeholder leaves it none)")
		for _, n := range []string{CheckPodFields, CheckPodDelete, CheckPodGone} {
			d.add(n, ResultSkipped, "no ready pod", "")
		}
		return
	}
	rec := run.Record()
	run.Detach()
	d.rep.PodID, d.rep.GPU, d.rep.CPU, d.rep.CostPerHr = rec.PodID, rec.GPU, spec.CPUFlavor != "", rec.CostPerHr
	fp := "unreadable"
	if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(rec.HostKey)); err == nil {
		fp = ssh.FingerprintSHA256(k)
	}
	d.add(CheckPodReady, ResultOK, fmt.Sprintf("pod %s (%s at %s/h): verdict %s, host key %s", rec.PodID, rec.GPU, costplan.Money(rec.CostPerHr), rec.Verdict, fp),
		"the secret placeholder resolved: the pod proved the host key the run made")

	if _, err := d.c.GetPod(ctx, rec.PodID); err != nil {
		d.failed(ctx, CheckPodFields, err, "runs cannot read their pod")
	} else {
		res, detail := d.fields("/pods/" + rec.PodID)
		d.add(CheckPodFields, res, "GET /pods/"+rec.PodID+" decoded"+detail, "runs read their pod's status, price and ports")
	}

	codes := &logCodes{}
	if d.o.DeleteCodes == nil {
		lctx, stop := context.WithCancel(ctx)
		defer stop()
		go codes.read(lctx, d.c, rec.PodID)
	}
	seenNow := codes.get
	if d.o.DeleteCodes != nil {
		seenNow = func() []int { return d.o.DeleteCodes(rec.PodID) }
	}
	// A refused delete leaves the watchdog its fallbacks (terminate,
	// stop): they get a while, not the whole bound.
	wctx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if c := seenNow(); len(c) > 0 && (c[0] < 200 || c[0] > 299) {
				select {
				case <-wctx.Done():
				case <-time.After(fallbackWait):
					stopWait()
				}
				return
			}
		}
	}()
	gone, how, err := d.waitGone(wctx, rec.PodID)
	if gone.IsZero() && ctx.Err() == nil && errors.Is(err, context.Canceled) {
		err = fmt.Errorf("still there %s after the watchdog's refused delete", fallbackWait)
	}
	seen := seenNow()
	if !rec.BillingStart.IsZero() {
		end := cmp.Or(gone, time.Now())
		d.rep.EstimateUSD = rec.CostPerHr * end.Sub(rec.BillingStart).Hours()
	}
	if gone.IsZero() && errors.Is(err, context.Canceled) {
		d.rep.Interrupted = true
		for _, n := range []string{CheckPodDelete, CheckPodGone} {
			d.add(n, ResultSkipped, "interrupted before the watchdog deleted the pod", "not proven: the cleanup deletes the pod with the account key")
		}
		return
	}
	d.deleteCheck(seen, !gone.IsZero())
	if gone.IsZero() {
		d.add(CheckPodGone, ResultFail, fmt.Sprintf("not gone (boot grace %s): %v", spec.BootGrace, err),
			"the watchdog does not end a pod whose job never started: the cleanup deletes it with the account key")
		return
	}
	d.add(CheckPodGone, ResultOK, fmt.Sprintf("%s %s after its create", how, gone.Sub(rec.BillingStart).Round(time.Second)),
		"a pod's own watchdog ends it when no one else does")
}

// cheapestCPU is the CPU flavor of the catalog whose smallest pod (2
// vCPUs, guard's default) costs least; ok is false when the API offers
// none (or its CPU catalog cannot be read: the GPU path is then taken).
func (d *doc) cheapestCPU(ctx context.Context) (string, bool) {
	cpus, err := d.c.ListCPUTypes(ctx)
	if err != nil {
		return "", false
	}
	best := -1
	for i, c := range cpus {
		if c.VCPU.Min <= 2 && c.VCPU.Max >= 2 && c.Price.SecurePerVCPU > 0 &&
			(best < 0 || c.Price.SecurePerVCPU < cpus[best].Price.SecurePerVCPU) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return cpus[best].ID, true
}

// bodyCheck reports the size of the pod's create body and its margin to
// Runpod's limit.
func (d *doc) bodyCheck() {
	const meaning = "the create body (bootstrap, watchdog, env) fits Runpod's limit"
	size, status, ok := d.rec.lastCreate()
	if !ok {
		d.add(CheckPodBody, ResultFail, "no create was sent", meaning)
		return
	}
	d.rep.CreateBodyBytes = size
	margin := runpod.MaxCreatePodBody - size
	detail := fmt.Sprintf("%d bytes, %d under the %d-byte limit", size, margin, runpod.MaxCreatePodBody)
	switch {
	case status == 413:
		d.add(CheckPodBody, ResultFail, fmt.Sprintf("413 for %d bytes: the limit is lower than %d", size, runpod.MaxCreatePodBody),
			"no pod can be created: every run's create is refused")
	case margin < 10*1024:
		d.add(CheckPodBody, ResultWarn, detail, "a little more env or a longer watchdog will not fit")
	default:
		d.add(CheckPodBody, ResultOK, detail, meaning)
	}
}

// deleteCheck reports how the API answered the pod's own key's deletes.
func (d *doc) deleteCheck(codes []int, gone bool) {
	switch {
	case len(codes) == 0 && gone:
		d.add(CheckPodDelete, ResultWarn, "the pod is gone, but its delete's status could not be read (the pod log is gone with it)",
			"the watchdog's delete worked, by a way not seen")
	case len(codes) == 0:
		d.add(CheckPodDelete, ResultFail, "no delete by the pod's key was seen", "the watchdog never deleted the pod")
	case codes[0] >= 200 && codes[0] < 300:
		d.add(CheckPodDelete, ResultOK, fmt.Sprintf("DELETE /pods/{id} with the pod's key: %d", codes[0]),
			"the watchdog can delete its own pod")
	default:
		d.add(CheckPodDelete, ResultFail, fmt.Sprintf("DELETE /pods/{id} with the pod's key: %d (all: %v)", codes[0], codes),
			"the pod's key may not delete its pod: the watchdog cannot end it by DELETE")
	}
}

// fallbackWait is how long a pod whose watchdog's DELETE was refused is
// given to go by its fallbacks.
const fallbackWait = 30 * time.Second

// waitGone waits until the account key sees the pod TERMINATED or 404.
func (d *doc) waitGone(ctx context.Context, id string) (time.Time, string, error) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		p, err := d.c.GetPod(ctx, id)
		switch {
		case errors.Is(err, runpod.ErrNotFound):
			return time.Now(), "404", nil
		case err == nil && p.Status == runpod.StatusTerminated:
			return time.Now(), "TERMINATED", nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, "", ctx.Err()
		case <-t.C:
		}
	}
}

// logCodes are the statuses of the watchdog's DELETEs, from the pod log's
// delete_code lines.
type logCodes struct {
	mu    sync.Mutex
	codes []int
}

var deleteCodeRE = regexp.MustCompile(`delete_code method=DELETE code=(\d+)`)

func (l *logCodes) read(ctx context.Context, c *runpod.Client, id string) {
	_ = c.StreamPodLogs(ctx, id, runpod.LogOptions{Tail: 5000}, func(line runpod.LogLine) error {
		if m := deleteCodeRE.FindStringSubmatch(line.Line); m != nil {
			n, _ := strconv.Atoi(m[1])
			l.mu.Lock()
			l.codes = append(l.codes, n)
			l.mu.Unlock()
		}
		return nil
	})
}

func (l *logCodes) get() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.codes)
}

// billTimeout bounds the read of the pod's bill.
const billTimeout = 30 * time.Second

// bill reads what Runpod billed the test pod, once, with a context of its
// own; a pod Runpod has not billed yet leaves BilledUSD nil.
func (d *doc) bill() {
	d.mu.Lock()
	rec := d.podRec
	d.mu.Unlock()
	if rec == nil || rec.PodID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), billTimeout)
	defer cancel()
	b, err := guard.ReadBill(ctx, d.c, *rec, time.Now())
	if err == nil && len(b.Pods) > 0 {
		d.rep.BilledUSD = &b.USD
	}
}

// cleanup removes whatever Run made and is still there, with a context of
// its own, and confirms it gone with the account key.
func (d *doc) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d.mu.Lock()
	secrets, rec := slices.Clone(d.secretIDs), d.podRec
	d.mu.Unlock()
	var left []string
	for _, id := range secrets {
		if err := d.c.DeleteSecret(ctx, id); err != nil && !errors.Is(err, runpod.ErrNotFound) {
			left = append(left, "secret "+id+": "+err.Error())
		}
	}
	if rec != nil {
		if rec.PodID != "" {
			if _, err := d.c.DeletePod(ctx, rec.PodID); err != nil && !errors.Is(err, runpod.ErrNotFound) {
				left = append(left, "pod "+rec.PodID+": "+err.Error())
			} else if _, _, err := d.waitGone(ctx, rec.PodID); err != nil {
				left = append(left, "pod "+rec.PodID+": not confirmed gone: "+err.Error())
			}
		}
		if pods, err := d.c.ListPods(ctx, runpod.ListPodsOptions{Name: rec.PodName}); err != nil {
			left = append(left, "pods named "+rec.PodName+": "+err.Error())
		} else {
			for _, p := range pods {
				if p.Status != runpod.StatusTerminated {
					left = append(left, "pod "+p.ID+" "+string(p.Status))
				}
			}
		}
		name := cmp.Or(rec.SecretName, podenv.HostKeySecretName(rec.ID))
		if s, err := d.c.FindSecret(ctx, name); err == nil {
			if err := d.c.DeleteSecret(ctx, s.ID); err != nil {
				left = append(left, "secret "+name+": "+err.Error())
			} else if _, err := d.c.FindSecret(ctx, name); !errors.Is(err, runpod.ErrNotFound) {
				left = append(left, "secret "+name+": still listed")
			}
		} else if !errors.Is(err, runpod.ErrNotFound) {
			left = append(left, "secret "+name+": "+err.Error())
		}
	}
	if len(left) > 0 {
		d.add(CheckCleanup, ResultFail, strings.Join(left, "; "), "remove these by hand (launch rm --all-orphans)")
		return
	}
	d.add(CheckCleanup, ResultOK, "every pod and secret made is gone", "the doctor leaves nothing billing")
}
