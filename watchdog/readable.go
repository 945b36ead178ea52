package watchdog

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// timeFields are the fields of a log line that hold a Unix time.
var timeFields = []string{"deadline", "until"}

// Readable is a watchdog log line for people: its time and its time
// fields (deadline, until) in RFC 3339, UTC; the rest as it is. Any other
// line comes back unchanged. The log itself keeps Unix times.
func Readable(line string) string {
	if len(line) < 11 || line[10] != ' ' {
		return line
	}
	if _, err := ParseLine(line); err != nil {
		return line
	}
	head, msg, hasMsg := strings.Cut(line, " msg=")
	words := strings.Split(head, " ")
	words[0] = unixText(words[0])
	for i, w := range words[2:] {
		if k, v, ok := strings.Cut(w, "="); ok && slices.Contains(timeFields, k) {
			words[i+2] = k + "=" + unixText(v)
		}
	}
	out := strings.Join(words, " ")
	if hasMsg {
		out += " msg=" + msg
	}
	return out
}

// unixText is s, a Unix time in seconds, in RFC 3339; s itself when it is
// not one.
func unixText(s string) string {
	secs, err := strconv.ParseInt(s, 10, 64)
	if err != nil || secs <= 0 || strings.Trim(s, "0123456789") != "" {
		return s
	}
	return time.Unix(secs, 0).UTC().Format(time.RFC3339)
}
