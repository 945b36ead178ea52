package guard

import (
	"context"
	"errors"
	"strings"
	"testing"
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
