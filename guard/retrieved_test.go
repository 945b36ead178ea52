package guard

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The retrieved marker reaches the pod though the connection died under
// the write (its end not seen yet, new sessions failing "EOF"): a missed
// marker keeps the pod for its whole retrieve grace. The write is tried
// again on a new connection.
func TestRetrievedMarkerSurvivesADeadConnection(t *testing.T) {
	h := newHarness(t, look{st: ready}, look{st: exited(0), out: "done\n"})
	r := h.mustStart(h.spec())
	if _, err := r.Follow(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	h.pod.mu.Lock()
	h.pod.putErrs = []error{errors.New("ssh: session broke")}
	h.pod.mu.Unlock()
	dials := h.dialCount()
	if _, err := r.Collect(context.Background(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	marked := false
	for _, p := range h.pod.allPuts() {
		marked = marked || p.Name == watchdog.Retrieved
	}
	if !marked {
		t.Errorf("no %s marker written: puts %v", watchdog.Retrieved, h.pod.allPuts())
	}
	if h.dialCount() == dials {
		t.Errorf("the marker was not tried on a new connection")
	}
	for _, e := range h.eventsOf(EventWarning) {
		t.Errorf("warning: %v", e.Err)
	}
}
