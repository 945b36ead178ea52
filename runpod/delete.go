package runpod

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// DeleteResult says how far DeletePod got.
type DeleteResult int

// The outcomes of DeletePod, from worst to best.
const (
	// NotDeleted: every way failed; the pod may still run and bill.
	NotDeleted DeleteResult = iota
	// Stopped: only the stop action worked. Compute is released but the
	// pod and its disk remain, and the disk keeps billing. Never a success.
	Stopped
	// Terminated: DELETE failed but the terminate action worked.
	Terminated
	// Deleted: DELETE worked, or the pod was already gone (404).
	Deleted
)

// String names the result; Stopped says that the volume still bills.
func (r DeleteResult) String() string {
	switch r {
	case Deleted:
		return "deleted"
	case Terminated:
		return "terminated"
	case Stopped:
		return "stopped (volume still billing)"
	case NotDeleted:
		return "not deleted"
	}
	return fmt.Sprintf("DeleteResult(%d)", int(r))
}

// StillBilling reports whether the pod may still cost money: true unless it
// was deleted or terminated.
func (r DeleteResult) StillBilling() bool { return r != Deleted && r != Terminated }

// DeleteError is DeletePod's error: the pod was only stopped, or not even
// that. It keeps what each step of the fallback answered.
type DeleteError struct {
	PodID  string
	Result DeleteResult // Stopped or NotDeleted
	// The failures of DELETE /pods/{id}, the terminate action and the stop
	// action (Stop is nil when the pod was stopped).
	Delete, Terminate, Stop error
}

func (e *DeleteError) Error() string {
	var b strings.Builder
	if e.Result == Stopped {
		fmt.Fprintf(&b, "runpod: pod %s only stopped, its volume still bills", e.PodID)
	} else {
		fmt.Fprintf(&b, "runpod: pod %s not deleted", e.PodID)
	}
	for _, s := range []struct {
		name string
		err  error
	}{{"delete", e.Delete}, {"terminate", e.Terminate}, {"stop", e.Stop}} {
		if s.err != nil {
			fmt.Fprintf(&b, "; %s: %v", s.name, s.err)
		}
	}
	return b.String()
}

