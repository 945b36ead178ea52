package shtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/testkit/modroot"
)

// BootstrapFunctions is the bootstrap's shell functions (bootstrap.sh as
// the bootstrap package embeds it), for the tests of other packages that
// run one of them: the package keeps the text to itself.
func BootstrapFunctions(t testing.TB) string {
	t.Helper()
	root, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "bootstrap", "bootstrap.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
