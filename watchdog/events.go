package watchdog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kinds of watchdog log events (the second word of a line).
const (
	KindStart             = "start"              // deadline, interval, boot_grace, retrieve_grace, lease_ttl, keep, boot_failed
	KindBadSetting        = "bad_setting"        // name: a malformed OVERBRAINER_* number, replaced by its default
	KindProbe             = "probe"              // result=ready delete_right=unproven, or result=failed reason=...; key and msg for a failed bootstrap
	KindJobStarted        = "job_started"        // job.pid appeared
	KindJobEnded          = "job_ended"          // by=exit_code|cancelled|group_gone; reason=WORD from a cancelled marker that has one
	KindRetrieved         = "retrieved"          // .pod/retrieved appeared
	KindDeadlineHeld      = "deadline_held"      // until: the deadline passed while the lease was fresh
	KindAbandonedHeld     = "abandoned_held"     // until: the retrieve grace passed while the lease was fresh
	KindKeptHeld          = "kept_held"          // sessions, procs, gpu=0|1: a kept pod's idle bound passed while in use (SSH sessions open, processes using CPU, a busy GPU)
	KindSnapshotRequested = "snapshot_requested" // reason, adopted=0|1, cap_in_min for the cost reason, still_s for a stall
	KindDeleteReason      = "delete_reason"      // reason: the rule that deletes the pod; action=stop when it stops it (kept_idle, a pod volume)
	KindDeleteCode        = "delete_code"        // method=DELETE|terminate|stop|runpodctl, code (runpodctl: its exit status, or skipped with why)
	KindDeleteCheck       = "delete_check"       // method, code, status: the GET that looks for a way's effect
	KindDeleteFailed      = "delete_failed"      // retry_in, codes: no way was confirmed, the next tick tries again
	KindDeleted           = "deleted"            // method: a GET confirmed the pod gone (404 or TERMINATED)
	KindStopped           = "stopped"            // method=stop, reason: a GET confirmed the pod stopped (EXITED), its volume still bills
	KindStopping          = "stopping"           // signal: the watchdog got TERM or INT and exits
	KindStallOver         = "stall_over"         // the job moved again after its stall snapshot was asked
	KindClockUnreadable   = "clock_unreadable"   // how=failed|empty|garbled|never_read, at=start for the start's read: no rule acted on that read
)

// DeleteRight is what the watchdog's probe says of the pod key's right to
// delete the pod: the delete_right field of a ready KindProbe line (see
// Event.DeleteRight).
type DeleteRight string

// UnprovenDeleteRight: the key read the pod, but nothing proved it may
// delete it. The API has no harmless write that would (no dry run of a
// delete; PATCH is another right), so the watchdog learns it only when it
// deletes: a refused delete logs KindDeleteFailed at every tick.
const UnprovenDeleteRight DeleteRight = "unproven"

// DeleteRight is the delete_right field of a KindProbe event, empty for
// another kind or a probe line without one (an older watchdog's).
func (e Event) DeleteRight() DeleteRight {
	if e.Kind != KindProbe {
		return ""
	}
	return DeleteRight(e.Fields["delete_right"])
}

// DeleteState is what the watchdog's log says of its deletes since it
// started: its probe's DeleteRight, and the time (the pod's, Unix seconds;
// 0: none) and codes (what each way answered) of its last delete that no
// GET confirmed (KindDeleteFailed).
type DeleteState struct {
	Right    DeleteRight
	FailedAt int64
	Codes    string
}

// DeleteReason is the rule by which the watchdog deletes a pod: the reason
// field of its KindDeleteReason log line.
type DeleteReason string

// The reasons the watchdog deletes a pod by.
const (
	DeleteBootstrapFailed DeleteReason = "bootstrap_failed"
	// DeletePodDirUnsafe: .pod was a symlink when the watchdog started, so
	// its control files could not be trusted; the watchdog fails closed.
	DeletePodDirUnsafe DeleteReason = "pod_dir_unsafe"
	DeleteCostCap      DeleteReason = "cost_cap"
	DeleteDeadline     DeleteReason = "deadline"
	// DeleteMaxExtension: the deadline plus its extension passed, which
	// no lease holds off.
	DeleteMaxExtension DeleteReason = "max_extension"
	DeleteRetrieved    DeleteReason = "retrieved"
	DeleteAbandoned    DeleteReason = "abandoned"
	DeleteNeverStarted DeleteReason = "never_started"
	// DeleteStalled: the job did not move (no new progress line, or no
	// output before it reported any, and no busy GPU when asked) for the
	// stall limit, nor in the snapshot wait after it was asked for a
	// snapshot.
	DeleteStalled DeleteReason = "stalled"
	// DeleteKeptIdle: a kept pod's job ended and nobody used the pod
	// (no SSH session open, no process outside the guard's using CPU, no
	// busy GPU, no lease touched) for its idle bound. A pod with a pod
	// volume is stopped (action=stop), which keeps the volume's data.
	DeleteKeptIdle DeleteReason = "kept_idle"
)

