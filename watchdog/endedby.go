package watchdog

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EndedByFile, in the run directory, is where the watchdog writes the rule
// it deletes the pod by, before the delete: "reason=WORD at=EPOCH\n". On a
// network volume it outlives the pod, so that a client that did not see
// the watchdog's KindDeleteReason line can still say what ended the run.
const EndedByFile = "ended_by"

// EndedBy is the content of EndedByFile.
type EndedBy struct {
	Reason DeleteReason
	At     time.Time // when the watchdog decided, by the pod's clock
}

// maxEndedBy bounds what ParseEndedBy reads: the watchdog's line is short.
const maxEndedBy = 256

// ParseEndedBy reads an EndedByFile: one line of two fields, reason (a
// word, which may be a reason this program does not know) and at (a unix
// time), in that order. Anything else is ErrMalformed.
func ParseEndedBy(b []byte) (EndedBy, error) {
	s := string(b)
	bad := func(why string) (EndedBy, error) {
		return EndedBy{}, fmt.Errorf("%w: %s: %s: %q", ErrMalformed, EndedByFile, why, clip(s))
	}
	if len(b) > maxEndedBy {
		return bad("too long")
	}
	line, rest, _ := strings.Cut(s, "\n")
	if rest != "" {
		return bad("more than one line")
	}
	line = strings.TrimSuffix(line, "\r")
	reason, at, ok := strings.Cut(line, " ")
	if !ok {
		return bad("not two fields")
	}
	reason, ok = strings.CutPrefix(reason, "reason=")
	if !ok || !isName(reason) {
		return bad("no reason=WORD")
	}
	at, ok = strings.CutPrefix(at, "at=")
	if !ok || at == "" || len(at) > 18 || strings.Trim(at, "0123456789") != "" {
		return bad("no at=EPOCH")
	}
	secs, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return bad("no at=EPOCH")
	}
	return EndedBy{Reason: DeleteReason(reason), At: time.Unix(secs, 0).UTC()}, nil
}
