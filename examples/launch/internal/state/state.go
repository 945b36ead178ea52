package state

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"
	"time"
)

// EnvDir overrides the state directory (as the launcher's --state-dir does).
const EnvDir = "OVERBRAINER_STATE_DIR"

// Phases of a run, in run.json.
const (
	PhaseCreating  = "creating" // keys made, secret and pod being created
	PhaseBooting   = "booting"  // pod created, waiting for it and its verdict
	PhaseRunning   = "running"  // the job started
	PhaseDetached  = "detached" // the client left; the watchdog guards the pod
	PhaseDone      = "done"     // collected, pod deleted
	PhaseFailed    = "failed"   // ended without the job's results
	PhaseRemoved   = "removed"  // rm deleted what was left
	PhaseLeftToPod = "left"     // the client gave up and left the pod to its watchdog
	PhaseStopped   = "stopped"  // only a stop worked: the pod's volume still bills
	PhaseUnknown   = "unknown"  // what nothing else says
)

// Run is one run as run.json records it.
type Run struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// Local says the pod lives in the launcher's local emulator.
	Local bool `json:"local,omitempty"`
	// APIURL is the REST base the pod was created at.
	APIURL string `json:"api_url"`

	PodName    string `json:"pod_name"`
	PodID      string `json:"pod_id,omitempty"`
	SecretName string `json:"secret_name"`
	SecretID   string `json:"secret_id,omitempty"`
	// HostKey is the run's public host key, one authorized_keys line: the
	// only key the client accepts from the pod.
	HostKey string `json:"host_key"`
	// RunDir is the run's directory on the pod.
	RunDir string `json:"run_dir"`

	JobDir  string `json:"job_dir"`
	Command string `json:"command"`
	// HFTokenEnv names the launcher's variable that holds the HF token;
	// the token itself is never stored.
	HFTokenEnv string `json:"hf_token_env,omitempty"`
	OutDir     string `json:"out_dir"`

	Deadline   time.Time `json:"deadline,omitzero"`
	MaxCostUSD float64   `json:"max_cost_usd,omitempty"`
	Keep       bool      `json:"keep,omitempty"`
	// The watchdog's graces, as the pod's env has them.
	BootGrace     time.Duration `json:"boot_grace"`
	RetrieveGrace time.Duration `json:"retrieve_grace"`
	CostPerHr     float64       `json:"cost_per_hr,omitempty"`
	BillingStart  time.Time     `json:"billing_start,omitzero"`

	NetworkVolumeID string `json:"network_volume_id,omitempty"`
	VolumeDir       string `json:"volume_dir,omitempty"`
	VolumeGB        int    `json:"volume_gb,omitempty"`

	// Follow loop settings, kept so that attach follows the same way.
	Poll         time.Duration `json:"poll"`
	LeaseEvery   time.Duration `json:"lease_every"`
	SnapshotLead time.Duration `json:"snapshot_lead"`

	Phase     string    `json:"phase"`
	Verdict   string    `json:"verdict,omitempty"`
	LogOffset int64     `json:"log_offset"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	Ended     time.Time `json:"ended,omitzero"`
	CostUSD   float64   `json:"cost_usd,omitempty"`
	Note      string    `json:"note,omitempty"`

	// JobStarted is when the launcher started the job or first saw it
	// started. A run directory without the job's job.pid after that is a
	// new one: the pod's container restarted on a disk that did not keep
	// the old one, and the job is lost, never to be started again.
	JobStarted time.Time `json:"job_started,omitzero"`

	// DeleteReason is the rule by which the pod's watchdog was seen
	// deleting the pod (a watchdog Delete* reason).
	DeleteReason string `json:"delete_reason,omitempty"`
}

// Store is a state directory.
type Store struct {
	Dir string
}

// DefaultDir is $OVERBRAINER_STATE_DIR, or overbrainer/launch under the
// user's config directory.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("state: no config directory: %w (set %s)", err, EnvDir)
	}
	return filepath.Join(base, "overbrainer", "launch"), nil
}

// Open opens (creating) the state directory, private to the user.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("state: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := privateDir(filepath.Join(abs, "runs")); err != nil {
		return nil, err
	}
	if err := os.Chmod(abs, 0o700); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	return &Store{Dir: abs}, nil
}

// privateDir creates dir with mode 0700, and tightens it when it exists.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckID refuses a run id that could not be a directory name here and a
// secret name at Runpod.
func CheckID(id string) error {
	if !runIDPattern.MatchString(id) {
		return fmt.Errorf("state: %q is not a run id", id)
	}
	return nil
}

// NewID makes a run id: the UTC time to the second and 4 random hex digits,
// e.g. 20260301-120000-a1b2.
func NewID(now time.Time) (string, error) {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]), nil
}

// RunPath is the run's local directory.
func (s *Store) RunPath(id string) string { return filepath.Join(s.Dir, "runs", id) }

// Create makes a new run's directory and writes its run.json. It fails when
// the run exists.
func (s *Store) Create(r *Run) error {
	if err := CheckID(r.ID); err != nil {
		return err
	}
	dir := s.RunPath(r.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return s.Save(r)
}

// Save replaces run.json (write to a temporary file, then rename).
func (s *Store) Save(r *Run) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writePrivate(filepath.Join(s.RunPath(r.ID), "run.json"), append(b, '\n'))
}

// writePrivate atomically replaces file with b, mode 0600.
func writePrivate(file string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("state: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// ErrNoRun is Load's error for a run this state directory does not know.
var ErrNoRun = errors.New("no such run")

// Load reads a run.
func (s *Store) Load(id string) (*Run, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(s.RunPath(id), "run.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("state: run %s: %w (state directory %s)", id, ErrNoRun, s.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("state: run %s: run.json: %w", id, err)
	}
	return &r, nil
}

// List returns every run, oldest first. A run.json that does not load is
// reported as a run in PhaseUnknown, never dropped: rm --all-orphans must not
// take its pod for an orphan.
func (s *Store) List() ([]*Run, error) {
	entries, err := os.ReadDir(filepath.Join(s.Dir, "runs"))
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	var runs []*Run
	for _, e := range entries {
		if !e.IsDir() || CheckID(e.Name()) != nil {
			continue
		}
		r, err := s.Load(e.Name())
		if err != nil {
			r = &Run{ID: e.Name(), Phase: PhaseUnknown, Note: err.Error()}
		}
		runs = append(runs, r)
	}
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].Created.Equal(runs[j].Created) {
			return runs[i].Created.Before(runs[j].Created)
		}
		return runs[i].ID < runs[j].ID
	})
	return runs, nil
}

const clientKeyFile = "client_key"

// SaveClientKey stores the client's private key (OpenSSH PEM), 0600.
func (s *Store) SaveClientKey(id string, pem []byte) error {
	return writePrivate(filepath.Join(s.RunPath(id), clientKeyFile), pem)
}

// ClientKey reads the client's private key back.
func (s *Store) ClientKey(id string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.RunPath(id), clientKeyFile))
	if err != nil {
		return nil, fmt.Errorf("state: run %s: %w", id, err)
	}
	return b, nil
}

// Lock is a run's lock: one launcher follows a run at a time.
type Lock struct{ f *os.File }

// ErrBusy is TryLock's error when another launcher holds the run.
var ErrBusy = errors.New("another launcher is following this run")

// TryLock takes the run's lock without waiting. The lock dies with the
// process, so a killed launcher never leaves a run locked.
func (s *Store) TryLock(id string) (*Lock, error) {
	f, err := os.OpenFile(filepath.Join(s.RunPath(id), "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state: run %s: %w", id, ErrBusy)
		}
		return nil, fmt.Errorf("state: %w", err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		l.f.Close()
		l.f = nil
	}
}
