package launcher

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// watchdogSource is the watchdog package's directory, from this package's.
var watchdogSource = filepath.Join("..", "..", "..", "..", "watchdog")

// deleteConstants returns the watchdog package's Delete* constants and
// their values, read from its source: the package has no list of them, and
// a new one must not go unexplained.
func deleteConstants(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(watchdogSource, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", watchdogSource, err)
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

// scriptReasons returns every literal the watchdog script assigns to
// $reason: the rules it deletes by.
func scriptReasons(t *testing.T) []string {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(watchdog.Script()), "watchdog.sh")
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if a, ok := n.(*syntax.Assign); ok && a.Name != nil && a.Name.Value == "reason" && a.Value != nil {
			if lit := a.Value.Lit(); lit != "" && !slices.Contains(reasons, lit) {
				reasons = append(reasons, lit)
			}
		}
		return true
	})
	return reasons
}

// Every rule by which the watchdog deletes a pod has its explanation, and
// nothing else has one.
func TestEveryDeleteReasonIsExplained(t *testing.T) {
	consts := deleteConstants(t)
	script := scriptReasons(t)
	// The finders find what is known to be there, so an empty result
	// cannot pass for "nothing to explain".
	for _, known := range []string{watchdog.DeletePodDirUnsafe, watchdog.DeleteCostCap, watchdog.DeleteNeverStarted} {
		if !slices.Contains(script, known) {
			t.Errorf("the script's reasons %v lack %s", script, known)
		}
	}
	if consts["DeletePodDirUnsafe"] != watchdog.DeletePodDirUnsafe || consts["DeleteBootstrapFailed"] != watchdog.DeleteBootstrapFailed {
		t.Errorf("the constants found %v lack DeletePodDirUnsafe or DeleteBootstrapFailed", consts)
	}
	all := map[string]string{}
	for name, v := range consts {
		all[v] = "watchdog." + name
	}
	for _, v := range script {
		if _, ok := all[v]; !ok {
			all[v] = "watchdog.sh (reason=" + v + "), which has no Go constant"
			t.Errorf("watchdog.sh deletes by %q, which the watchdog package has no constant for", v)
		}
	}
	for v, where := range all {
		w, ok := deleteReasons[v]
		switch {
		case !ok:
			t.Errorf("%s (%q) has no explanation in deleteReasons", where, v)
		case strings.TrimSpace(w.short) == "" || len(w.long) < len(w.short):
			t.Errorf("%q: explanation %+v is empty or its long form shorter than its short one", v, w)
		}
	}
	for v := range deleteReasons {
		if _, ok := all[v]; !ok {
			t.Errorf("deleteReasons explains %q, which the watchdog does not delete by", v)
		}
	}
}

// pod_dir_unsafe says what happened, that it is a safety stop, and what to
// look at.
func TestPodDirUnsafeExplanation(t *testing.T) {
	long := explainDelete(watchdog.DeletePodDirUnsafe)
	for _, want := range []string{"SAFETY STOP", ".pod", "symbolic link", "deleted the pod at once", "fails closed", "the job", "volume"} {
		if !strings.Contains(long, want) {
			t.Errorf("the explanation lacks %q: %s", want, long)
		}
	}
	short := shortDelete(watchdog.DeletePodDirUnsafe)
	for _, want := range []string{"SAFETY STOP", ".pod", "symlink", "job", "volume"} {
		if !strings.Contains(short, want) {
			t.Errorf("the ls legend lacks %q: %s", want, short)
		}
	}
	if got := explainDelete("brand_new"); !strings.Contains(got, `"brand_new" is unknown`) {
		t.Errorf("unknown reason: %s", got)
	}
}

func TestEveryBootstrapReasonIsExplained(t *testing.T) {
	for _, r := range bootstrap.Reasons() {
		if strings.TrimSpace(bootstrapReasons[r]) == "" {
			t.Errorf("bootstrap reason %q has no explanation", r)
		}
		got := explainVerdict("bootstrap: " + r)
		if !strings.Contains(got, bootstrapReasons[r]) || !strings.Contains(got, "watchdog deletes the pod") {
			t.Errorf("verdict %q explained as %q", r, got)
		}
	}
	for r := range bootstrapReasons {
		if !slices.Contains(bootstrap.Reasons(), r) {
			t.Errorf("bootstrapReasons explains %q, which is not a bootstrap reason", r)
		}
	}
	if got := explainVerdict("http_401"); !strings.Contains(got, "cannot reach the API") {
		t.Errorf("a failed probe explained as %q", got)
	}
}

// A reason seen in a look is said once, kept in the run's state, and given
// when the pod turns out to be gone.
func TestDeleteReasonIsSaidOnceAndKept(t *testing.T) {
	var stderr bytes.Buffer
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := &app{stderr: &stderr, stdout: &bytes.Buffer{}, store: st}
	r := &state.Run{ID: "20260101-000000-abcd", PodID: "pod1", Phase: state.PhaseRunning}
	if err := st.Create(r); err != nil {
		t.Fatal(err)
	}
	d := &driver{a: a, r: r}
	if got := d.goneError("pod pod1 no longer exists").what; got != "pod pod1 no longer exists" {
		t.Errorf("without a reason: %q", got)
	}
	d.noteDeleteReason("")
	for range 3 {
		d.noteDeleteReason(watchdog.DeletePodDirUnsafe)
	}
	said := stderr.String()
	if n := strings.Count(said, "watchdog is deleting it (pod_dir_unsafe)"); n != 1 {
		t.Errorf("said %d times:\n%s", n, said)
	}
	if !strings.Contains(said, explainDelete(watchdog.DeletePodDirUnsafe)) {
		t.Errorf("said without the explanation:\n%s", said)
	}
	saved, err := st.Load(r.ID)
	if err != nil || saved.DeleteReason != watchdog.DeletePodDirUnsafe {
		t.Fatalf("saved reason %q, %v", saved.DeleteReason, err)
	}
	got := d.goneError("pod pod1 no longer exists").what
	if !strings.HasPrefix(got, "pod pod1 no longer exists; its watchdog was deleting it (pod_dir_unsafe): SAFETY STOP") {
		t.Errorf("gone: %q", got)
	}
}
