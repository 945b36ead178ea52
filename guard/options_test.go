package guard

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// WithEvents given twice (a caller's handler and guardmetrics' Observe,
// say) calls both with every event, in the order given; before, the last
// one given silently replaced the first.
func TestWithEventsTwiceCallsBoth(t *testing.T) {
	h := newHarness(t)
	h.pod.looks = []look{{st: ready}, {st: running},
		{err: io.ErrUnexpectedEOF, do: func() { h.api.setStatus("", true) }}}
	var first, second []EventKind
	r := h.mustStart(h.spec(),
		WithEvents(func(e Event) { first = append(first, e.Kind) }),
		WithEvents(func(e Event) { second = append(second, e.Kind) }))
	_, _ = r.Follow(t.Context(), io.Discard) // the pod goes: events enough
	var all []EventKind
	for _, e := range h.allEvents() {
		all = append(all, e.Kind)
	}
	if len(all) == 0 {
		t.Fatal("the harness saw no events")
	}
	if d := cmp.Diff(all, first); d != "" {
		t.Errorf("the first handler's events (-harness +first):\n%s", d)
	}
	if d := cmp.Diff(all, second); d != "" {
		t.Errorf("the second handler's events (-harness +second):\n%s", d)
	}
}
