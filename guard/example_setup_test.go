package guard_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// ExampleLaunch is what a user copies to try guard on the emulator: it
// shows the whole set-up itself (PodInit first, the server, the client),
// none of it in a helper of the tests.
func TestExampleLaunchShowsTheEmulatorSetUp(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "example_test.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "ExampleLaunch" {
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok {
							calls = append(calls, id.Name+"."+sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
	want := []string{"localpod.PodInit", "runpodtest.NewServer", "runpod.New", "guard.Launch"}
	for i, w := range want {
		if !slices.Contains(calls, w) {
			t.Errorf("ExampleLaunch does not call %s", w)
		}
		if i == 0 && (len(calls) == 0 || calls[0] != w) {
			t.Errorf("ExampleLaunch's first call is not %s: %v", w, calls)
		}
	}
}
