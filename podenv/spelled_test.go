package podenv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// contractName finds an OVERBRAINER_ name in a string, and whether a
// shell's $ or ${ expands it there.
var contractName = regexp.MustCompile(`(\$\{?)?\bOVERBRAINER_[A-Z0-9_]+`)

// spelled lists, as "file:line: NAME", the names of the pod's contract
// that the Go source src spells in a string literal. A name a shell
// expands ($NAME, ${NAME...}) is a script on the pod reading its env, as
// the watchdog and the bootstrap do, and is not counted; nor are
// comments, which name variables for people.
func spelled(file string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			s = lit.Value
		}
		for _, m := range contractName.FindAllStringSubmatch(s, -1) {
			name := strings.TrimLeft(m[0], "${")
			if m[1] == "" && owned[name] {
				found = append(found, fset.Position(lit.Pos()).String()+": "+name)
			}
		}
		return true
	})
	return found, nil
}

func TestSpelledFindsContractNames(t *testing.T) {
	src := "package p\n" +
		"// OVERBRAINER_DEADLINE in a comment\n" +
		"var a = map[string]string{\"OVERBRAINER_DEADLINE\": \"1\"}\n" +
		"var b = \"OVERBRAINER_INTERVAL=\" + \"1\"\n" +
		"var c = `sleep \"${OVERBRAINER_INTERVAL:-60}\"; cd $OVERBRAINER_RUN_DIR`\n" +
		"var d = \"OVERBRAINER_OUTPUTS OVERBRAINER_HOST_KEY_R1 OVERBRAINER_BOOT_FAILED\"\n"
	got, err := spelled("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p.go:3:27: OVERBRAINER_DEADLINE", "p.go:4:9: OVERBRAINER_INTERVAL", "p.go:6:9: OVERBRAINER_BOOT_FAILED"}
	if !slices.Equal(got, want) {
		t.Errorf("spelled = %q, want %q", got, want)
	}
}

// No Go code outside podenv, the watchdog, its job-side half
// (internal/jobctl) and the bootstrap spells a name of the pod's contract: the rest of the
// module, its tests included, reads a pod's env with Parse and names a
// variable with this package's constants, so that a renamed or retired
// variable has one place to change. The shell scripts (*.sh) are not Go
// and are not looked at.
func TestContractNamesAreSpelledHereOnly(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root: %v", err)
	}
	allowed := []string{"podenv", "watchdog", "bootstrap", filepath.Join("internal", "jobctl")}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || slices.Contains(allowed, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		found, err := spelled(rel, src)
		if err != nil {
			return err
		}
		for _, f := range found {
			t.Errorf("%s: spelled outside podenv, the watchdog and the bootstrap (use the podenv constant)", f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files under %s: the walk missed the module", files, root)
	}
}
