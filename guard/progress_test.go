package guard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podssh"
)

// The waits for sshd and for the verdict are told at each look, with the
// time and the cost since the create call growing (on the test's clock).
func TestLongWaitsTellTimeAndCost(t *testing.T) {
	h := newHarness(t, look{st: noVerdict}, look{st: noVerdict}, look{st: ready})
	refused := errors.New("fake: connection refused")
	h.dialErrs = []error{refused, refused}
	if _, err := h.launch(context.Background(), h.spec()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stage Stage
		n     int
	}{{StageSSH, 2}, {StageVerdict, 2}} {
		es := h.eventsAt(EventWaiting, c.stage)
		if len(es) < c.n {
			t.Fatalf("%d waiting %s events, want %d or more", len(es), c.stage, c.n)
		}
		for i, e := range es {
			if e.CostUSD < 0 || e.Elapsed < 0 || (i > 0 && (e.Elapsed <= es[i-1].Elapsed || e.CostUSD <= es[i-1].CostUSD)) {
				t.Errorf("waiting %s events do not grow: %+v", c.stage, es)
			}
		}
	}
	if !h.eventsAt(EventWaiting, StageSSH)[0].Repeats() || (Event{Kind: EventCost}).Repeats() {
		t.Error("Progress is not true of the waits alone")
	}
}

// A transfer's progress is told only once the transfer has said how far it
// is: a tick that comes before (a pod slow to start sending, as on a busy
// machine) told 0 bytes of a total of -1, "unknown", about a transfer
// whose total the pod then sent.
func TestTransferToldOnlyOnceItMoves(t *testing.T) {
	h := newHarness(t, look{st: ready})
	r, err := h.launch(context.Background(), h.spec())
	if err != nil {
		t.Fatal(err)
	}
	before := len(h.eventsAt(EventTransfer, StageDownload))
	err = r.transfer(StageDownload, func(progress podssh.Progress) error {
		// Three ticks pass before the pod's first word.
		time.Sleep(3 * progressEvery)
		progress(0, 10)
		progress(10, 10)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	es := h.eventsAt(EventTransfer, StageDownload)[before:]
	if len(es) == 0 || es[len(es)-1].Bytes != 10 {
		t.Fatalf("events %+v, want the last with 10 bytes", es)
	}
	for _, e := range es {
		if e.Total != 10 {
			t.Errorf("an event told a total of %d before the transfer said 10: %+v", e.Total, es)
		}
	}
}
