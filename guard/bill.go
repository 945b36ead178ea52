package guard

import (
	"context"
	"errors"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod"
)

// Bill is what Runpod billed the run's pods; read again while BillDue says.
type Bill struct {
	USD     float64   `json:"usd"`               // summed over the run's pods
	Pods    []string  `json:"pods,omitempty"`    // those billed
	Missing []string  `json:"missing,omitempty"` // those not billed yet
	Read    time.Time `json:"read"`
}

// billSettle is how long after a run's end its bill may still grow.
const billSettle = time.Hour

// billTimeout bounds the bill's read at the end of a run.
const billTimeout = 30 * time.Second

// BillReader is what ReadBill needs of Runpod: a *runpod.Client.
type BillReader interface {
	PodBilling(ctx context.Context, opts runpod.PodBillingOptions) (*runpod.PodBilling, error)
}

// BillPods are the run's pods, earlier attempts' first, each once.
func (r Record) BillPods() []string {
	var ids []string
	add := func(id string) {
		for _, have := range ids {
			if have == id {
				return
			}
		}
		if id != "" {
			ids = append(ids, id)
		}
	}
	for _, a := range r.Attempts {
		add(a.PodID)
	}
	add(r.PodID)
	return ids
}

// BillDue says the ended run's bill should be read (again): it is not settled.
func (r Record) BillDue() bool {
	if r.Ended.IsZero() || len(r.BillPods()) == 0 {
		return false
	}
	if r.Bill == nil {
		return true
	}
	return !r.BillSettled()
}

// BillSettled says the bill was read at least billSettle after the end.
func (r Record) BillSettled() bool {
	return r.Bill != nil && !r.Ended.IsZero() && !r.Bill.Read.Before(r.Ended.Add(billSettle))
}

// ReadBill reads what the run's pods cost, as of now.
func ReadBill(ctx context.Context, api BillReader, rec Record, now time.Time) (*Bill, error) {
	start := rec.BillingStart
	for _, a := range rec.Attempts {
		if !a.Time.IsZero() && (start.IsZero() || a.Time.Before(start)) {
			start = a.Time
		}
	}
	if start.IsZero() || start.After(now) {
		// Runpod's default window is the last 30 days.
		start = time.Time{}
	} else {
		// Runpod snaps the start to the bucket; a day more covers a
		// create just before midnight on a clock that runs late.
		start = start.Add(-24 * time.Hour)
	}
	b := &Bill{Read: now}
	for _, id := range rec.BillPods() {
		got, err := api.PodBilling(ctx, runpod.PodBillingOptions{PodID: id, Start: start, Bucket: runpod.BucketDay})
		if err != nil {
			return nil, err
		}
		if usd, ok := got.Billed(id); ok {
			b.USD += usd
			b.Pods = append(b.Pods, id)
		} else {
			b.Missing = append(b.Missing, id)
		}
	}
	return b, nil
}

// readBill reads the run's bill at its end, when the API can say it,
// whatever ctx says (a bounded read). A failure is a warning: `ls` reads
// it again later.
func (r *Run) readBill() {
	br, ok := r.api.(BillReader)
	if !ok || !r.rec.BillDue() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), billTimeout)
	defer cancel()
	b, err := ReadBill(ctx, br, r.rec, r.now())
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			r.warn(&BillError{Err: err})
		}
		return
	}
	r.rec.Bill = b
}

// BillError is a failed read of the run's bill.
type BillError struct{ Err error }

func (e *BillError) Error() string { return "reading Runpod's bill of the run: " + e.Err.Error() }

func (e *BillError) Unwrap() error { return e.Err }
