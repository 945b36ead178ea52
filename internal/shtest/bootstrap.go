package shtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BootstrapFunctions is the bootstrap's shell functions (bootstrap.sh as
// the bootstrap package embeds it), for the tests of other packages that
// run one of them: the package keeps the text to itself.
func BootstrapFunctions(t testing.TB) string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("shtest: no source path to find bootstrap.sh from")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "bootstrap", "bootstrap.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
