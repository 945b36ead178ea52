package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
)

// The last lines of pod.log come back even after a line too long to keep
// whole: it is cut, and the lines after it are read.
func TestLastLinesReadPastALongLine(t *testing.T) {
	dir := t.TempDir()
	a := &app{store: &state.Store{Dir: dir}}
	run := filepath.Join(dir, "runs", "r1")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	log := "first\n" + strings.Repeat("x", 2<<20) + "\nlast but one\nlast\n"
	if err := os.WriteFile(filepath.Join(run, podLogName), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := a.lastLines("r1", 2), []string{"last but one", "last"}; !slices.Equal(got, want) {
		t.Errorf("last lines %q, want %q", got, want)
	}
	all := a.lastLines("r1", 10)
	if len(all) != 4 || all[0] != "first" || len(all[1]) > 1<<20+32 || !strings.HasSuffix(all[1], "[line cut]") {
		t.Errorf("%d lines, the long one %d bytes: want 4, the long one cut and marked", len(all), len(all[1]))
	}
}
