package modroot_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/testkit/modroot"
)

func TestDirIsTheModulesRoot(t *testing.T) {
	dir, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// This package's directory is internal/testkit/modroot under the root.
	if want := filepath.Dir(filepath.Dir(filepath.Dir(wd))); dir != want {
		t.Errorf("Dir() = %q, want %q", dir, want)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDirPassesOverAnotherModule(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "go.mod"), "// a copy of this module\nmodule "+modroot.Path+"\n\ngo 1.26\n")
	// Another module inside it, as a test that builds another module's
	// program makes; its go.mod quotes its path.
	write(t, filepath.Join(root, "testdata", "other", "go.mod"), "module \"example.com/other\"\n")
	pkg := filepath.Join(root, "testdata", "other", "pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	got, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	// Getwd may name the directory through another path (a symlinked
	// TMPDIR): compare the files, not the names.
	if a, b := stat(t, got), stat(t, root); !os.SameFile(a, b) {
		t.Errorf("Dir() = %q, want %q", got, root)
	}
}

func TestDirOutsideTheModuleFails(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/other\n")
	t.Chdir(dir)
	if got, err := modroot.Dir(); err == nil {
		t.Errorf("Dir() = %q outside the module, want an error", got)
	}
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
