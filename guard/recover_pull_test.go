package guard

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
)

// TestPulledOutputs: a pull replaces the last one whole, which becomes
// the previous one; a process killed between the two renames leaves the
// previous pull, still found.
func TestPulledOutputs(t *testing.T) {
	dir := t.TempDir()
	if PulledOutputs(dir) != "" {
		t.Error("outputs found before any pull")
	}
	read := func() string {
		b, _ := os.ReadFile(filepath.Join(PulledOutputs(dir), "ckpt"))
		return string(b)
	}
	for _, n := range []string{"1", "2", "3"} {
		if err := keepPull(fakePull(t, dir, n, ""), dir); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(); got != "3" {
		t.Errorf("newest pull holds %q, want 3", got)
	}
	if err := os.RemoveAll(filepath.Join(dir, pullName)); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "2" {
		t.Errorf("with the latest pull gone, the outputs found hold %q, want the previous pull's 2", got)
	}
}

// fakePull writes a pull of outputs whose checkpoint ckpt holds n, with
// a snapshot.json proof that names it (of proof's fields, when not "").
func fakePull(t *testing.T, dir, n, proof string) string {
	t.Helper()
	tmp := filepath.Join(dir, ".pull")
	out := filepath.Join(tmp, jobctl.OutputsDir)
	if err := os.MkdirAll(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "ckpt"), []byte(n), 0o600); err != nil {
		t.Fatal(err)
	}
	if proof == "" {
		sum := sha256.Sum256([]byte(n))
		proof = fmt.Sprintf(`{"checkpoint": "ckpt", "step": %s, "bytes": %d, "sha256": "%x"}`, n, len(n), sum)
	}
	if err := os.WriteFile(filepath.Join(out, SnapshotFile), []byte(proof), 0o600); err != nil {
		t.Fatal(err)
	}
	return tmp
}

// TestTornPullKeepsTheLastGood: a pull whose checkpoint is not whole
// (missing, or of another size or SHA-256 than snapshot.json says) never
// replaces the last good pull; and of the two kept, the newest whose
// checkpoint is whole is resumed from.
func TestTornPullKeepsTheLastGood(t *testing.T) {
	for name, proof := range map[string]string{
		"missing":     `{"checkpoint": "ckpt-9", "step": 9}`,
		"short":       `{"checkpoint": "ckpt", "step": 9, "bytes": 1000}`,
		"other bytes": `{"checkpoint": "ckpt", "step": 9, "sha256": "00000000000000000000000000000000000000000000000000000000000000aa"}`,
		"no proof":    `{"step": 9`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range []string{"1", "2"} {
				if err := keepPull(fakePull(t, dir, n, ""), dir); err != nil {
					t.Fatal(err)
				}
			}
			torn := fakePull(t, dir, "9", proof)
			if err := wholeCheckpoint(filepath.Join(torn, jobctl.OutputsDir)); err == nil {
				t.Fatal("a torn pull passed for whole")
			}
			if name != "no proof" {
				if err := wholeCheckpoint(filepath.Join(torn, jobctl.OutputsDir)); !errors.Is(err, errTornPull) {
					t.Errorf("torn: %v, want errTornPull", err)
				}
			}
			b, _ := os.ReadFile(filepath.Join(PulledOutputs(dir), "ckpt"))
			if string(b) != "2" {
				t.Errorf("the outputs found hold %q, want the last good pull's 2", b)
			}
			// A latest pull torn on disk gives way to the previous one.
			if err := os.WriteFile(filepath.Join(dir, pullName, jobctl.OutputsDir, "ckpt"), []byte("22"), 0o600); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(PulledOutputs(dir), "ckpt")); string(b) != "1" {
				t.Errorf("with the latest pull torn, the outputs found hold %q, want the previous pull's 1", b)
			}
		})
	}
}
