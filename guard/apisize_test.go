package guard_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxNames bounds guard's exported names: its top-level types, functions,
// constants and variables, and the methods of its exported types (fields
// aside). It was 246 before issue 45 made guard one shape.
const maxNames = 215

func TestNamesStayFew(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				} else if d.Recv != nil && d.Name.IsExported() && receiverExported(d.Recv.List[0].Type) {
					names = append(names, "method "+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	if len(names) > maxNames {
		t.Errorf("guard exports %d names, at most %d: unexport what only guard uses, leave wording to the caller, let the package that owns a fact export it", len(names), maxNames)
	}
}

// receiverExported says a method's receiver type is exported.
func receiverExported(e ast.Expr) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.IsExported()
}
