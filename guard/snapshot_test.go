package guard_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/guard"
)

func TestReadSnapshotProof(t *testing.T) {
	dir := t.TempDir()
	if _, err := guard.ReadSnapshotProof(dir); !errors.Is(err, guard.ErrNoSnapshotProof) {
		t.Fatalf("no file: %v", err)
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, guard.SnapshotFile), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"checkpoint": "ckpt/step-40.pt", "step": 40, "reason": "stop"}` + "\n")
	p, err := guard.ReadSnapshotProof(dir)
	if err != nil || p != (guard.SnapshotProof{Checkpoint: "ckpt/step-40.pt", Step: 40, Reason: "stop"}) {
		t.Fatalf("%+v, %v", p, err)
	}
	for _, bad := range []string{`{"step": 3}`, `{"checkpoint": "c", "step": -1}`, `not json`, `{"checkpoint": "c", "step": "3"}`, strings.Repeat(" ", 70<<10)} {
		write(bad)
		if _, err := guard.ReadSnapshotProof(dir); err == nil || errors.Is(err, guard.ErrNoSnapshotProof) || !strings.Contains(err.Error(), guard.SnapshotFile) {
			t.Errorf("%.40q: %v", bad, err)
		}
	}
}

// TestEndCheckpointed: a job checkpointed on request when it exited 0
// after the request with a proof that names the request's reason.
func TestEndCheckpointed(t *testing.T) {
	proof := func(reason string) *guard.SnapshotProof {
		return &guard.SnapshotProof{Checkpoint: "c", Step: 3, Reason: reason}
	}
	for _, tc := range []struct {
		end  guard.End
		want bool
	}{
		{guard.End{How: guard.HowExited, Requested: "stop", Proof: proof("stop")}, true},
		{guard.End{How: guard.HowExited, Requested: "cost", Proof: proof("snapshot cost")}, true},
		{guard.End{How: guard.HowExited, Requested: "stop", Proof: proof("periodic")}, false},
		{guard.End{How: guard.HowExited, Requested: "stop", Proof: proof("stopped")}, false},
		{guard.End{How: guard.HowExited, Requested: "stop"}, false},
		{guard.End{How: guard.HowExited, ExitCode: 1, Requested: "stop", Proof: proof("stop")}, false},
		{guard.End{How: guard.HowExited, Proof: proof("stop")}, false},
		{guard.End{How: guard.HowCancelled, ExitCode: -1, Requested: "stop", Proof: proof("stop")}, false},
	} {
		if got := tc.end.Checkpointed(); got != tc.want {
			t.Errorf("%+v (proof %v): Checkpointed %v, want %v", tc.end, tc.end.Proof, got, tc.want)
		}
	}
}
