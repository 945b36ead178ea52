package guard

import (
	"context"
	"strings"
	"testing"
)

// ReadOutput reads the job's output as a second reader: its secrets
// redacted, the lease never renewed; without follow up to what the job
// had printed, from the end when from is negative; with follow until the
// job ended.
func TestReadOutputRedactsAndRenewsNoLease(t *testing.T) {
	const token = "tok_NeverPrintMe_0123456789"
	h := newHarness(t, look{st: ready},
		look{st: running, out: "one\n+ : " + token + "\n"},
		look{st: running, out: "two\n"},
		look{st: exited(0), out: "three\n"})
	spec := h.spec()
	spec.Job.Secrets = map[string]string{"API_TOKEN": token}
	r := h.mustStart(spec)
	before := len(h.pod.allPolls())
	ctx := context.Background()

	// From 6 bytes before the end at the first look, to the end at the
	// second (which found "two" printed).
	var b strings.Builder
	next, err := r.ReadOutput(ctx, &b, -6, false)
	if want := "56789\ntwo\n"; err != nil || b.String() != want || next != int64(len("one\n+ : "+token+"\ntwo\n")) {
		t.Errorf("ReadOutput(-6) wrote %q, next %d, %v; want %q", b.String(), next, err, want)
	}
	b.Reset()
	if _, err := r.ReadOutput(ctx, &b, 0, true); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "one\n+ : [REDACTED]\ntwo\nthree\n"; got != want {
		t.Errorf("followed output %q, want %q", got, want)
	}
	for _, p := range h.pod.allPolls()[before:] {
		if p.Touch {
			t.Errorf("ReadOutput renewed the lease: %+v", p)
		}
	}
}
