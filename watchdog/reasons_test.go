package watchdog_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

// deleteConstants returns the package's Delete* constants and their values,
// read from its source, so that a new one cannot be left out of
// DeleteReasons.
func deleteConstants(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files here: %v", err)
	}
	found := map[string]string{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Delete") || !name.IsExported() {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("watchdog.%s is not a string literal", name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					found[name.Name] = v
				}
			}
		}
	}
	return found
}

// parsedScript is the watchdog as the pod runs it, parsed as POSIX sh.
func parsedScript(t *testing.T) *syntax.File {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(watchdog.Script()), "watchdog.sh")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// scriptReasons returns every literal the watchdog script assigns to
// $reason: the rules it deletes by.
func scriptReasons(t *testing.T) []string {
	t.Helper()
	var reasons []string
	syntax.Walk(parsedScript(t), func(n syntax.Node) bool {
		if a, ok := n.(*syntax.Assign); ok && a.Name != nil && a.Name.Value == "reason" && a.Value != nil {
			if lit := a.Value.Lit(); lit != "" && !slices.Contains(reasons, lit) {
				reasons = append(reasons, lit)
			}
		}
		return true
	})
	return reasons
}

// DeleteReasons lists every Delete* constant, and they are exactly the
// reasons the script deletes by.
func TestDeleteReasonsAreComplete(t *testing.T) {
	t.Parallel()
	consts := deleteConstants(t)
	script := scriptReasons(t)
	// The finders find what is known to be there, so an empty result
	// cannot pass for "nothing missing".
	if consts["DeletePodDirUnsafe"] != string(watchdog.DeletePodDirUnsafe) || consts["DeleteBootstrapFailed"] != string(watchdog.DeleteBootstrapFailed) {
		t.Errorf("the constants found %v lack DeletePodDirUnsafe or DeleteBootstrapFailed", consts)
	}
	for _, known := range []watchdog.DeleteReason{watchdog.DeletePodDirUnsafe, watchdog.DeleteCostCap, watchdog.DeleteNeverStarted} {
		if !slices.Contains(script, string(known)) {
			t.Errorf("the script's reasons %v lack %s", script, known)
		}
	}
	var fromConsts []string
	for _, v := range consts {
		fromConsts = append(fromConsts, v)
	}
	var listed []string
	for _, r := range watchdog.DeleteReasons() {
		listed = append(listed, string(r))
	}
	slices.Sort(listed)
	slices.Sort(fromConsts)
	slices.Sort(script)
	if diff := cmp.Diff(fromConsts, listed); diff != "" {
		t.Errorf("DeleteReasons() and the Delete* constants differ (-constants +listed):\n%s", diff)
	}
	if diff := cmp.Diff(script, listed); diff != "" {
		t.Errorf("DeleteReasons() and the script's reason= values differ (-script +listed):\n%s", diff)
	}
}