// DeleteReasons returns every reason the watchdog deletes a pod by, so that
// a client can explain each (and learns of a new one from its tests).
func DeleteReasons() []DeleteReason {
	return []DeleteReason{
		DeleteBootstrapFailed, DeletePodDirUnsafe, DeleteCostCap, DeleteDeadline,
		DeleteMaxExtension, DeleteRetrieved, DeleteAbandoned, DeleteNeverStarted, DeleteStalled,
		DeleteKeptIdle,
	}
}

// Event is one line of the watchdog log: `<unix time> <kind> key=value...`,
// where a final msg= field, if any, runs to the end of the line.
type Event struct {
	Time   time.Time
	Kind   string
	Fields map[string]string
}

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("malformed watchdog log line")

// ParseLine parses one log line (a trailing newline is allowed).
func ParseLine(line string) (Event, error) {
	line = strings.TrimRight(line, "\r\n")
	bad := func(why string) (Event, error) {
		return Event{}, fmt.Errorf("%w: %s: %q", ErrMalformed, why, clip(line))
	}
	// One line: a line break inside would end a field's value where its
	// String, read again, no longer does.
	if strings.ContainsAny(line, "\r\n") {
		return bad("more than one line")
	}
	ts, rest, _ := strings.Cut(line, " ")
	if ts == "" || len(ts) > 18 || strings.Trim(ts, "0123456789") != "" {
		return bad("no unix time")
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return bad("no unix time")
	}
	kind, rest, _ := strings.Cut(rest, " ")
	if !isName(kind) {
		return bad("no event kind")
	}
	ev := Event{Time: time.Unix(secs, 0).UTC(), Kind: kind, Fields: map[string]string{}}
	for rest != "" {
		if v, ok := strings.CutPrefix(rest, "msg="); ok {
			ev.Fields["msg"] = v
			break
		}
		var tok string
		tok, rest, _ = strings.Cut(rest, " ")
		k, v, ok := strings.Cut(tok, "=")
		if !ok || !isName(k) {
			return bad("field " + strconv.Quote(tok) + " is not key=value")
		}
		ev.Fields[k] = v
	}
	return ev, nil
}

// ParseLog parses a whole log. Empty lines are skipped. A malformed line (a
// write cut short by a full disk, say) does not stop the parse: the events of
// every good line are returned, with an error naming each bad line.
func ParseLog(r io.Reader) ([]Event, error) {
	var (
		events []Event
		errs   []error
	)
	br := bufio.NewReaderSize(r, 64*1024)
	for n := 1; ; n++ {
		line, tooLong, err := readLine(br, maxLogLine)
		if err != nil && err != io.EOF {
			errs = append(errs, err)
			break
		}
		switch {
		case tooLong:
			// One hostile line must not hide the events after it.
			errs = append(errs, fmt.Errorf("line %d: %w: longer than %d bytes", n, ErrMalformed, maxLogLine))
		case strings.TrimSpace(line) == "":
		default:
			if ev, perr := ParseLine(line); perr != nil {
				errs = append(errs, fmt.Errorf("line %d: %w", n, perr))
			} else {
				events = append(events, ev)
			}
		}
		if err == io.EOF {
			break
		}
	}
	return events, errors.Join(errs...)
}

// String formats the event as a log line (without newline); ParseLine reads
// it back. Fields come in key order, msg last.
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(e.Time.Unix(), 10))
	b.WriteString(" ")
	b.WriteString(e.Kind)
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		if k != "msg" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(" " + k + "=" + e.Fields[k])
	}
	if m, ok := e.Fields["msg"]; ok {
		b.WriteString(" msg=" + m)
	}
	return b.String()
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// maxLogLine bounds one line of the log; the watchdog's own lines are short.
const maxLogLine = 1 << 20

// readLine returns the next line without its newline. A line longer than max
// is read to its end and dropped, with tooLong set. err is io.EOF after the
// last line.
func readLine(br *bufio.Reader, max int) (line string, tooLong bool, err error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(b)+len(chunk) > max+1 {
				tooLong, b = true, nil
			} else {
				b = append(b, chunk...)
			}
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			return strings.TrimSuffix(string(b), "\n"), tooLong, nil
		default:
			return string(b), tooLong, err
		}
	}
}
