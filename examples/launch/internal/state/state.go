package state

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// EnvDir overrides the state directory (as the launcher's --state-dir does).
const EnvDir = "OVERBRAINER_STATE_DIR"

// Phases of a run, in run.json: guard's.
const (
	PhaseCreating  = guard.PhaseCreating
	PhaseBooting   = guard.PhaseBooting
	PhaseRunning   = guard.PhaseRunning
	PhaseDetached  = guard.PhaseDetached
	PhaseDone      = guard.PhaseDone
	PhaseFailed    = guard.PhaseFailed
	PhaseRemoved   = guard.PhaseRemoved
	PhaseLeftToPod = guard.PhaseLeftToPod
	PhaseStopped   = guard.PhaseStopped
	PhaseUnknown   = guard.PhaseUnknown
)

// Run is one run as run.json records it: guard's Record (ids, keys,
// settings, progress), and what only the launcher needs.
type Run struct {
	guard.Record
	Created time.Time `json:"created"`
	// Local says the pod lives in the launcher's local emulator.
	Local bool `json:"local,omitempty"`
	// HFTokenEnv names the launcher's variable that holds the HF token
	// (runs of earlier launchers; SecretEnv since).
	HFTokenEnv string `json:"hf_token_env,omitempty"`
	// SecretEnv names, for each of the job's secrets, the launcher's
	// variable that holds its value; the values are never stored.
	SecretEnv map[string]string `json:"secret_env,omitempty"`
	OutDir    string            `json:"out_dir"`
	// DueWhenGone are the rules whose time had come when a launcher found
	// the pod of a run left to its watchdog gone, none seen taking it.
	DueWhenGone []watchdog.DeleteReason `json:"due_when_gone,omitempty"`
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

// CheckID refuses a run id that could not be a directory name here and a
// secret name at Runpod.
func CheckID(id string) error {
	if podenv.CheckRunID(id) != nil {
		return fmt.Errorf("state: %q is not a run id", id)
	}
	return nil
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
	if r.ClientKey == "" {
		// Runs saved before the key moved into run.json kept it in a
		// file of its own.
		if key, err := os.ReadFile(filepath.Join(s.RunPath(id), oldClientKeyFile)); err == nil {
			r.ClientKey = guard.PEM(key)
		}
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
			r = &Run{Record: guard.Record{ID: e.Name(), Phase: PhaseUnknown, Note: err.Error()}}
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

// oldClientKeyFile held the client's private key before run.json did.
const oldClientKeyFile = "client_key"

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

// SecretSources are the job's secrets, name to the launcher's variable.
func (r *Run) SecretSources() map[string]string {
	if r.HFTokenEnv == "" {
		return r.SecretEnv
	}
	src := maps.Clone(r.SecretEnv)
	if src == nil {
		src = map[string]string{}
	}
	src["HF_TOKEN"] = cmp.Or(src["HF_TOKEN"], r.HFTokenEnv)
	return src
}
