package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Phase is where a run is, as its Record says.
type Phase string

// The phases of a run.
const (
	PhaseCreating  Phase = "creating" // keys made, secret and pod being created
	PhaseBooting   Phase = "booting"  // pod created, waiting for it and its verdict
	PhaseRunning   Phase = "running"  // the job started
	PhaseDetached  Phase = "detached" // the client left; the watchdog guards the pod
	PhaseDone      Phase = "done"     // collected, pod deleted (or kept)
	PhaseFailed    Phase = "failed"   // ended without the job's results
	PhaseRemoved   Phase = "removed"  // deleted without a follow (Remove)
	PhaseLeftToPod Phase = "left"     // the client gave up and left the pod to its watchdog
	PhaseStopped   Phase = "stopped"  // only a stop worked: the pod's volume still bills
	// PhaseRecovering: the pod was lost under the job and the run goes
	// on on a new one (Spec.Recover): the old one being deleted, the new
	// one not made yet; RecoveryState.Replacing names the lost pod.
	PhaseRecovering Phase = "recovering"
	PhaseUnknown    Phase = "unknown" // what nothing else says
)

// PEM is a private key in the OpenSSH PEM format. It prints as a
// placeholder, so a Record in a log or an error shows no key; JSON holds it
// whole.
type PEM string

func (PEM) String() string   { return "[private key]" }
func (PEM) GoString() string { return `guard.PEM("[private key]")` }

// Record is everything needed to find a run's pod again and take the run
// up where it was, from another process (Attach): ids, the pinned host key,
// the client's key, the run directory, the billing start, the output
// offset, the phase. It holds the client's private key: keep it private
// (Save writes it 0600). It never holds the host key's private half, the
// account key or the HF token.
type Record struct {
	ID      string `json:"id"`
	APIURL  string `json:"api_url"`
	PodName string `json:"pod_name"`
	PodID   string `json:"pod_id,omitempty"`
	// SecretName and SecretID are the Runpod secret that holds the host
	// key's private half.
	SecretName string `json:"secret_name"`
	SecretID   string `json:"secret_id,omitempty"`
	// HostKey is the run's public host key, one authorized_keys line: the
	// only key accepted from the pod.
	HostKey string `json:"host_key"`
	// ClientKey is the client's private key.
	ClientKey PEM `json:"client_key,omitempty"`
	// RunDir is the run's directory on the pod.
	RunDir string `json:"run_dir"`

	// JobDir and Command are the job Launch was given, for a Start from
	// another process.
	JobDir  string `json:"job_dir"`
	Command string `json:"command"`
	// ResumeFrom is the Job's: the outputs its Start uploads first.
	ResumeFrom string `json:"resume_from,omitempty"`

	// Rules are the run's as armed, by which a follower tells when the
	// watchdog should have acted. Their JSON is flat.
	podenv.Rules
	CostPerHr float64 `json:"cost_per_hr,omitempty"`
	// GPU is the GPU type the pod got; Attempts every try at one, in
	// order.
	GPU      string    `json:"gpu,omitempty"`
	Attempts []Attempt `json:"attempts,omitempty"`
	// BillingStart is when the create call was made: the cost cap counts
	// from it.
	BillingStart time.Time `json:"billing_start,omitzero"`

	NetworkVolumeID string `json:"network_volume_id,omitempty"`
	VolumeDir       string `json:"volume_dir,omitempty"`
	VolumeGB        int    `json:"volume_gb,omitempty"`
	MaxVolumeGB     int    `json:"max_volume_gb,omitempty"`
	// NoVolumeCaches is the Spec's: the job's caches stay off the volume.
	NoVolumeCaches bool `json:"no_volume_caches,omitempty"`
	// Results is the Spec's, for a Collect from another process.
	Results Results `json:"results,omitzero"`

	// How the run is followed, so that an Attach follows it the same way.
	Poll       time.Duration `json:"poll"`
	LeaseEvery time.Duration `json:"lease_every"`

	Phase     Phase  `json:"phase"`
	Verdict   string `json:"verdict,omitempty"`
	LogOffset int64  `json:"log_offset"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	// JobStarted is when the job was started or first seen started: a
	// Start after it never starts the job again (see Run.Start).
	JobStarted time.Time `json:"job_started,omitzero"`
	// DeleteReason is the rule by which the pod's watchdog was seen
	// deleting the pod.
	DeleteReason watchdog.DeleteReason `json:"delete_reason,omitempty"`
	// Collected is when Collect downloaded the results: the run's purpose
	// is met.
	Collected time.Time `json:"collected,omitzero"`
	Ended     time.Time `json:"ended,omitzero"`
	CostUSD   float64   `json:"cost_usd,omitempty"`
	Note      string    `json:"note,omitempty"`

	Recovery RecoveryState `json:"recovery,omitzero"`
	// Bill is what Runpod billed the run's pods, nil before it was read;
	// CostUSD is the estimate.
	Bill *Bill `json:"bill,omitempty"`
}

// Save writes the record to file as JSON, mode 0600 (it holds the client's
// key), replacing it atomically.
func (r Record) Save(file string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writePrivate(file, append(b, '\n'))
}

// LoadRecord reads a record that Save wrote.
func LoadRecord(file string) (Record, error) {
	var r Record
	b, err := os.ReadFile(file)
	if err != nil {
		return r, fmt.Errorf("guard: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("guard: %s: %w", file, err)
	}
	return r, nil
}

// writePrivate atomically replaces file with b, mode 0600.
func writePrivate(file string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(b)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	return nil
}

// check refuses a record that cannot be a run's.
func (r Record) check() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "Record." + field, Reason: fmt.Sprintf(format, args...)})
	}
	if err := CheckRunID(r.ID); err != nil {
		bad("ID", "%v", err)
	} else {
		if r.PodName != podenv.PodName(r.ID) {
			bad("PodName", "%q is not run %s's pod name", r.PodName, r.ID)
		}
		if r.SecretName != "" && r.SecretName != podenv.HostKeySecretName(r.ID) {
			bad("SecretName", "%q is not run %s's secret", r.SecretName, r.ID)
		}
	}
	if r.HostKey == "" {
		bad("HostKey", "is empty")
	}
	if r.ClientKey == "" {
		bad("ClientKey", "is empty")
	}
	if r.RunDir == "" {
		bad("RunDir", "is empty")
	}
	return errors.Join(errs...)
}
