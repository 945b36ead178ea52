package guard

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The retrieved marker reaches the pod though the connection died under
// the write (its end not seen yet, new sessions failing "EOF"): a missed
// marker keeps the pod for its whole retrieve grace. The write is tried
// again on a new connection.
func TestRetrievedMarkerSurvivesADeadConnection(t *testing.T) {
	h, r := markerBreaks(t)
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

// A retrieved marker whose write broke because the watchdog took the pod
// at once (the marker got there) is no failure: nothing is said, and no
// new connection is tried to a pod that is gone.
func TestRetrievedMarkerOfAPodTakenAtOnce(t *testing.T) {
	h, r := markerBreaks(t)
	h.api.setStatus(runpod.StatusTerminated, true)
	dials := h.dialCount()
	if _, err := r.Collect(context.Background(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if h.dialCount() != dials {
		t.Errorf("a new connection was tried to a pod that is gone")
	}
	for _, e := range h.eventsOf(EventWarning) {
		t.Errorf("warning: %v", e.Err)
	}
}

// markerBreaks is a run whose job ended, followed to its end, whose next
// marker write breaks its connection.
func markerBreaks(t *testing.T) (*harness, *Run) {
	h := newHarness(t, look{st: ready}, look{st: exited(0), out: "done\n"})
	r := h.mustStart(h.spec())
	if _, err := r.Follow(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	h.pod.mu.Lock()
	h.pod.putErrs = []error{errors.New("ssh: session broke")}
	h.pod.mu.Unlock()
	return h, r
}
