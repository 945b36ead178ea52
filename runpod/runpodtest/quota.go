package runpodtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// QuotaWindow is one window of the account's request quota: at most Limit
// requests per Window.
type QuotaWindow struct {
	Name   string // as the headers name it: "minute", "hour", "day"
	Limit  int
	Window time.Duration
}

// RunpodQuota is the quota of Runpod's documented example: 60 requests a
// minute, 3000 an hour, 50000 a day.
func RunpodQuota() []QuotaWindow {
	return []QuotaWindow{
		{Name: "minute", Limit: 60, Window: time.Minute},
		{Name: "hour", Limit: 3000, Window: time.Hour},
		{Name: "day", Limit: 50000, Window: 24 * time.Hour},
	}
}

// WithQuota makes the fake limit authenticated REST requests as Runpod does:
// every one counts against each window, every authenticated answer carries
// RateLimit-Policy and RateLimit headers, and while any window is used up
// the fake answers 429 with a Retry-After of the seconds until the last
// exhausted window resets. Each key has its own quota, as on Runpod: the
// account key's and each pod's. Windows are fixed, the first starting with
// the key's first counted request, on the fake's clock (see WithClock). A
// refused request does not count.
func WithQuota(windows ...QuotaWindow) Option {
	return func(c *config) { c.quota = append([]QuotaWindow(nil), windows...) }
}

// quotaState is the count of each window; s.mu guards it.
type quotaState struct {
	start time.Time
	epoch []int64 // which window period each count belongs to
	used  []int
}

// takeQuotaLocked counts a request against the quota and sets the headers.
// It returns the wait when a window is used up, and the request must be
// refused. s.mu must be held.
func (s *Server) takeQuotaLocked(caller string, h http.Header) (refuse bool, wait time.Duration) {
	windows := s.cfg.quota
	if len(windows) == 0 {
		return false, 0
	}
	if s.quota == nil {
		s.quota = map[string]*quotaState{}
	}
	q := s.quota[caller]
	if q == nil {
		q = &quotaState{}
		s.quota[caller] = q
	}
	now := s.cfg.now()
	if q.used == nil {
		q.start, q.epoch, q.used = now, make([]int64, len(windows)), make([]int, len(windows))
	}
	since := max(now.Sub(q.start), 0)
	resets := make([]time.Duration, len(windows))
	for i, w := range windows {
		if e := int64(since / w.Window); e != q.epoch[i] {
			q.epoch[i], q.used[i] = e, 0
		}
		resets[i] = w.Window - since%w.Window
		if q.used[i] >= w.Limit {
			refuse, wait = true, max(wait, resets[i])
		}
	}
	if !refuse {
		for i := range windows {
			q.used[i]++
		}
	}
	policy := make([]string, len(windows))
	state := make([]string, len(windows))
	for i, w := range windows {
		policy[i] = fmt.Sprintf("%q;q=%d;w=%d", w.Name, w.Limit, seconds(w.Window))
		state[i] = fmt.Sprintf("%q;r=%d;t=%d", w.Name, max(w.Limit-q.used[i], 0), seconds(resets[i]))
	}
	h.Set("RateLimit-Policy", strings.Join(policy, ", "))
	h.Set("RateLimit", strings.Join(state, ", "))
	if refuse {
		h.Set("Retry-After", strconv.FormatInt(seconds(wait), 10))
	}
	return refuse, wait
}

// seconds rounds d up to whole seconds, as the headers carry them.
func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }
