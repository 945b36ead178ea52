package watchdog_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The shipped script, as files, for the tools that read files.
func scriptFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"group_signal.sh": watchdog.GroupSignal(),
		"watchdog.sh":     strings.TrimPrefix(watchdog.Script(), watchdog.GroupSignal()),
		"script.sh":       watchdog.Script(),
		"wake.sh":         watchdog.WakeCommand(),
	}
	out := map[string]string{}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

func TestScriptIsGroupSignalThenWatchdog(t *testing.T) {
	t.Parallel()
	s := watchdog.Script()
	if !strings.HasPrefix(s, watchdog.GroupSignal()) {
		t.Fatal("Script() does not start with GroupSignal()")
	}
	if !strings.Contains(s, "\ngroup_signal() {") && !strings.Contains(s, "group_signal() {") {
		t.Fatal("Script() lacks group_signal")
	}
	if !strings.HasSuffix(s, "\n") {
		t.Error("Script() does not end with a newline")
	}
}

func TestShellcheck(t *testing.T) {
	t.Parallel()
	sc := shtest.NeedTool(t, "shellcheck")
	for name, p := range scriptFiles(t) {
		out, err := exec.Command(sc, "-s", "sh", p).CombinedOutput()
		if err != nil {
			t.Errorf("shellcheck -s sh %s: %v\n%s", name, err, out)
		}
	}
}

func TestSyntaxUnderEveryShell(t *testing.T) {
	t.Parallel()
	files := scriptFiles(t)
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		for _, name := range []string{"script.sh", "wake.sh"} {
			argv := append(append([]string{}, sh.Argv...), "-n", files[name])
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				t.Errorf("%v: %v\n%s", argv, err, out)
			}
		}
	})
}

func TestPOSIXParse(t *testing.T) {
	t.Parallel()
	p := syntax.NewParser(syntax.Variant(syntax.LangPOSIX))
	for name, body := range map[string]string{"group_signal.sh": watchdog.GroupSignal(), "script": watchdog.Script(), "wake": watchdog.WakeCommand()} {
		if _, err := p.Parse(strings.NewReader(body), name); err != nil {
			t.Errorf("%s is not POSIX sh: %v", name, err)
		}
	}
}
