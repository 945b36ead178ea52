package guard

import (
	"context"
	"errors"
	"strings"
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
		kind EventKind
		n    int
	}{{EventWaitingSSH, 2}, {EventWaitingVerdict, 2}} {
		es := h.eventsOf(c.kind)
		if len(es) < c.n {
			t.Fatalf("%d %s events, want %d or more", len(es), c.kind, c.n)
		}
		for i, e := range es {
			if e.CostUSD < 0 || e.Elapsed < 0 || (i > 0 && (e.Elapsed <= es[i-1].Elapsed || e.CostUSD <= es[i-1].CostUSD)) {
				t.Errorf("%s events do not grow: %+v", c.kind, es)
			}
		}
	}
	if !h.eventsOf(EventWaitingSSH)[0].Progress() || (Event{Kind: EventCost}).Progress() {
		t.Error("Progress is not true of the waits alone")
	}
	if s := h.eventsOf(EventWaitingVerdict)[1].String(); !strings.Contains(s, "waiting for the watchdog's verdict | ") || !strings.Contains(s, " elapsed, ~$") {
		t.Errorf("the verdict wait says %q", s)
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
	before := len(h.eventsOf(EventDownloading))
	err = r.transfer(EventDownloading, func(progress podssh.Progress) error {
		// Three ticks pass before the pod's first word.
		time.Sleep(3 * progressEvery)
		progress(0, 10)
		progress(10, 10)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	es := h.eventsOf(EventDownloading)[before:]
	if len(es) == 0 || es[len(es)-1].Bytes != 10 {
		t.Fatalf("events %+v, want the last with 10 bytes", es)
	}
	for _, e := range es {
		if e.Total != 10 {
			t.Errorf("an event told a total of %d before the transfer said 10: %+v", e.Total, es)
		}
	}
}
