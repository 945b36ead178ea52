package runpod

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// A pacer keeps the requests of one account key within the quota that
// Runpod's RateLimit headers announce, so that a burst of calls waits its
// turn instead of spending requests on 429s. Every answer that carries the
// headers resets what the pacer knows; between answers it counts the
// requests it lets through. It cannot see other processes' requests with
// the same key: those still meet a 429 now and then, which the retry loop
// handles as before.
type pacer struct {
	mu      sync.Mutex
	windows map[string]*paceWindow
}

// paceWindow is what the pacer knows of one quota window.
type paceWindow struct {
	left  int           // requests the window still takes
	reset time.Time     // when the window starts again
	quota int           // the window's whole quota (RateLimit-Policy q), 0 if unknown
	every time.Duration // the window's length (RateLimit-Policy w), 0 if unknown
}

// sameWindow is how far apart two readings of a window's reset may be and
// still mean the same period: the headers carry whole seconds.
const sameWindow = 1500 * time.Millisecond

// pacers shares one pacer among the clients of one key and API in a
// process: a fleet tool or a test that makes a client per run still paces
// them as one. The map is keyed by a digest, never by the key itself.
var pacers sync.Map // [sha256.Size]byte -> *pacer

func pacerFor(baseURL, key string) *pacer {
	id := sha256.Sum256([]byte(baseURL + "\x00" + key))
	p, _ := pacers.LoadOrStore(id, &pacer{windows: map[string]*paceWindow{}})
	return p.(*pacer)
}

// wait blocks until every known window has room for one more request,
// then counts the request against each. A cancelled ctx ends the wait; a
// wait past the client's retry cap is not made (the request goes, and its
// 429 ends the call as RateLimitError).
func (p *pacer) wait(ctx context.Context, c *Client, r *call) error {
	for waited := false; ; waited = true {
		d := p.take(c.now())
		if d <= 0 {
			return nil
		}
		if d > c.maxWait {
			// Past the retry cap the call fails rather than wait: let
			// the server's 429 say so, with its own numbers.
			return nil
		}
		if !waited {
			c.log.LogAttrs(ctx, slog.LevelDebug, "runpod: pacing",
				slog.String("method", r.method), slog.String("path", r.where()),
				slog.Duration("wait", d))
		}
		if err := c.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// take counts one request when every window has room and returns 0, or
// returns how long until the last exhausted window resets.
func (p *pacer) take(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var wait time.Duration
	for name, w := range p.windows {
		if !now.Before(w.reset) {
			// A new period: its quota when the policy said it, else
			// nothing is known until the next answer.
			if w.quota <= 0 || w.every <= 0 {
				delete(p.windows, name)
				continue
			}
			for !now.Before(w.reset) {
				w.reset = w.reset.Add(w.every)
			}
			w.left = w.quota
		}
		if w.left <= 0 {
			wait = max(wait, w.reset.Sub(now))
		}
	}
	if wait > 0 {
		return wait
	}
	for _, w := range p.windows {
		w.left--
	}
	return 0
}

// observe reads an answer's RateLimit and RateLimit-Policy headers.
func (p *pacer) observe(h http.Header, now time.Time) {
	// The canonical spellings: any other allocates on every lookup.
	states := h.Values("Ratelimit")
	if len(states) == 0 {
		return
	}
	policy := map[string]map[string]uint64{}
	for _, v := range h.Values("Ratelimit-Policy") {
		for _, item := range splitList(v) {
			name, params := itemParams(item)
			policy[name] = params
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range states {
		for _, item := range splitList(v) {
			name, params := itemParams(item)
			r, hasR := params["r"]
			t, hasT := params["t"]
			if !hasR || !hasT || name == "" || len(p.windows) > 16 && p.windows[name] == nil {
				continue
			}
			reset := now.Add(time.Duration(min(t, 1<<20)) * time.Second)
			left := int(min(r, 1<<30))
			w := p.windows[name]
			switch {
			case w == nil:
				w = &paceWindow{left: left, reset: reset}
				p.windows[name] = w
			case reset.Sub(w.reset).Abs() < sameWindow:
				// The same period: requests let through since this
				// answer was made are already counted in w.left.
				w.left = min(w.left, left)
			case reset.After(w.reset):
				w.left, w.reset = left, reset
			}
			if q, ok := policy[name]; ok {
				w.quota = int(min(q["q"], 1<<30))
				w.every = time.Duration(min(q["w"], 1<<20)) * time.Second
			}
		}
	}
}
