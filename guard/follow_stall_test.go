package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// progressing is a running job whose last progress line is line.
func progressing(line string) jobctl.State {
	st := running
	st.Progress = line
	return st
}

// followScript follows a job through looks (2 s apart), an hour of them
// at most, then its exit, and returns the lease renewals' times after
// the follow's start.
func followScript(t *testing.T, h *harness, r *Run) []time.Duration {
	t.Helper()
	from, first := h.clk.Now(), len(h.pod.allPolls())
	if _, err := r.Follow(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for _, p := range h.pod.allPolls()[first:] {
		if p.Touch {
			got = append(got, p.At.Sub(from))
		}
	}
	return got
}

func stallPuts(h *harness) int {
	n := 0
	for _, p := range h.pod.allPuts() {
		if p.Name == watchdog.SnapshotRequest && p.Value == string(watchdog.ReasonStall) {
			n++
		}
	}
	return n
}

// With the stall rule on, a job that reported progress and then stands
// still (no output, no new line, no movement the watchdog saw) no longer
// renews the lease, and once it has not moved for StallAfter it is told
// stalled and asked for a snapshot, once, with the delete's due time. A
// job whose progress moves, that prints after its last progress line, or
// that the watchdog saw move (its outputs, its CPU) keeps its lease and is
// never stalled.
func TestStallStopsTheLeaseAndAsksASnapshot(t *testing.T) {
	same := func(int) string { return "step=1 total=5000" }
	for _, tc := range []struct {
		name     string
		line     func(i int) string
		out      string
		moved    func(i int) int64 // the watchdog's JobState.Moved
		gpu      int
		renewals int // at least
		stalled  bool
		puts     int
	}{
		{"stands still", same, "", nil, 0, 1, true, 1},
		{"progress moves", func(i int) string { return fmt.Sprintf("step=%d total=5000", i) }, "", nil, 0, 12, false, 0},
		{"prints after its progress", same, "eval batch done\n", nil, 0, 12, false, 0},
		{"the watchdog sees it move", same, "", func(i int) int64 { return 1_800_000_000 + int64(i/100)*200 }, 0, 12, false, 0},
		{"GPU asked: the watchdog asks", same, "", nil, 50, 1, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := []look{{st: ready}}
			for i := range 1800 {
				st := progressing(tc.line(i))
				if tc.moved != nil {
					st.Moved = tc.moved(i)
				}
				script = append(script, look{st: st, out: tc.out})
			}
			h := newHarness(t, append(script, look{st: exited(0)})...)
			spec := h.spec()
			spec.StallAfter, spec.MinGPUUtil = 10*time.Minute, tc.gpu
			r := h.mustStart(spec)
			got := followScript(t, h, r)
			switch {
			case tc.stalled && len(got) != 1:
				t.Errorf("a stalled job's lease renewed at %v, want only the first look", got)
			case len(got) < tc.renewals:
				t.Errorf("lease renewed at %v, want at least %d renewals", got, tc.renewals)
			}
			ev := h.eventsOf(EventStalled)
			if tc.stalled != (len(ev) == 1) || len(ev) > 1 {
				t.Fatalf("%d stall events, want stalled=%v", len(ev), tc.stalled)
			}
			if tc.stalled {
				e := ev[0]
				if e.Elapsed < 10*time.Minute || e.Elapsed > 10*time.Minute+testPoll || e.ProgressLine != "step=1 total=5000" {
					t.Errorf("stall event %+v: want 10m without movement and the last progress line", e)
				}
				if want := e.Time.Add(spec.EffectiveRules().SnapshotWait); tc.gpu == 0 && !e.Deadline.Equal(want) {
					t.Errorf("stall event's delete time %v, want a snapshot wait after it, %v", e.Deadline, want)
				}
			}
			if n := stallPuts(h); n != tc.puts {
				t.Errorf("%d stall snapshot requests, want %d", n, tc.puts)
			}
		})
	}
}

// From the progress's step and total, the follow warns once when the
// steps left need more time than the deadline leaves, and once when they
// need more money than the cost cap leaves; a job fast enough is not
// warned of.
func TestPaceWarnings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		total      int
		time, cost int
	}{
		// 2 s a step: 100000 steps take 55 h, $38 at $0.69/h.
		{"slow", 100000, 1, 1},
		// 300 steps take 10 min, under 2 h and $1.
		{"fast", 300, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, paceLooks(200, tc.total)...)
			spec := h.spec()
			spec.MaxCostUSD = 1
			r := h.mustStart(spec)
			followScript(t, h, r)
			var td, tcost []Event
			for _, e := range h.eventsOf(EventPace) {
				switch e.Snapshot {
				case watchdog.ReasonDeadline:
					td = append(td, e)
				case watchdog.ReasonCost:
					tcost = append(tcost, e)
				default:
					t.Errorf("a pace warning for %q", e.Snapshot)
				}
			}
			if len(td) != tc.time || len(tcost) != tc.cost {
				t.Fatalf("%d deadline and %d cost pace warnings, want %d and %d", len(td), len(tcost), tc.time, tc.cost)
			}
			if tc.time == 0 {
				return
			}
			if e := td[0]; e.PerStep != testPoll || e.Steps != 100000 || e.Need < 50*time.Hour || e.Left > 2*time.Hour {
				t.Errorf("deadline pace %+v", e)
			}
			if e := tcost[0]; e.CostUSD < 30 || e.MaxCostUSD != 1 || e.LeftUSD > 1 || e.CostPerHr != 0.69 {
				t.Errorf("cost pace %+v", e)
			}
		})
	}
}

