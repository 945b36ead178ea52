package sweep

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/overbrainer/overbrainer-go/internal/termtext"
)

// String is the decision in one line, for a person. What the API gave
// (ids, names, statuses) is escaped: a pod's name is anyone's text.
func (d Decision) String() string {
	e := func(s string) string { return termtext.Escape(s, false) }
	what := "pod " + e(d.PodID) + " (" + e(d.PodName) + ", " + e(string(d.Status)) + ")"
	if d.Secret != "" {
		what = "secret " + e(d.Secret)
	}
	verb := "keep"
	switch {
	case d.Delete && d.Done && d.Err != nil:
		verb = "FAILED to delete"
	case d.Delete && d.Done:
		verb = "deleted"
	case d.Delete:
		verb = "would delete"
	case d.Rule == RuleUnmarked:
		verb = "NOT MARKED, left"
	case d.Rule == RuleCannotJudge:
		verb = "CANNOT JUDGE, left"
	}
	s := fmt.Sprintf("%s %s: %s: %s", verb, what, d.Rule, e(d.Why))
	if d.Err != nil {
		s += ": " + e(d.Err.Error())
	}
	return s
}

// Report is what one sweep saw and did.
type Report struct {
	Pods, Secrets int // listed
	Decisions     []Decision
	// SecretsSkipped says why no secret was judged (their listing
	// failed); the pods were judged all the same.
	SecretsSkipped string `json:"secrets_skipped,omitempty"`
	// Pass is when the sweep started (on the Policy's clock) and how long
	// its listings, judgments and deletes took.
	Pass Pass `json:"pass"`
}

// Committed is what the account's guarded pods may still spend by their
// own rules, summed (Decision.LeftUSD), and the decisions of the pods
// whose spend nothing bounds: a kept pod running (NoBound), one the sweep
// could not judge. A pod this sweep deleted commits nothing more.
func (r Report) Committed() (usd float64, unbounded []Decision) {
	for _, d := range r.Decisions {
		switch {
		case d.Secret != "" || d.Deleted() || d.Rule == RuleUnmarked:
		case d.NoBound || d.Rule == RuleCannotJudge:
			unbounded = append(unbounded, d)
		default:
			usd += d.LeftUSD
		}
	}
	return usd, unbounded
}

// Deleted counts the deletes made.
func (r Report) Deleted() int {
	n := 0
	for _, d := range r.Decisions {
		if d.Deleted() {
			n++
		}
	}
	return n
}

// Told says a decision is worth a line even when not every one is
// written: it deletes, or leaves a pod its owner should look at
// (unmarked, cannot be judged, kept and still billing while stopped).
func (d Decision) Told() bool {
	return d.Delete || d.Rule == RuleUnmarked || d.Rule == RuleCannotJudge || (d.Kept && stillBills(d.Status))
}

// Write writes the report for a person, one line per decision Told (every
// decision when all) and a total; or, with asJSON, one JSON line per
// decision. err is the pass's error, said last.
func (r Report) Write(w io.Writer, asJSON, all bool, err error) error {
	enc := json.NewEncoder(w)
	for _, d := range r.Decisions {
		var werr error
		switch {
		case asJSON:
			werr = enc.Encode(d)
		case all || d.Told():
			_, werr = fmt.Fprintln(w, d)
		}
		if werr != nil {
			return werr
		}
	}
	if err != nil && !asJSON {
		_, werr := fmt.Fprintf(w, "sweep: %s\n", termtext.Escape(err.Error(), false))
		return werr
	}
	if asJSON {
		return nil
	}
	_, werr := fmt.Fprintf(w, "sweep: %s, %s, %d deleted\n", termtext.Count(int64(r.Pods), "pod", "pods"), termtext.Count(int64(r.Secrets), "secret", "secrets"), r.Deleted())
	return werr
}
