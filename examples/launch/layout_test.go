package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The launcher is a command line over guard: what a guarded run does
// belongs to the module's public packages, where every Go program gets it,
// and the launcher keeps the wording. A line budget held it so until it
// pushed code the wrong way (symbols exported from guard only to stay
// under it); what it was for is this: the launcher's own packages import
// of this module only what any program can import, plus its own
// internal/. The module-internal packages it still imports are listed
// here, each a loose end to move (a new one fails the test).
var launcherInternalImports = []string{
	"github.com/overbrainer/overbrainer-go/internal/costplan", // money wording guard shares
	"github.com/overbrainer/overbrainer-go/internal/termtext", // escaping for the terminal
}

func TestTheLauncherImportsOnlyPublicPackages(t *testing.T) {
	const module = "github.com/overbrainer/overbrainer-go/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) || strings.HasPrefix(imp, module+"examples/launch/") {
				continue
			}
			checked++
			if strings.Contains(imp, "/internal/") || strings.HasSuffix(imp, "/internal") {
				if !slices.Contains(launcherInternalImports, imp) {
					t.Errorf("%s imports %s: a launcher may import only the module's public packages", f[0], imp)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no import of the module's packages seen in:\n%s", out)
	}
}

// The binary links no test framework, though it embeds the emulator and
// the local pod runtime: not testing, nor a test kit of internal/testkit
// (the OpenAPI checks the tests wrap the emulator in among them).
func TestTheLauncherLinksNoTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"guard", "runpod/localpod", "runpod/runpodtest"} {
		if !slices.Contains(deps, "github.com/overbrainer/overbrainer-go/"+want) {
			t.Fatalf("go list -deps lists no %s: %v", want, deps)
		}
	}
	for _, dep := range testOnly(deps) {
		t.Errorf("the launcher links %s, which is for tests", dep)
	}
	// The check finds what it is for.
	planted := []string{"fmt", "testing", "github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake", "github.com/pb33f/libopenapi"}
	if got := testOnly(planted); !slices.Equal(got, planted[1:]) {
		t.Errorf("testOnly(%q) = %q", planted, got)
	}
}

// testOnly lists the packages of deps that only tests may link.
func testOnly(deps []string) []string {
	var bad []string
	for _, dep := range deps {
		if dep == "testing" || strings.HasPrefix(dep, "github.com/pb33f/") ||
			strings.Contains(dep, "/internal/testkit/") {
			bad = append(bad, dep)
		}
	}
	return bad
}
