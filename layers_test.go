package overbrainer_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/overbrainer/overbrainer-go"

// floors is the module's layout from the ground up: a package may import
// the packages of its own floor and of the floors below, never one above.
// A folder holds its subfolders (runpod holds runpod/runpodtest). The
// test kits are no floor: see testKits.
var floors = []struct {
	name    string
	folders []string
}{
	{"helpers that ship", []string{"internal/termtext", "internal/localport", "internal/shscript"}},
	{"the pod and its API", []string{"podenv", "watchdog", "bootstrap", "podssh", "runpod"}},
	{"the run and its enforcers", []string{"sweep", "guard", "internal/jobctl", "internal/costplan"}},
	{"proofs against an account", []string{"doctor"}},
	{"programs", []string{"", "examples", "bench"}},
}

// testKits are what the tests are built with: a kit may import anything,
// and only tests and other kits may import a kit.
var testKits = []string{"internal/testkit", "internal/shtest"}

// listed is what the layer check reads of `go list -json`.
type listed struct {
	ImportPath string
	Imports    []string
	Module     *struct{ Path string }
}

// under says whether pkg (a path inside the module, "" for its root)
// is folder or lies under it.
func under(pkg, folder string) bool {
	return pkg == folder || folder != "" && strings.HasPrefix(pkg, folder+"/")
}

// floorOf is the floor pkg stands on: the one with the longest folder
// that holds it, -1 for none.
func floorOf(pkg string) int {
	best, bestLen := -1, -1
	for i, f := range floors {
		for _, folder := range f.folders {
			if under(pkg, folder) && len(folder) > bestLen {
				best, bestLen = i, len(folder)
			}
		}
	}
	return best
}

func isTestKit(pkg string) bool {
	return slices.ContainsFunc(testKits, func(kit string) bool { return under(pkg, kit) })
}

// layerViolations lists each import of pkgs (their non-test files) that
// runs up the floors or into a test kit from outside, and each package of
// the module that stands on no floor.
func layerViolations(pkgs []listed) []string {
	var bad []string
	rel := func(path string) (string, bool) {
		if path == module {
			return "", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}
	for _, p := range pkgs {
		if p.Module == nil || p.Module.Path != module {
			continue
		}
		pkg, _ := rel(p.ImportPath)
		if isTestKit(pkg) {
			continue
		}
		floor := floorOf(pkg)
		if floor < 0 {
			bad = append(bad, fmt.Sprintf("%s stands on no floor: add its folder to floors (or testKits)", p.ImportPath))
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := rel(imp)
			if !ok {
				continue
			}
			switch f := floorOf(dep); {
			case isTestKit(dep):
				bad = append(bad, fmt.Sprintf("%s imports the test kit %s: only tests may", p.ImportPath, imp))
			case f > floor:
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s, which stands above it (%s)", p.ImportPath, floors[floor].name, imp, floors[f].name))
			}
		}
	}
	return bad
}

// No package imports one that stands above it, and nothing that ships
// imports a test kit: the layout says what ships and what it rests on.
func TestNoImportRunsUpTheLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	var ours []string
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Path == module {
			ours = append(ours, p.ImportPath)
		}
	}
	for _, want := range []string{module + "/runpod", module + "/guard", module + "/internal/testkit/checkedfake"} {
		if !slices.Contains(ours, want) {
			t.Fatalf("go list lists no %s among %v", want, ours)
		}
	}
	for _, v := range layerViolations(pkgs) {
		t.Error(v)
	}
}

// The check finds each kind of violation planted in a listing, and lets
// the imports the layout allows pass.
func TestLayerViolationsFindsPlantedOnes(t *testing.T) {
	own := &struct{ Path string }{module}
	pkg := func(path string, imports ...string) listed {
		p := listed{ImportPath: module + "/" + path, Module: own}
		for _, imp := range imports {
			if !strings.Contains(imp, ".") {
				imp = module + "/" + imp
			}
			p.Imports = append(p.Imports, imp)
		}
		return p
	}
	for _, c := range []struct {
		name string
		pkg  listed
		bad  string // a part of the one violation, "" for none
	}{
		{"runpod imports guard", pkg("runpod", "guard"), "stands above it"},
		{"runpodtest imports sweep", pkg("runpod/runpodtest", "sweep/sweepmetrics"), "stands above it"},
		{"podenv imports doctor", pkg("podenv", "doctor"), "stands above it"},
		{"watchdog imports the launcher", pkg("watchdog", "examples/launch/internal/launcher"), "stands above it"},
		{"a helper imports podenv", pkg("internal/termtext", "podenv"), "stands above it"},
		{"guard imports a test kit", pkg("guard", "internal/testkit/checkedfake"), "test kit"},
		{"the launcher imports shtest", pkg("examples/launch", "internal/shtest"), "test kit"},
		{"a package on no floor", pkg("newthing", "podenv"), "no floor"},
		{"guard imports runpod", pkg("guard", "runpod", "podenv", "github.com/go-resty/resty/v2"), ""},
		{"a floor imports itself", pkg("bootstrap", "watchdog"), ""},
		{"a test kit imports anything", pkg("internal/testkit/checkedfake", "runpod/runpodtest", "guard", "examples/launch"), ""},
		{"the module's root", listed{ImportPath: module, Module: own, Imports: []string{module + "/guard"}}, ""},
		{"another module's package", listed{ImportPath: "example.com/x", Module: &struct{ Path string }{"example.com/x"}, Imports: []string{module + "/guard"}}, ""},
	} {
		got := layerViolations([]listed{c.pkg})
		switch {
		case c.bad == "" && len(got) > 0:
			t.Errorf("%s: %q, want none", c.name, got)
		case c.bad != "" && (len(got) != 1 || !strings.Contains(got[0], c.bad)):
			t.Errorf("%s: %q, want one with %q", c.name, got, c.bad)
		}
	}
}
