package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// SnapshotFile is the proof of a checkpoint a job may write into its
// outputs ($OVERBRAINER_OUTPUTS/snapshot.json) each time it checkpoints,
// replacing it whole (write a temporary file, then rename it): a
// SnapshotProof as JSON. A recovery (Relaunch) and a ResumeFrom read it
// to tell the step they resume from.
const SnapshotFile = "snapshot.json"

// ErrNoSnapshotProof: the outputs hold no snapshot.json.
var ErrNoSnapshotProof = errors.New("guard: the outputs hold no snapshot proof")

// SnapshotProof is what a job says of its last checkpoint.
type SnapshotProof struct {
	// Checkpoint is the checkpoint's path, relative to the outputs
	// directory or absolute on the pod.
	Checkpoint string `json:"checkpoint"`
	// Step is the training step it holds.
	Step int64 `json:"step"`
	// Reason is why it was made: a snapshot request's reason (stop,
	// cost, deadline, disk), or the job's own ("periodic", "final").
	Reason string `json:"reason,omitempty"`
}

// maxSnapshotProof bounds the file read: a proof is a line.
const maxSnapshotProof = 64 << 10

// ReadSnapshotProof reads the snapshot.json of an outputs directory (a
// collected run's outputs, or a pull's, see PulledOutputs):
// ErrNoSnapshotProof when there is none, an error naming the file when it
// is not a proof.
func ReadSnapshotProof(outputsDir string) (SnapshotProof, error) {
	var p SnapshotProof
	file := filepath.Join(outputsDir, SnapshotFile)
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return p, ErrNoSnapshotProof
	}
	if err != nil {
		return p, fmt.Errorf("guard: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSnapshotProof+1))
	if err != nil {
		return p, fmt.Errorf("guard: %w", err)
	}
	return parseSnapshotProof(file, b)
}

// parseSnapshotProof reads the proof b that file holds.
func parseSnapshotProof(file string, b []byte) (SnapshotProof, error) {
	var p SnapshotProof
	switch {
	case len(b) > maxSnapshotProof:
		return p, fmt.Errorf("guard: %s is larger than %d bytes: not a snapshot proof", file, maxSnapshotProof)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("guard: %s is not a snapshot proof: %w", file, err)
	}
	if p.Step < 0 || p.Checkpoint == "" {
		return p, fmt.Errorf("guard: %s is not a snapshot proof: step %d, checkpoint %q", file, p.Step, p.Checkpoint)
	}
	return p, nil
}

// answers says the proof was made for a snapshot request of reason
// req: its Reason names req as one of its words ("stop", "snapshot
// stop").
func (p SnapshotProof) answers(req watchdog.SnapshotReason) bool {
	return req != "" && slices.Contains(strings.Fields(p.Reason), string(req))
}

// readProof reads the job's snapshot.json on the pod, nil when there is
// none that reads.
func (r *Run) readProof(ctx context.Context) *SnapshotProof {
	if err := r.liveConn(ctx); err != nil {
		return nil
	}
	file := jobctl.RunFile(r.rec.RunDir, path.Join(jobctl.OutputsDir, SnapshotFile))
	cctx, cancel := context.WithTimeout(ctx, shortCommand)
	defer cancel()
	out, err := r.conn.Output(cctx, podssh.Command(`head -c `+strconv.Itoa(maxSnapshotProof+1)+` -- "$1" 2>/dev/null || true`, file), nil)
	if err != nil || len(out) == 0 {
		return nil
	}
	p, err := parseSnapshotProof(file, out)
	if err != nil {
		r.warn(err)
		return nil
	}
	return &p
}

// proofIn is the snapshot proof of an outputs directory, nil when it
// holds none (or none that reads).
func proofIn(outputsDir string) *SnapshotProof {
	if outputsDir == "" {
		return nil
	}
	p, err := ReadSnapshotProof(outputsDir)
	if err != nil {
		return nil
	}
	return &p
}

func (p SnapshotProof) String() string {
	s := fmt.Sprintf("step %d (%s", p.Step, p.Checkpoint)
	if p.Reason != "" {
		s += ", " + p.Reason
	}
	return s + ")"
}
