package guard

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// movement is what a follow knows of the job moving: the rule the pod's
// watchdog applies, seen from this side. Once the job reports progress (a
// line in its progress file), only a new line is movement; before that,
// new output is. It renews the lease, and its absence for the run's
// StallAfter is a stall.
type movement struct {
	line string    // the last progress line seen
	at   time.Time // when the job last moved (the follow's start at first)
	// stalled says the stall was told (and its snapshot asked) since the
	// job last moved.
	stalled bool
	pace    pace
}

// see takes one look into account, with the output bytes it brought.
func (m *movement) see(now time.Time, st jobctl.State, output int) {
	moved := false
	if st.Progress != "" {
		moved = st.Progress != m.line
		m.line = st.Progress
	} else {
		moved = output > 0
	}
	if moved || m.at.IsZero() {
		m.at = now
	}
	if moved {
		m.stalled = false
	}
}

// movedSince says the job moved after t.
func (m *movement) movedSince(t time.Time) bool { return m.at.After(t) }

// stallCheck tells a stall once the running job has not moved for the
// run's StallAfter, and asks the job for a snapshot (reason stall) unless
// a request is there already, as the watchdog does: a stalled job holds
// no lease (see follow). With MinGPUUtil the snapshot is left to the
// watchdog, which alone sees the GPU: a busy one holds the job. A kept
// run has no stall rule.
func (r *Run) stallCheck(ctx context.Context, st jobctl.State, m *movement) {
	r.stalled = m.stalled
	if r.rec.Keep || !st.Started() || st.Ended() || m.stalled {
		return
	}
	limit := r.rec.EffectiveRules().StallAfter
	still := r.since(m.at)
	if still < limit {
		return
	}
	m.stalled, r.stalled = true, true
	r.emit(Event{Kind: EventStalled, Elapsed: still, ProgressLine: m.line, Snapshot: st.Request})
	if r.rec.MinGPUUtil > 0 || st.Request != "" {
		return
	}
	if err := r.put(ctx, watchdog.SnapshotRequest, string(watchdog.ReasonStall)); err != nil {
		// Tried again at the next look.
		m.stalled, r.stalled = false, false
		r.warn(err)
	}
}

// isStalled says the job has not moved for the run's StallAfter (a kept
// run never stalls).
func (r *Run) isStalled(m *movement) bool {
	return !r.rec.Keep && !m.at.IsZero() && r.since(m.at) >= r.rec.EffectiveRules().StallAfter
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
		if left := r.rec.budget() - r.spent(); needUSD > left {
			p.costSaid = true
			ev := base
			ev.Snapshot, ev.CostUSD, ev.MaxCostUSD, ev.CostPerHr = watchdog.ReasonCost, needUSD, left, r.rec.CostPerHr
			r.emit(ev)
		}
	}
}
