package guard

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod"
)

// Waiting for capacity (Spec.CapacityWait): when every GPU type of a
// launch is out of stock, or every create of one answers Runpod's
// capacity 400, Launch looks again after a jittered back-off, reading the
// catalog's stock at most once per catalogEvery in this process, and
// creates as soon as a type is back. No pod exists while it waits.

// Bounds of the wait's looks.
const (
	// catalogEvery is how often the process reads the catalog's stock
	// while a launch waits: the stock is a hint, and Runpod's quota is
	// the account's.
	catalogEvery = 30 * time.Second
	// firstCapacityLook and lastCapacityLook bound the back-off between
	// two looks, before its jitter.
	firstCapacityLook = 10 * time.Second
	lastCapacityLook  = 2 * time.Minute
)

// stockCache keeps the catalog's stock as last read, per API and filter,
// so that the launches of one process read it at most once per
// catalogEvery.
type stockCache struct {
	mu    sync.Mutex
	reads map[string]stockRead
}

type stockRead struct {
	at    time.Time
	types []runpod.GPUType
}

// processStock is the cache of every launch in this process.
var processStock = &stockCache{}

// list returns the stock of filter f as read at most catalogEvery ago
// (on now's clock), reading it when older.
func (s *stockCache) list(ctx context.Context, c api, f GPUFilter, now func() time.Time) ([]runpod.GPUType, error) {
	key := fmt.Sprintf("%s|%s|%d|%s", c.BaseURL(), f.Cloud, f.Count, f.MinCUDA)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.reads[key]; ok {
		if age := now().Sub(r.at); age >= 0 && age < catalogEvery {
			return r.types, nil
		}
	}
	types, err := listGPUs(ctx, c, GPUFilter{Cloud: f.Cloud, Count: f.Count, MinCUDA: f.MinCUDA})
	if err != nil {
		return nil, err
	}
	if s.reads == nil {
		s.reads = map[string]stockRead{}
	}
	s.reads[key] = stockRead{at: now(), types: types}
	return types, nil
}

// capacityWait is one launch's wait for capacity.
type capacityWait struct {
	limit time.Duration // Spec.CapacityWait
	start time.Time     // when the launch began
	next  time.Duration // the back-off before jitter
	// deadline is the last moment a look may happen: the Deadline, unless
	// the wait shifts it (DeadlineFromCreate); zero is none.
	deadline time.Time
	// deadlineAsked is the Spec's Deadline, which DeadlineFromCreate
	// moves on by the wait.
	deadlineAsked time.Time
}

// refusal is tryGPU's errNextGPU for a type the create refused with err.
type refusal struct{ err error }

func (e *refusal) Error() string        { return e.err.Error() }
func (e *refusal) Unwrap() error        { return e.err }
func (e *refusal) Is(target error) bool { return target == errNextGPU }

// noneLeft is the error of a launch whose every type was tried, the last
// ending in last: ErrNoGPU when one failed for want of capacity, or when
// the last was not a 400 of another wording than the capacity one; else,
// as Runpod's text reads a 400 from every candidate, a problem with the
// request: that 400 itself, never "no GPU".
func (r *Run) noneLeft(attempts []Attempt, last error) error {
	var rf *refusal
	rejected := len(attempts) > 0 && attempts[len(attempts)-1].Outcome == OutcomeRejected && errors.As(last, &rf)
	for _, a := range attempts {
		if a.Outcome == OutcomeNoCapacity || a.Outcome == OutcomeNoStock || a.Outcome == OutcomeStartTimeout {
			rejected = false
		}
	}
	if rejected {
		return fmt.Errorf("creating the pod: every type was refused, the last with: %w", rf.err)
	}
	return fmt.Errorf("%w: every type was tried: %s", ErrNoGPU, r.attemptsText())
}

