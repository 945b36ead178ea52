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
	PhaseCreating   Phase = "creating"   // keys made, secret and pod being created
	PhaseBooting    Phase = "booting"    // pod created, waiting for it and its verdict
	PhaseRunning    Phase = "running"    // the job started
	PhaseDetached   Phase = "detached"   // the client left; the watchdog guards the pod
	PhaseDone       Phase = "done"       // collected, pod deleted (or kept)
	PhaseFailed     Phase = "failed"     // ended without the job's results
	PhaseRemoved    Phase = "removed"    // deleted without a follow (Remove)
	PhaseLeftToPod  Phase = "left"       // the client gave up and left the pod to its watchdog
	PhaseStopped    Phase = "stopped"    // only a stop worked: the pod's volume still bills
	PhaseRecovering Phase = "recovering" // a lost pod is being replaced (RecoveryState.Replacing)
	PhaseUnknown    Phase = "unknown"    // what nothing else says
)

// PEM is an OpenSSH private key that prints as a placeholder; JSON holds it.
type PEM string

func (PEM) String() string   { return "[private key]" }
func (PEM) GoString() string { return `guard.PEM("[private key]")` }

// Record is what Attach needs in another process: the client's private key
// (saved 0600), never the host key's, the account key or a job secret.
type Record struct {
	ID         string `json:"id"`
	APIURL     string `json:"api_url"`
	PodName    string `json:"pod_name"`
	PodID      string `json:"pod_id,omitempty"`
	SecretName string `json:"secret_name"` // the Runpod secret that holds the host key's private half
	SecretID   string `json:"secret_id,omitempty"`
	HostKey    string `json:"host_key"` // authorized_keys line: the only key accepted from the pod
	ClientKey  PEM    `json:"client_key,omitempty"`
	RunDir     string `json:"run_dir"` // on the pod

	JobDir     string `json:"job_dir"` // with Command and ResumeFrom, the job Launch was given, for a Start elsewhere
	Command    string `json:"command"`
	ResumeFrom string `json:"resume_from,omitempty"`

	// The rules as armed, and the cost cap's instants the pod was given,
	// for a follower to tell when the watchdog should act.
	podenv.Plan
	CostPerHr    float64   `json:"cost_per_hr,omitempty"`
	GPU          string    `json:"gpu,omitempty"`          // the type the pod got
	Attempts     []Attempt `json:"attempts,omitempty"`     // every try at a GPU type, in order
	BillingStart time.Time `json:"billing_start,omitzero"` // the create call: the cost cap counts from it

	NetworkVolumeID string        `json:"network_volume_id,omitempty"`
	VolumeDir       string        `json:"volume_dir,omitempty"`
	VolumeGB        int           `json:"volume_gb,omitempty"`
	MaxVolumeGB     int           `json:"max_volume_gb,omitempty"`
	NoVolumeCaches  bool          `json:"no_volume_caches,omitempty"`
	PodVolumeGB     int           `json:"pod_volume_gb,omitempty"` // Spec.VolumeGB: an idle kept pod with one is stopped
	Results         Results       `json:"results,omitzero"`
	Poll            time.Duration `json:"poll"` // with LeaseEvery: Attach follows the run the same way
	LeaseEvery      time.Duration `json:"lease_every"`

	Phase        Phase                 `json:"phase"`
	Verdict      string                `json:"verdict,omitempty"`
	LogOffset    int64                 `json:"log_offset"` // how much of the job's output Follow wrote
	ExitCode     *int                  `json:"exit_code,omitempty"`
	JobStarted   time.Time             `json:"job_started,omitzero"` // set: Start never starts the job again
	DeleteReason watchdog.DeleteReason `json:"delete_reason,omitempty"`
	Collected    time.Time             `json:"collected,omitzero"`
	Ended        time.Time             `json:"ended,omitzero"`
	CostUSD      float64               `json:"cost_usd,omitempty"` // estimated: price × time
	Note         string                `json:"note,omitempty"`     // what ended the run, in words
	Recovery     RecoveryState         `json:"recovery,omitzero"`
	Bill         *Bill                 `json:"bill,omitempty"` // what Runpod billed: nil until ReadBill
	// WorstCase is the most the run may cost by its rules, as Launch
	// planned it before the create (see the function WorstCase; no
	// sweeper's bound).
	WorstCase *podenv.WorstCase `json:"worst_case,omitempty"`
}

// Save writes the record to file atomically, as JSON, mode 0600.
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
		errs = append(errs, &podenv.FieldError{Field: "Record." + field, Reason: fmt.Sprintf(format, args...)})
	}
	if err := podenv.CheckRunID(r.ID); err != nil {
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
