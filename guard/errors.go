package guard

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Sentinels for errors.Is.
var (
	// ErrPodGone: the pod no longer runs (deleted by its watchdog or by
	// someone else, or it stopped). A *PodGoneError says more.
	ErrPodGone = errors.New("guard: the pod is gone")
	// ErrVerdictFailed: the watchdog's probe of the API failed, so its
	// rules could not delete the pod. A *VerdictError says why.
	ErrVerdictFailed = errors.New("guard: the watchdog's verdict is failed")
	// ErrJobLost: the job died with the pod's container (Runpod restarted
	// it), or its run directory went with it.
	ErrJobLost = errors.New("guard: the job was lost")
	// ErrCollect: the results could not be downloaded. A *CollectError
	// wraps the cause.
	ErrCollect = errors.New("guard: the results could not be collected")
	// ErrNoPod: no pod of the run exists (it never got one, or it is gone
	// from the list).
	ErrNoPod = errors.New("guard: the run has no pod")
	// ErrDeleteUnconfirmed: a delete was answered, but the API still
	// shows the pod. A *DeleteUnconfirmedError says how to check.
	ErrDeleteUnconfirmed = errors.New("guard: the pod's delete is not confirmed")
	// ErrNotCollected: Remove refused a run whose job was started and
	// whose results were not collected, its pod still up (WithForce
	// deletes it anyway).
	ErrNotCollected = errors.New("guard: the run's results were not collected")
	// ErrNoOutputs: Results.RequireOutputs, and the job left no file in
	// its outputs directory.
	ErrNoOutputs = errors.New("guard: the job left no outputs")
	// ErrNotAbandoned: RemoveOrphan left a pod that is not provably
	// abandoned.
	ErrNotAbandoned = errors.New("guard: the pod is not provably abandoned")
	// ErrEnforced: the client ended the run by one of its watchdog's
	// rules, which the watchdog had not applied in time (it died or
	// hangs). An *EnforcedError says which.
	ErrEnforced = errors.New("guard: the client enforced its watchdog's rule")
	// ErrRecordMismatch: a Record that is not this pod's run.
	ErrRecordMismatch = errors.New("guard: the record is not this pod's run")
	// ErrHostKeyMismatch: the server at the pod's address does not hold
	// the run's host key; nothing was sent to it.
	ErrHostKeyMismatch = podssh.ErrHostKeyMismatch
)

// FieldError is a Spec, Job or Record field that cannot make a guarded run.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "guard: " + e.Field + ": " + e.Reason }

// PodGoneError says how the pod was found gone.
type PodGoneError struct {
	PodID string
	// Status is the pod's last status, empty when the API no longer knows
	// it.
	Status runpod.PodStatus
	// DeleteReason is the rule by which its watchdog was deleting it, when
	// one was seen.
	DeleteReason watchdog.DeleteReason
	// Due is the lease-proof rule (DeleteCostCap, DeleteMaxExtension,
	// DeleteStalled once this client saw a stall) whose time had come, by
	// this machine's clock, when the pod was found gone: the likely reason
	// when no DeleteReason was seen.
	Due watchdog.DeleteReason
	// Detail is what the client was doing, or empty.
	Detail string
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
	return s
}

func (e *PodGoneError) Is(target error) bool { return target == ErrPodGone }

// Rule is the rule that most likely took the pod: the one its watchdog was
// seen deleting it by, else Due.
func (e *PodGoneError) Rule() watchdog.DeleteReason { return cmp.Or(e.DeleteReason, e.Due) }

// VerdictError is a failed verdict.
type VerdictError struct {
	// Verdict is the watchdog's verdict: Failed, with its Reason.
	Verdict watchdog.Verdict
}

func (e *VerdictError) Error() string {
	return "the watchdog's verdict: " + termtext.Escape(e.Verdict.String(), false)
}

func (e *VerdictError) Is(target error) bool { return target == ErrVerdictFailed }

// Explain says in words what the failed verdict means for the pod.
func (e *VerdictError) Explain() string {
	v := e.Verdict
	if !v.Bootstrap {
		return "the pod's watchdog cannot reach the API, so the client deletes the pod"
	}
	if text := bootstrap.Explain(v.Reason); text != "" {
		return "the pod's setup failed: " + text + ". Its watchdog deletes the pod, and so does the client"
	}
	return "the pod's setup failed. Its watchdog deletes the pod, and so does the client"
}

// CollectError is a failed download of the results.
type CollectError struct{ Err error }

func (e *CollectError) Error() string { return "downloading the results: " + e.Err.Error() }
func (e *CollectError) Unwrap() error { return e.Err }

func (e *CollectError) Is(target error) bool { return target == ErrCollect }

// DeleteUnconfirmedError is a delete that Runpod answered while the pod
// stayed in its GET or its list: it may still bill.
type DeleteUnconfirmedError struct {
	PodID string
	// Seen is how the API still showed the pod at the last look.
	Seen  string
	After time.Duration
}

func (e *DeleteUnconfirmedError) Error() string {
	return fmt.Sprintf("the delete of pod %s was answered, but %s after %s: the delete is NOT confirmed and the pod may still bill; "+
		"check with GET /v2/pods/%s (404 or TERMINATED is gone) or in the Runpod console (Pods), and delete it there if it is listed",
		e.PodID, e.Seen, e.After.Round(time.Second), e.PodID)
}

func (e *DeleteUnconfirmedError) Is(target error) bool { return target == ErrDeleteUnconfirmed }

// EnforcedError is a rule of the watchdog's that the following client
// applied itself: the pod is deleted.
type EnforcedError struct {
	Reason watchdog.DeleteReason
	Detail string
}

func (e *EnforcedError) Error() string {
	return fmt.Sprintf("%s, and the pod's watchdog had not deleted it (it died or hangs): this client deletes it (%s)", e.Detail, e.Reason)
}

func (e *EnforcedError) Is(target error) bool { return target == ErrEnforced }