// outOfCapacity says whether the attempts since from failed for want of
// capacity only (no stock, the capacity 400, a pool the account cannot
// use), at least one of them for capacity: waiting may help.
func outOfCapacity(attempts []Attempt) bool {
	capacity := false
	for _, a := range attempts {
		switch a.Outcome {
		case OutcomeNoCapacity, OutcomeNoStock:
			capacity = true
		case OutcomeForbidden:
		default:
			return false
		}
	}
	return capacity
}

// sleep waits for the next look, telling it, or reports false when the
// wait is over (its limit or the deadline reached) or ctx's error.
func (r *Run) sleepForCapacity(ctx context.Context, w *capacityWait) (bool, error) {
	elapsed := r.since(w.start)
	left := w.limit - elapsed
	if !w.deadline.IsZero() {
		left = min(left, w.deadline.Sub(r.now()))
	}
	if left <= 0 {
		return false, nil
	}
	if w.next == 0 {
		w.next = firstCapacityLook
	}
	// Jitter of ±25%, so that the launches of many users that saw the
	// same stock do not come back at the same moment.
	d := time.Duration(float64(w.next) * (0.75 + rand.Float64()/2))
	w.next = min(2*w.next, lastCapacityLook)
	d = min(d, left)
	r.emit(Event{Kind: EventWaiting, Stage: StageCapacity, Elapsed: elapsed, Next: d, GPU: r.gpuNames()})
	if err := r.cfg.clock.Sleep(ctx, d); err != nil {
		return false, err
	}
	return true, nil
}

// gpuNames is what the wait is for, as a line's words.
func (r *Run) gpuNames() string {
	var names []string
	for _, a := range r.rec.Attempts {
		if !slices.Contains(names, a.GPU) {
			names = append(names, a.GPU)
		}
	}
	if len(names) == 0 {
		return "any GPU type of the run"
	}
	return fmt.Sprint(names)
}

// inStockNow keeps the candidates that the catalog (read through the
// process's cache) shows in stock, in their order; auto's are picked
// again from it.
func (r *Run) inStockNow(ctx context.Context, spec Spec, volDC string) ([]candidate, error) {
	list := func(ctx context.Context, f GPUFilter) ([]runpod.GPUType, error) {
		return r.cfg.stock.list(ctx, r.api, f, r.now)
	}
	cands, err := planGPUsFrom(ctx, list, spec, volDC)
	if errors.Is(err, ErrNoGPU) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	stock, err := list(ctx, GPUFilter{Cloud: spec.Cloud, Count: spec.GPUCount, MinCUDA: spec.cudaFloor()})
	if err != nil {
		return nil, err
	}
	var out []candidate
	for _, c := range cands {
		i := slices.IndexFunc(stock, func(g runpod.GPUType) bool { return g.ID == c.gpu })
		if !c.noDCs && i >= 0 && inStock(stock[i], c.dcs) {
			out = append(out, c)
		}
	}
	return out, nil
}

// waitForCapacity waits until the catalog shows a candidate in stock, and
// returns those it shows; ErrNoGPU once the wait is over, ctx's error
// when it ends.
func (r *Run) waitForCapacity(ctx context.Context, w *capacityWait, spec Spec, volDC string) ([]candidate, error) {
	for {
		ok, err := r.sleepForCapacity(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("waiting for a GPU: %w", err)
		}
		if !ok {
			return nil, fmt.Errorf("%w: none came back within the wait (%s): %s", ErrNoGPU, r.since(w.start).Round(time.Second), r.attemptsText())
		}
		cands, err := r.inStockNow(ctx, spec, volDC)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("waiting for a GPU: %w", ctx.Err())
		case err != nil:
			// The stock is a hint: a failed read is looked at again later.
			r.warn(fmt.Errorf("reading the GPU catalog's stock while waiting for a GPU: %w", err))
			continue
		case len(cands) == 0:
			continue
		}
		if err := checkPrices(ctx, r.api, spec, cands); err != nil {
			return nil, err
		}
		return cands, nil
	}
}
