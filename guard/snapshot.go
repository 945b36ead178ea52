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

// Collect writes $OVERBRAINER_OUTPUTS as OutputsDir; there a job may prove
// each checkpoint with SnapshotFile, a SnapshotProof it replaces whole.
const (
	OutputsDir   = "outputs"
	SnapshotFile = "snapshot.json"
)

// SnapshotProof is what a job says of its last checkpoint (Pull checks it).
type SnapshotProof struct {
	Checkpoint string `json:"checkpoint"`       // relative to the outputs, or absolute on the pod
	Step       int64  `json:"step"`             // the training step it holds
	Reason     string `json:"reason,omitempty"` // the request it answers (stop, cost, ...), or "periodic", "final"
	Bytes      int64  `json:"bytes,omitempty"`  // a checkpoint file's size
	SHA256     string `json:"sha256,omitempty"` // a checkpoint file's SHA-256, in hex
}

// maxSnapshotProof bounds the file read: a proof is a line.
const maxSnapshotProof = 64 << 10

// ReadSnapshotProof reads an outputs directory's SnapshotFile, as Collect or
// Pull wrote it; ErrNoSnapshotProof when it has none.
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
