package guard

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// movement is what a follow knows of the job moving: the rule the pod's
// watchdog applies, seen from this side. New output is movement, and so
// are a new line in its progress file and a look of the watchdog that saw
// the job move (JobState.Moved: its outputs, its CPU, a busy GPU, which
// only the pod sees), so that both judge by the same reading. It renews
// the lease; its absence
// for the run's StallAfter is a stall (when the rule is on), and for
// podenv.StallWarnAfter a warning (when it is off).
type movement struct {
	line string    // the last progress line seen
	seen int64     // the watchdog's last movement seen (JobState.Moved)
	at   time.Time // when the job last moved (the follow's start at first)
	// told is how long the job had not moved when that was last told,
	// zero when it was not since the job last moved.
	told time.Duration
	// stalled says the stall rule (on) told the stall since the job last
	// moved, and asked is when it asked the job for the stall snapshot
	// (or found a request there): the watchdog deletes the pod a
	// SnapshotWait later unless the job moves (stallDeleteAt). asked is
	// zero with MinGPUUtil, where the watchdog alone asks.
	stalled bool
	asked   time.Time
	pace    pace
}

// see takes one look into account, with the output bytes it brought.
func (m *movement) see(now time.Time, st jobctl.State, output int) {
	moved := output > 0 || st.Progress != m.line || (st.Moved != 0 && st.Moved != m.seen)
	m.line = st.Progress
	if st.Moved != 0 {
		m.seen = st.Moved
	}
	if moved || m.at.IsZero() {
		m.at = now
	}
	if moved {
		m.stalled, m.asked, m.told = false, time.Time{}, 0
	}
}

// movedSince says the job moved after t.
func (m *movement) movedSince(t time.Time) bool { return m.at.After(t) }

// stallCheck tells a running job that has not moved. With the stall rule
// on (StallAfter), it tells it once the job has not moved for StallAfter
// and asks the job for a snapshot (reason stall) unless a request is
// there already, as the watchdog does: a stalled job holds no lease (see
// follow). With MinGPUUtil the snapshot is left to the watchdog, which
// alone sees the GPU: a busy one holds the job. With the rule off, it
// only tells, every podenv.StallWarnAfter without movement. A kept run
// has neither.
func (r *Run) stallCheck(ctx context.Context, st jobctl.State, m *movement) {
	r.stalled = m.stalled
	if r.rec.Keep || !st.Started() || st.Ended() {
		return
	}
	limit, on := r.rec.StallAfter, r.rec.StallAfter > 0
	if !on {
		limit = podenv.StallWarnAfter
	}
	still := r.since(m.at)
	if still < limit || (m.told > 0 && (on || still < m.told+limit)) {
		return
	}
	m.told = still
	ev := Event{Kind: EventStalled, Elapsed: still, ProgressLine: m.line, Snapshot: st.Request}
	if !on {
		r.emit(ev)
		return
	}
	m.stalled, r.stalled = true, true
	if r.rec.MinGPUUtil == 0 {
		m.asked = r.now()
		ev.Deadline = r.stallDeleteAt(m)
	}
	r.emit(ev)
	if r.rec.MinGPUUtil > 0 || st.Request != "" {
		return
	}
	if err := r.put(ctx, watchdog.SnapshotRequest, string(watchdog.ReasonStall)); err != nil {
		// Tried again at the next look.
		m.stalled, r.stalled, m.asked, m.told = false, false, time.Time{}, 0
		r.warn(err)
	}
}

// stallDeleteAt is when the pod's watchdog deletes the pod of a stalled
// job that does not move: a SnapshotWait after the stall snapshot was
// asked. Zero when none was (the rule off, the job moving, or MinGPUUtil
// leaving the ask to the watchdog).
func (r *Run) stallDeleteAt(m *movement) time.Time {
	if m.asked.IsZero() {
		return time.Time{}
	}
	return r.rec.StallEnd(m.asked)
}

// isStalled says the stall rule is on and the job has not moved for the
// run's StallAfter (a kept run never stalls): it then holds no lease.
func (r *Run) isStalled(m *movement) bool {
	return r.rec.StallAfter > 0 && !r.rec.Keep && !m.at.IsZero() && r.since(m.at) >= r.rec.StallAfter
}

// parseSteps reads a progress line as steps: its step=N and total=N
// words (N whole numbers); ok is false when it has no step, or a total
// below it.
func parseSteps(line string) (step, total int64, ok bool) {
	step, total = -1, -1
	for _, w := range strings.Fields(line) {
		k, v, found := strings.Cut(w, "=")
		if !found {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			continue
		}
		switch k {
		case "step":
			step = n
		case "total":
			total = n
		}
	}
	return step, total, step >= 0 && total >= step
}

// pace is what the follow learned of the job's pace from its progress:
// the first step it saw and when, and which warnings it gave.
type pace struct {
	fromStep int64
	fromAt   time.Time
	timeSaid bool
	costSaid bool
}

// minPaceSteps and minPaceTime are how much progress the pace is read
// from at least: a warning from the first two steps would be noise.
const (
	minPaceSteps = 3
	minPaceTime  = time.Minute
)

// paceCheck warns once when, at the pace seen since the follow began, the
// steps left need more time than the deadline leaves, and once when they
// need more money than the cost cap leaves (EventPace, Snapshot naming
// the bound).
func (r *Run) paceCheck(st jobctl.State, m *movement) {
	if st.Ended() || st.Progress == "" {
		return
	}
	step, total, ok := parseSteps(st.Progress)
	if !ok {
		return
	}
	p, now := &m.pace, r.now()
	if p.fromAt.IsZero() || step < p.fromStep {
		p.fromStep, p.fromAt = step, now
		return
	}
	done, took := step-p.fromStep, now.Sub(p.fromAt)
	if done < minPaceSteps || took < minPaceTime {
		return
	}
	perStep := took / time.Duration(done)
	need := perStep * time.Duration(total-step)
	base := Event{Kind: EventPace, Step: step, Steps: total, PerStep: perStep, Need: need}
	if !p.timeSaid && !r.rec.Deadline.IsZero() && now.Add(need).After(r.rec.Deadline) {
		p.timeSaid = true
		ev := base
		ev.Snapshot, ev.Deadline, ev.Left = watchdog.ReasonDeadline, r.rec.Deadline, r.rec.Deadline.Sub(now)
		r.emit(ev)
	}
	if !p.costSaid && r.rec.MaxCostUSD > 0 && r.rec.CostPerHr > 0 {
		needUSD := need.Hours() * r.rec.CostPerHr
		// spent holds the earlier pods' cost: it counts once.
		if left := r.rec.MoneyLeft(r.spent()); needUSD > left {
			p.costSaid = true
			ev := base
			ev.Snapshot, ev.CostUSD, ev.CostPerHr = watchdog.ReasonCost, needUSD, r.rec.CostPerHr
			ev.MaxCostUSD, ev.LeftUSD = r.rec.MaxCostUSD, left
			r.emit(ev)
		}
	}
}
