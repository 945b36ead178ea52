package guard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/runpod"
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

// Launch's error for a pod that died carries the last lines of its log,
// its secrets redacted and the watchdog's times readable: what its setup
// printed says why it died.
func TestDeadPodErrorCarriesItsLog(t *testing.T) {
	const token = "tok_NeverPrintMe_0123456789"
	h := newHarness(t)
	h.api.status = runpod.StatusError
	for i := range 12 {
		h.api.podLog = append(h.api.podLog, fmt.Sprintf("line %d", i))
	}
	h.api.podLog = append(h.api.podLog, "1767225600 start deadline=none", "setup failed: "+token)
	spec := h.spec()
	spec.Job.Secrets = map[string]string{"API_TOKEN": token}
	_, err := h.launch(context.Background(), spec)
	var gone *PodGoneError
	if !errors.As(err, &gone) || gone.Status != runpod.StatusError {
		t.Fatalf("Launch: %v, want a *PodGoneError with status ERROR", err)
	}
	if lines := strings.Split(gone.PodLog, "\n"); len(lines) != deadPodLogLines || lines[0] != "line 4" {
		t.Errorf("PodLog %q, want the last %d lines", gone.PodLog, deadPodLogLines)
	}
	want := "; the last lines of its log:\n  line 4\n"
	if s := err.Error(); !strings.Contains(s, want) || !strings.HasSuffix(s, "\n  2026-01-01T00:00:00Z start deadline=none\n  setup failed: [REDACTED]") {
		t.Errorf("Launch's error:\n%s\nwant it to end with the log's last lines, redacted, times readable", s)
	}
}
