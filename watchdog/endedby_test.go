package watchdog_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

func TestParseEndedBy(t *testing.T) {
	t.Parallel()
	at := time.Unix(1800000000, 0).UTC()
	for _, in := range []string{"reason=stalled at=1800000000\n", "reason=stalled at=1800000000", "reason=stalled at=1800000000\r\n"} {
		got, err := watchdog.ParseEndedBy([]byte(in))
		if err != nil || got != (watchdog.EndedBy{Reason: watchdog.DeleteStalled, At: at}) {
			t.Errorf("ParseEndedBy(%q) = %+v, %v", in, got, err)
		}
	}
	// A reason a newer watchdog has is kept as it is: the caller says it
	// does not know it.
	if got, err := watchdog.ParseEndedBy([]byte("reason=gpu_gone at=1\n")); err != nil || got.Reason != "gpu_gone" {
		t.Errorf("an unknown reason: %+v, %v", got, err)
	}
	for _, in := range []string{
		"", "\n", "reason=stalled", "reason=stalled at=", "reason= at=1", "at=1 reason=stalled",
		"reason=stalled at=-1", "reason=stalled at=1x", "reason=stall\x1b[2J at=1", "reason=stalled at=1 extra=2",
		"reason=stalled at=1\nreason=deadline at=2\n", "reason=stalled  at=1", "reason=stalled at=1234567890123456789",
		"reason=stalled at=1" + strings.Repeat(" ", 300),
	} {
		if got, err := watchdog.ParseEndedBy([]byte(in)); !errors.Is(err, watchdog.ErrMalformed) {
			t.Errorf("ParseEndedBy(%q) = %+v, %v; want ErrMalformed", in, got, err)
		}
	}
}

// FuzzParseEndedBy: what parses is a known shape (a word and a time) and
// says the same when written back; nothing panics.
func FuzzParseEndedBy(f *testing.F) {
	f.Add([]byte("reason=stalled at=1800000000\n"))
	f.Add([]byte("reason=kept_idle at=0"))
	f.Add([]byte("reason=x at=999999999999999999\r\n"))
	f.Add([]byte("reason=\xff at=1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := watchdog.ParseEndedBy(b)
		if err != nil {
			if !errors.Is(err, watchdog.ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		again, err := watchdog.ParseEndedBy(fmt.Appendf(nil, "reason=%s at=%d\n", e.Reason, e.At.Unix()))
		if err != nil || again != e {
			t.Fatalf("%q read as %+v, which reads back as %+v, %v", b, e, again, err)
		}
		if strings.ContainsAny(string(e.Reason), " =\n\x1b") {
			t.Fatalf("reason %q holds a separator or control character", e.Reason)
		}
	})
}
