package podssh

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// ErrStalled ends an upload or a download in which no byte moved for
// Target.StallAfter: a connection that silently stopped (a frozen pod, a route
// gone without a reset) would otherwise hold the caller until the pod's
// watchdog deletes the pod.
var ErrStalled = errors.New("podssh: the transfer stalled")

// defaultStallAfter is Target.StallAfter's default.
const defaultStallAfter = 2 * time.Minute

// stallGuard counts the bytes through r, and its watch ends a context when
// none came for the connection's stall limit.
type stallGuard struct {
	r    io.Reader
	last atomic.Int64 // UnixNano of the last byte (or of the start)
}

func (g *stallGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if n > 0 {
		g.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// guardStall returns a context that ends with cause ErrStalled once the
// returned reader (reading r) went the connection's stall limit without a
// byte, and a stop function to call when the transfer ended.
func (c *Conn) guardStall(ctx context.Context, r io.Reader) (context.Context, io.Reader, func()) {
	limit := cmp.Or(c.stallAfter, defaultStallAfter)
	ctx, cancel := context.WithCancelCause(ctx)
	g := &stallGuard{r: r}
	g.last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(min(limit/4, time.Second))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if time.Since(time.Unix(0, g.last.Load())) >= limit {
				cancel(fmt.Errorf("%w: no byte moved for %s", ErrStalled, limit))
				return
			}
		}
	}()
	return ctx, g, func() {
		close(done)
		cancel(nil)
	}
}

// stalled is the stall that ended ctx, if one did.
func stalled(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, ErrStalled) {
		return err
	}
	return nil
}
