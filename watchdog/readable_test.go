package watchdog

import "testing"

// What we print of the watchdog's log reads its times as RFC 3339: the
// line's and those of its time fields; msg and any other line as they are.
func TestReadable(t *testing.T) {
	for in, want := range map[string]string{
		"1767225600 start deadline=1767229200 interval=60 keep=0": "2026-01-01T00:00:00Z start deadline=2026-01-01T01:00:00Z interval=60 keep=0",
		"1767225600 deadline_held until=1767225900":               "2026-01-01T00:00:00Z deadline_held until=2026-01-01T00:05:00Z",
		"1767225600 start deadline=none interval=60":              "2026-01-01T00:00:00Z start deadline=none interval=60",
		"1767225600 probe result=failed msg=until=1767225900 x":   "2026-01-01T00:00:00Z probe result=failed msg=until=1767225900 x",
		"overbrainer bootstrap: the watchdog runs":                "overbrainer bootstrap: the watchdog runs",
		"200 OK":                    "200 OK",
		"1767225600 not=a=kind ...": "1767225600 not=a=kind ...",
	} {
		if got := Readable(in); got != want {
			t.Errorf("Readable(%q) = %q, want %q", in, got, want)
		}
	}
}
