package guard

import "testing"

// The events that count things say one of a thing in the singular.
func TestEventsCountInWords(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want string
	}{
		{Event{Kind: EventCollected, Dir: "r", Files: 1, Bytes: 1}, "results downloaded to r (1 file, 1 byte)"},
		{Event{Kind: EventCollected, Dir: "r", Files: 2, Bytes: 10}, "results downloaded to r (2 files, 10 bytes)"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
