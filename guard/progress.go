package guard

import (
	"sync/atomic"
	"time"

	"github.com/overbrainer/overbrainer-go/podssh"
)

// progressEvery is how often a transfer's progress is told: often enough
// for a line redrawn on a terminal, seldom enough for a log.
const progressEvery = 500 * time.Millisecond

// transfer runs move on a goroutine of its own with a Progress that
// counts, and tells EventTransfer (Bytes so far, Total, Elapsed) every
// progressEvery and once at a successful end, from this goroutine, as
// WithEvents promises. Only changed counts are told, so the last event
// carries the bytes that moved.
func (r *Run) transfer(stage Stage, move func(podssh.Progress) error) error {
	var done, total atomic.Int64
	var moving atomic.Bool
	total.Store(-1)
	progress := func(d, t int64) {
		total.Store(t)
		done.Store(d)
		moving.Store(true)
	}
	start := r.now()
	told := int64(-1)
	// A tick before the transfer's first word tells nothing: its total is
	// not known yet, and -1 would say the pod sent none.
	tell := func(end bool) {
		if !end && !moving.Load() {
			return
		}
		if d := done.Load(); d != told {
			told = d
			r.emit(Event{Kind: EventTransfer, Stage: stage, Bytes: d, Total: total.Load(), Elapsed: r.since(start)})
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- move(progress) }()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			if err == nil {
				tell(true)
			}
			return err
		case <-tick.C:
			tell(false)
		}
	}
}

// waiting tells a look at a pod on its way to running the job that found
// it not there yet: what is waited for, with the time since the create
// call and the cost so far.
func (r *Run) waiting(stage Stage) {
	r.emit(Event{Kind: EventWaiting, Stage: stage, Addr: r.addr, Elapsed: r.since(r.rec.BillingStart), CostUSD: r.spent()})
}
