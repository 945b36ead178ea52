package launcher

import (
	"fmt"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// podEnd is what this machine knows of what ended a run's pod: the rule
// its watchdog deleted it by, when a launcher saw it (the Record keeps it)
// or the watchdog's ended_by file is in a copy of the run directory here;
// else the rules whose time had come when the pod was found gone.
type podEnd struct {
	rule watchdog.DeleteReason
	due  []watchdog.DeleteReason
}

// endOf says what ended run r's pod, found gone at at. The rules due are
// those of a run left to its watchdog (detached, or left on a failure),
// or those a launcher saved when it found the pod gone: a launcher that
// deleted the pod itself ended it by none.
func endOf(r *state.Run, at time.Time) podEnd {
	switch {
	case r.DeleteReason != "":
		return podEnd{rule: r.DeleteReason}
	case r.OutDir != "":
		if e, err := guard.ReadEndedBy(r.OutDir); err == nil {
			return podEnd{rule: e.Reason}
		}
	}
	switch {
	case len(r.DueWhenGone) > 0:
		return podEnd{due: r.DueWhenGone}
	case r.Phase == state.PhaseDetached || r.Phase == state.PhaseLeftToPod:
		return podEnd{due: r.DueBy(at)}
	}
	return podEnd{}
}

// column is the end for ls's reason column: the rule, or the rules due
// then, each marked "?"; "-" for nothing known.
func (e podEnd) column() string {
	if e.rule != "" {
		return dash(string(e.rule))
	}
	if len(e.due) == 0 {
		return "-"
	}
	rules := make([]string, len(e.due))
	for i, r := range e.due {
		rules[i] = string(r) + "?"
	}
	return strings.Join(rules, ",")
}

// text is the end in words, for a pod found gone; empty when nothing is
// known.
func (e podEnd) text() string {
	if e.rule != "" {
		return fmt.Sprintf("its watchdog deleted it (%s): %s", termtext.Escape(string(e.rule), false), e.rule.Explain())
	}
	if len(e.due) == 0 {
		return ""
	}
	rules := make([]string, len(e.due))
	for i, r := range e.due {
		rules[i] = fmt.Sprintf("%s (%s)", r, r.Summary())
	}
	return "no launcher saw which rule of its watchdog ended it; these were due by then: " + strings.Join(rules, "; ")
}

// dueNote explains ls's "?" reasons, under the table.
const dueNote = "a reason with ? had its time come when the pod was found gone, but nothing seen names the rule that took it"