// paceLooks is a job that makes steps 0 to n-1 of total, one a look
// (with output), and exits.
func paceLooks(n, total int) []look {
	script := []look{{st: ready}}
	for i := range n {
		script = append(script, look{st: progressing(fmt.Sprintf("step=%d total=%d loss=0.9", i, total)), out: "."})
	}
	return append(script, look{st: exited(0)})
}

// The cost pace counts a recovered run's earlier pods once: of a $10 cap
// whose lost pod cost $4, the new pod has $6 less what it spent, and a
// job that needs $4 more at its pace is not warned (with the earlier
// pods counted twice, it was: $2 looked left). One that needs $7 is.
func TestPaceCountsEarlierPodsOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total int // steps of 2 s at $0.69/h
		warn  bool
	}{
		{"needs $4 of $6 left", 10600, false},
		{"needs $7 of $6 left", 18400, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, paceLooks(40, tc.total)...)
			spec := h.spec()
			spec.MaxCostUSD = 10
			lost := func(c *config) {
				c.prior = []Attempt{{GPU: DefaultGPU, Outcome: OutcomeCreated, CostUSD: 4, Ended: "lost"}}
			}
			r := h.mustStart(spec, lost)
			followScript(t, h, r)
			var warned []Event
			for _, e := range h.eventsOf(EventPace) {
				if e.Snapshot == watchdog.ReasonCost {
					warned = append(warned, e)
				}
			}
			if got := len(warned) > 0; got != tc.warn {
				t.Fatalf("cost pace warnings %+v, want one: %v", warned, tc.warn)
			}
			if !tc.warn {
				return
			}
			// The cap whole, and what is left of it: $6 less the new pod's
			// spend so far (a minute or so, about a cent).
			if e := warned[0]; e.MaxCostUSD != 10 || e.LeftUSD > 6 || e.LeftUSD < 5.9 || e.CostUSD < 6 {
				t.Errorf("cost pace %+v: cap %v, left %v, need %v", e, e.MaxCostUSD, e.LeftUSD, e.CostUSD)
			}
		})
	}
}

// A pod found gone after the follow saw its job stalled went most likely
// by the stalled rule (it went between two looks, before its watchdog's
// delete_reason could be seen): the error names it.
func TestAStalledJobsPodGoneNamesTheStall(t *testing.T) {
	h := newHarness(t)
	script := []look{{st: ready}}
	for range 400 { // 800 s of looks: past the stall limit of 10 min
		script = append(script, look{st: progressing("step=1 total=5000")}) // stands still
	}
	h.pod.looks = append(script, look{err: io.ErrUnexpectedEOF, do: func() { h.api.setStatus("", true) }})
	spec := h.spec()
	spec.StallAfter = 10 * time.Minute
	r := h.mustStart(spec)
	_, err := r.Follow(context.Background(), io.Discard)
	var gone *PodGoneError
	if !errors.As(err, &gone) || gone.Rule() != watchdog.DeleteStalled {
		t.Fatalf("Follow: %v, want a *PodGoneError by the stalled rule", err)
	}
}

// With the stall rule at its default (off), a job that does not move is
// told, at podenv.StallWarnAfter and again at each multiple, and nothing
// more: no snapshot is asked, no delete is due.
func TestStallOffOnlyWarns(t *testing.T) {
	script := []look{{st: ready}}
	for range 1900 {
		script = append(script, look{st: progressing("step=1 total=5000")})
	}
	h := newHarness(t, append(script, look{st: exited(0)})...)
	spec := h.spec()
	if spec.StallAfter != 0 {
		t.Fatalf("the harness's spec has StallAfter %s, want the default (off)", spec.StallAfter)
	}
	r := h.mustStart(spec)
	followScript(t, h, r)
	ev := h.eventsOf(EventStalled)
	if len(ev) != 2 {
		t.Fatalf("%d stall warnings in an hour and a bit, want 2 (at 30m and 1h)", len(ev))
	}
	for i, e := range ev {
		if want := time.Duration(i+1) * podenv.StallWarnAfter; e.Elapsed < want || e.Elapsed > want+testPoll || !e.Deadline.IsZero() {
			t.Errorf("warning %d: %+v, want %s without movement and no delete time", i, e, want)
		}
	}
	if n := stallPuts(h); n != 0 {
		t.Errorf("%d stall snapshot requests with the rule off, want 0", n)
	}
	if r.stalled {
		t.Error("the run counts as stalled with the rule off: a pod found gone would be put down to it")
	}
}
