package launcher

import (
	"context"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
)

// billNote explains a billed amount that may still grow.
const billNote = "billed: what Runpod's billing says so far; \"pending\" (none yet) and a trailing \"+\" (it may grow) are read again by ls until an hour after the run ended"

// billedText is the BILLED column of a run, and whether it may still
// change; final says it cannot (its emulator ended).
func billedText(r guard.Record, final bool) (string, bool) {
	due := r.BillDue() && !final
	switch {
	case (r.Bill == nil || len(r.Bill.Pods) == 0) && due:
		return "pending", true
	case r.Bill == nil:
		return "-", false
	case due:
		return money(r.Bill.USD) + "+", true
	}
	return money(r.Bill.USD), false
}

// readBills reads again the bills of the ended runs that Runpod had not
// finished billing, and saves them. A run another launcher holds is left
// to it; a failed read leaves the run as it was.
func (a *app) readBills(ctx context.Context, runs []*state.Run) {
	for i, r := range runs {
		if !r.BillDue() || a.emulatorGone(r) {
			// An ended emulator's bill is the one it gave: another
			// emulator knows nothing of the pod.
			continue
		}
		lock, err := a.store.TryLock(r.ID)
		if err != nil {
			continue
		}
		fresh, err := a.store.Load(r.ID)
		if err == nil && fresh.BillDue() {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			var b *guard.Bill
			if b, err = guard.ReadBill(ctx, a.api, fresh.Record, time.Now()); err == nil {
				fresh.Bill = b
				err = a.store.Save(fresh)
			}
			cancel()
		}
		lock.Unlock()
		if err != nil {
			a.say("reading the bill of run %s: %v", r.ID, err)
			continue
		}
		runs[i] = fresh
	}
}
