package guard

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Sentinels for errors.Is; *PodGoneError, *VerdictError, *CollectError,
// *DeleteUnconfirmedError and *EnforcedError match theirs.
var (
	ErrPodGone       = errors.New("guard: the pod is gone")                  // deleted, by its watchdog or anyone, or stopped
	ErrVerdictFailed = errors.New("guard: the watchdog's verdict is failed") // so its rules do not guard the pod
	// The job died with the pod's container (Runpod restarted it), or its run directory did.
	ErrJobLost           = errors.New("guard: the job was lost")
	ErrCollect           = errors.New("guard: the results could not be collected")
	ErrNoPod             = errors.New("guard: the run has no pod") // or not listed any more
	ErrDeleteUnconfirmed = errors.New("guard: the pod's delete is not confirmed")
	ErrNotCollected      = errors.New("guard: the run's results were not collected") // Remove of a started run (force)
	ErrNoOutputs         = errors.New("guard: the job left no outputs")              // Results.RequireOutputs
	ErrNotAbandoned      = errors.New("guard: the pod is not provably abandoned")
	ErrEnforced          = errors.New("guard: the client enforced its watchdog's rule")
	ErrRecordMismatch    = errors.New("guard: the record is not this pod's run")
	ErrNoGPU             = errors.New("guard: no GPU type could be had")                         // none passed the filters, or each was refused or out of stock
	ErrCapSpent          = errors.New("guard: the cost cap was spent before a pod came up")      // by pods that never came up: the cap is the run's
	ErrStartTimeout      = errors.New("guard: the pod did not come up within the start timeout") // WithStartTimeout
	ErrNoSnapshotProof   = errors.New("guard: the outputs hold no snapshot proof")               // no SnapshotFile
)

// PodGoneError says how the pod was found gone.
type PodGoneError struct {
	PodID        string
	Status       runpod.PodStatus      // the last one; empty when the API no longer knows the pod
	DeleteReason watchdog.DeleteReason // the rule its watchdog was seen deleting it by
	Due          watchdog.DeleteReason // a lease-proof rule whose time had come: the likely one
	Detail       string                // what the client was doing
	// PodLog is the last lines of the log of a pod that died (EXITED or
	// ERROR), one a line, as Runpod's log stream had them, secrets
	// [REDACTED]: what its setup printed before it died says why.
	PodLog string
}

func (e *PodGoneError) Error() string {
	s := fmt.Sprintf("pod %s no longer exists", e.PodID)
	if e.Status != "" {
		s = fmt.Sprintf("pod %s is %s", e.PodID, e.Status)
	}
	if e.Detail != "" {
		s += " (" + termtext.Escape(e.Detail, false) + ")"
	}
	switch {
	case e.DeleteReason != "":
		s += fmt.Sprintf("; its watchdog was deleting it (%s)", termtext.Escape(string(e.DeleteReason), false))
	case e.Due != "":
		s += fmt.Sprintf("; the time of its watchdog's %s rule had come", e.Due)
	}
	if e.PodLog != "" {
		s += "; the last lines of its log:"
		for _, l := range strings.Split(e.PodLog, "\n") {
			s += "\n  " + termtext.Escape(watchdog.Readable(l), false)
		}
	}
	return s
}

func (e *PodGoneError) Is(target error) bool { return target == ErrPodGone }

// Rule is the rule that most likely took the pod: DeleteReason, else Due.
func (e *PodGoneError) Rule() watchdog.DeleteReason { return cmp.Or(e.DeleteReason, e.Due) }

// VerdictError is a failed verdict.
type VerdictError struct {
	Verdict watchdog.Verdict // Failed, with its Reason
}

func (e *VerdictError) Error() string {
	return "the watchdog's verdict: " + termtext.Escape(e.Verdict.String(), false)
}

func (e *VerdictError) Is(target error) bool { return target == ErrVerdictFailed }

// CollectError is a failed download of the results.
type CollectError struct{ Err error }

func (e *CollectError) Error() string { return "downloading the results: " + e.Err.Error() }
func (e *CollectError) Unwrap() error { return e.Err }

func (e *CollectError) Is(target error) bool { return target == ErrCollect }

// DeleteUnconfirmedError is an answered delete whose pod the API still shows.
type DeleteUnconfirmedError struct {
	PodID string
	Seen  string // how the API still showed the pod at the last look
	After time.Duration
}

func (e *DeleteUnconfirmedError) Error() string {
	return fmt.Sprintf("the delete of pod %s was answered, but %s after %s: the delete is NOT confirmed and the pod may still bill; "+
		"check with GET /v2/pods/%s (404 or TERMINATED is gone) or in the Runpod console (Pods), and delete it there if it is listed",
		e.PodID, e.Seen, e.After.Round(time.Second), e.PodID)
}

func (e *DeleteUnconfirmedError) Is(target error) bool { return target == ErrDeleteUnconfirmed }

// EnforcedError is the client deleting the pod by a rule the watchdog missed.
type EnforcedError struct {
	Reason watchdog.DeleteReason
	Detail string
}

func (e *EnforcedError) Error() string {
	return fmt.Sprintf("%s, and the pod's watchdog had not deleted it (it died or hangs): this client deletes it (%s)", e.Detail, e.Reason)
}

func (e *EnforcedError) Is(target error) bool { return target == ErrEnforced }
