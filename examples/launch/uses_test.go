package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const guardPath = "github.com/overbrainer/overbrainer-go/guard"

// launcherOnlyGuardNames are guard's exported names that only the launcher
// uses today, each a loose end to move to the launcher (a new one fails the
// test, and so does one that is no longer launcher-only).
var launcherOnlyGuardNames = []string{
	"ListGPUs", // API no guard test or Example shows yet
}

// guard is the API of a guarded run for any Go program: an exported name
// that nothing but the launcher uses (not guard itself, no other package of
// the module, no Example) is the launcher's wording or plumbing that
// belongs in the launcher.
func TestNoGuardNameOnlyTheLauncherUses(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module")
	}
	only := launcherOnlyNames(t, "../..")
	for _, name := range only {
		if !slices.Contains(launcherOnlyGuardNames, name) {
			t.Errorf("guard.%s is used only by the launcher: move it there, or use it in guard", name)
		}
	}
	for _, name := range launcherOnlyGuardNames {
		if !slices.Contains(only, name) {
			t.Errorf("guard.%s is no longer launcher-only: take it off launcherOnlyGuardNames", name)
		}
	}
}

// launcherOnlyNames type-checks the module at root from source, its
// imports from their export data, and lists guard's exported names (Run,
// Run.Cancel, Spec.Job) that examples/launch uses and nothing else does.
func launcherOnlyNames(t *testing.T, root string) []string {
	t.Helper()
	exports := map[string]string{}
	for _, args := range [][]string{{"-deps", "./..."}, {"-deps", "-test", "./guard"}} {
		for _, f := range goList(t, root, append([]string{"-e", "-export", "-f", "{{.ImportPath}}\t{{.Export}}"}, args...)...) {
			if path, _, _ := strings.Cut(f[0], " "); f[1] != "" && (exports[path] == "" || path == f[0]) {
				exports[path] = f[1]
			}
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	declared := map[string]string{} // position key -> name
	users := map[string]map[string]bool{}
	check := func(path, dir string, files []string, who func(pos token.Pos) string) {
		var syntax []*ast.File
		for _, name := range files {
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			syntax = append(syntax, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
		pkg, err := (&types.Config{Importer: imp}).Check(path, fset, syntax, info)
		if err != nil {
			t.Fatalf("type-checking %s: %v", path, err)
		}
		if path == guardPath {
			for id, obj := range info.Defs {
				if obj == nil || !id.IsExported() || who(id.Pos()) != "guard" {
					continue
				}
				if name := exportedName(obj, pkg); name != "" {
					declared[posKey(fset, obj)] = name
				}
			}
		}
		for id, obj := range info.Uses {
			if obj.Pkg() == nil || obj.Pkg().Path() != guardPath {
				continue
			}
			k := posKey(fset, obj)
			if users[k] == nil {
				users[k] = map[string]bool{}
			}
			users[k][who(id.Pos())] = true
		}
	}
	for _, f := range goList(t, root, "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}\t{{join .TestGoFiles \",\"}}\t{{join .XTestGoFiles \",\"}}", "./...") {
		path, dir := f[0], f[1]
		who := "other"
		if strings.Contains(path, "/examples/launch") {
			who = "launcher"
		}
		if path != guardPath {
			check(path, dir, strings.Split(f[2], ","), func(token.Pos) string { return who })
		} else {
			// guard with its internal tests: a use in a test file is a test's.
			check(path, dir, append(strings.Split(f[2], ","), strings.Split(f[3], ",")...), func(pos token.Pos) string {
				if strings.HasSuffix(fset.Position(pos).Filename, "_test.go") {
					return "test"
				}
				return "guard"
			})
			xtest := strings.Split(f[4], ",")
			var examples [][2]token.Pos
			check(path+"_test", dir, xtest, func(pos token.Pos) string {
				if examples == nil {
					examples = exampleSpans(fset, dir, xtest)
				}
				for _, s := range examples {
					if s[0] <= pos && pos < s[1] {
						return "example"
					}
				}
				return "test"
			})
		}
	}
	var only []string
	for k, name := range declared {
		if _, method, ok := strings.Cut(name, "."); ok && slices.Contains(fmtMethods, method) {
			continue
		}
		if u := users[k]; u["launcher"] && len(u) == 1 {
			only = append(only, name)
		}
	}
	slices.Sort(only)
	return only
}

// fmtMethods are reached through fmt's interfaces (a %s, a %v), which
// no use names: guard's errors print a GPUFilter so.
var fmtMethods = []string{"String", "GoString", "Error", "Format"}

// exampleSpans are the positions of the Example functions of files, as
// fset numbers them (each file was parsed once into fset already).
func exampleSpans(fset *token.FileSet, dir string, files []string) [][2]token.Pos {
	var spans [][2]token.Pos
	fset.Iterate(func(tf *token.File) bool {
		if filepath.Dir(tf.Name()) != dir || !slices.Contains(files, filepath.Base(tf.Name())) {
			return true
		}
		src, _ := os.ReadFile(tf.Name())
		f, err := parser.ParseFile(token.NewFileSet(), tf.Name(), src, parser.SkipObjectResolution)
		if err != nil {
			return true
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") {
				spans = append(spans, [2]token.Pos{tf.Pos(int(fd.Pos()) - 1), tf.Pos(int(fd.End()) - 1)})
			}
		}
		return true
	})
	return spans
}

// exportedName is obj's name as a reader of guard's doc finds it: X,
// T.Method or T.Field; empty for what is not guard's API.
func exportedName(obj types.Object, pkg *types.Package) string {
	if obj.Pkg() != pkg || !obj.Exported() {
		return ""
	}
	if obj.Parent() == pkg.Scope() {
		return obj.Name()
	}
	switch o := obj.(type) {
	case *types.Func:
		recv := o.Signature().Recv()
		if recv == nil {
			return ""
		}
		rt := recv.Type()
		if p, ok := rt.(*types.Pointer); ok {
			rt = p.Elem()
		}
		if n, ok := rt.(*types.Named); ok && n.Obj().Exported() {
			return n.Obj().Name() + "." + o.Name()
		}
	case *types.Var:
		if !o.IsField() {
			return ""
		}
		for _, name := range pkg.Scope().Names() {
			tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
			if !ok || !tn.Exported() {
				continue
			}
			if st, ok := tn.Type().Underlying().(*types.Struct); ok {
				for i := range st.NumFields() {
					if st.Field(i) == o {
						return name + "." + o.Name()
					}
				}
			}
		}
	}
	return ""
}

// posKey names an object of guard alike whether it came from source or
// from export data: its file, line and name.
func posKey(fset *token.FileSet, obj types.Object) string {
	p := fset.Position(obj.Pos())
	return fmt.Sprintf("%s:%d:%s", filepath.Base(p.Filename), p.Line, obj.Name())
}

// goList runs go list in dir and splits its lines at tabs.
func goList(t *testing.T, dir string, args ...string) [][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.Bytes())
	}
	var rows [][]string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		rows = append(rows, strings.Split(sc.Text(), "\t"))
	}
	return rows
}