// Unwrap exposes each step's failure (and ErrStillBilling when the pod was
// stopped) to errors.Is and errors.As.
func (e *DeleteError) Unwrap() []error {
	var errs []error
	if e.Result == Stopped {
		errs = append(errs, ErrStillBilling)
	}
	for _, err := range []error{e.Delete, e.Terminate, e.Stop} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// DeletePod makes sure the pod stops costing money, trying harder ways to
// the softer:
//
//  1. DELETE /pods/{id} (with retries): Deleted.
//  2. the terminate action: Terminated.
//  3. the stop action: Stopped, which releases the GPU but keeps the pod's
//     disk billing.
//
// A step counts only once GET confirms it: 404 or TERMINATED (EXITED
// after the stop), looked for a few seconds after a 2xx, once after a 404
// (which the API also answers to a key that may not see the pod). A step
// answered but not confirmed fails with ErrUnconfirmed, and the next one
// is tried. A step that finds the pod gone is Deleted. The error is nil
// only for Deleted and Terminated; for Stopped and NotDeleted it is a
// *DeleteError (matching ErrStillBilling for Stopped). A cancelled ctx
// stops the chain at once and returns ctx.Err(); a DELETE refused with a
// *RateLimitError stops it too, NotDeleted, the error matching
// ErrRateLimited.
func (c *Client) DeletePod(ctx context.Context, id string) (DeleteResult, error) {
	if err := checkID("DeletePod", "pod", id); err != nil {
		return NotDeleted, err
	}
	r := &call{method: http.MethodDelete, path: "/pods/{id}", id: id}
	_, err := c.do(ctx, r, true)
	if gone(err) {
		if err = c.confirmGone(ctx, id, err, false); err == nil {
			return Deleted, nil
		}
	}
	if ctx.Err() != nil {
		return NotDeleted, ctx.Err()
	}
	e := &DeleteError{PodID: id, Result: NotDeleted, Delete: err}
	if errors.As(err, new(*RateLimitError)) {
		// The terminate and the stop would meet the same 429 wall: the
		// caller learns at once how long to wait (see RateLimitError).
		return NotDeleted, e
	}
	c.logFallback(ctx, id, "terminate", err)

	_, err = c.PodAction(ctx, id, ActionTerminate)
	if gone(err) {
		answered := err
		if err = c.confirmGone(ctx, id, err, false); err == nil {
			if answered == nil {
				return Terminated, nil
			}
			return Deleted, nil
		}
	}
	if ctx.Err() != nil {
		return NotDeleted, ctx.Err()
	}
	e.Terminate = err
	c.logFallback(ctx, id, "stop", err)

	_, err = c.PodAction(ctx, id, ActionStop)
	if gone(err) {
		answered := err
		err = c.confirmGone(ctx, id, err, true)
		switch {
		case errors.Is(err, errStopped) && answered == nil:
			e.Result = Stopped
			c.log.LogAttrs(ctx, slog.LevelWarn, "runpod: pod only stopped; its volume still bills",
				slog.String("pod", id))
			return Stopped, e
		case err == nil:
			return Deleted, nil
		}
	}
	if ctx.Err() != nil {
		return NotDeleted, ctx.Err()
	}
	e.Stop = err
	return NotDeleted, e
}

// How many times, and how far apart, a step answered 2xx is looked for.
const (
	confirmLooks = 4
	confirmEvery = time.Second
)

// errStopped is confirmGone's answer for a pod it found EXITED, when that
// counts (after the stop).
var errStopped = errors.New("runpod: pod stopped")

// confirmGone looks at the pod after a step answered with err (nil for a
// 2xx, else a 404): nil once GET finds it gone (404 or TERMINATED),
// errStopped for EXITED when stopped says that counts, else an error
// matching ErrUnconfirmed with what GET showed (or failed with).
func (c *Client) confirmGone(ctx context.Context, id string, answered error, stopped bool) error {
	looks := confirmLooks
	if answered != nil {
		looks = 1
	}
	var seen string
	for i := range looks {
		if i > 0 {
			if err := c.sleep(ctx, confirmEvery); err != nil {
				return err
			}
		}
		p, err := c.GetPod(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil
		case err != nil:
			seen = "reading it failed: " + err.Error()
		case p.Status == StatusTerminated:
			return nil
		case p.Status == StatusExited && stopped:
			return errStopped
		default:
			seen = "it is " + string(p.Status)
		}
	}
	what := "answered"
	if answered != nil {
		what = "answered 404"
	}
	return fmt.Errorf("%w (%s; %s)", ErrUnconfirmed, what, seen)
}

// gone reports a successful delete or a pod that no longer exists.
func gone(err error) bool { return err == nil || errors.Is(err, ErrNotFound) }

func (c *Client) logFallback(ctx context.Context, id, next string, err error) {
	c.log.LogAttrs(ctx, slog.LevelWarn, "runpod: delete step failed, falling back",
		slog.String("pod", id), slog.String("next", next), slog.String("error", c.scrub(err.Error())))
}

// deleteConcurrency bounds DeletePods' requests in flight, to stay clear of
// the rate limit.
const deleteConcurrency = 4

// DeletePods deletes many pods at once (a few at a time) with DeletePod's
// fallback each, and returns every pod's result. The error joins the
// failures of the pods that still bill; one failure does not stop the
// others.
func (c *Client) DeletePods(ctx context.Context, ids ...string) (map[string]DeleteResult, error) {
	var (
		mu      sync.Mutex
		results = make(map[string]DeleteResult, len(ids))
		failed  = make(map[string]error)
		g       errgroup.Group
	)
	g.SetLimit(deleteConcurrency)
	for _, id := range ids {
		mu.Lock()
		_, dup := results[id]
		if !dup {
			results[id] = NotDeleted
		}
		mu.Unlock()
		if dup {
			continue
		}
		g.Go(func() error {
			res, err := c.DeletePod(ctx, id)
			mu.Lock()
			defer mu.Unlock()
			results[id] = res
			if err != nil {
				failed[id] = err
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines report through failed
	var errs []error
	for _, id := range ids {
		if err, ok := failed[id]; ok {
			delete(failed, id)
			errs = append(errs, fmt.Errorf("pod %s: %w", id, err))
		}
	}
	return results, errors.Join(errs...)
}
