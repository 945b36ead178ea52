package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

func TestCommandCarriesTheWatchdogAndStaysSmall(t *testing.T) {
	cmd := bootstrap.Command()
	if len(cmd) != 3 || cmd[0] != "bash" || cmd[1] != "-c" {
		t.Fatalf("Command()[:2] = %q, want bash -c", cmd[:min(2, len(cmd))])
	}
	script := cmd[2]
	if script != bootstrap.Script() {
		t.Error("Command()[2] is not Script()")
	}
	if n := len(script); n >= bootstrap.MaxCommandBytes {
		t.Errorf("the command is %d bytes, the limit is %d", n, bootstrap.MaxCommandBytes)
	}
	if !strings.HasPrefix(script, bootstrap.Compact(bootstrap.Functions())) {
		t.Error("the command does not start with the bootstrap's functions")
	}
	if !strings.Contains(script, "<<'"+bootstrap.HeredocEnd+"' || return 1\n"+bootstrap.Compact(watchdog.Script())+bootstrap.HeredocEnd+"\n") {
		t.Error("the command does not carry the whole watchdog")
	}
	if !strings.HasSuffix(script, "\nbootstrap_main\n") {
		t.Error("the command does not end by calling bootstrap_main")
	}
	for _, line := range strings.Split(watchdog.Script(), "\n") {
		if line == bootstrap.HeredocEnd {
			t.Fatalf("a line of the watchdog is %q and would end its here-document", bootstrap.HeredocEnd)
		}
	}
	if strings.Contains(bootstrap.Functions(), bootstrap.HeredocEnd) {
		t.Errorf("bootstrap.sh mentions %q", bootstrap.HeredocEnd)
	}
}

// The paths the bootstrap writes are the ones podenv documents.
func TestPathsAgreeWithPodenv(t *testing.T) {
	f := bootstrap.Functions()
	dir, file := filepath.Split(podenv.JobEnv)
	for _, want := range []string{"ETC=" + strings.TrimSuffix(dir, "/") + "\n", "JOB_ENV=$ETC/" + file + "\n", podenv.HostKeyEnv} {
		if !strings.Contains(f, want) {
			t.Errorf("bootstrap.sh does not contain %q", want)
		}
	}
	if !strings.Contains(f, watchdog.BootstrapFailed) || !strings.Contains(f, "$POD_DIR/bootstrap_failed") {
		t.Errorf("bootstrap.sh does not write %s", watchdog.BootstrapFailed)
	}
}

func TestEveryShellParsesTheCommand(t *testing.T) {
	for _, shell := range shtest.Names {
		t.Run(shell, func(t *testing.T) {
			argv := append(shellArgv(t, shell), "-n", "-c", bootstrap.Script())
			out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
}

func TestScriptIsPOSIX(t *testing.T) {
	parser := syntax.NewParser(syntax.Variant(syntax.LangPOSIX))
	for name, src := range map[string]string{"bootstrap.sh": bootstrap.Functions(), "Script()": bootstrap.Script()} {
		if _, err := parser.Parse(strings.NewReader(src), name); err != nil {
			t.Errorf("%s is not POSIX sh: %v", name, err)
		}
	}
}

func TestShellcheck(t *testing.T) {
	shtest.NeedTool(t, "shellcheck")
	out, err := exec.Command("shellcheck", "-s", "sh", "bootstrap.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("shellcheck -s sh bootstrap.sh: %v\n%s", err, out)
	}
	// The whole command too, as the pod runs it.
	path := filepath.Join(t.TempDir(), "command.sh")
	if err := os.WriteFile(path, []byte(bootstrap.Script()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command("shellcheck", "-s", "sh", path).CombinedOutput()
	if err != nil {
		t.Fatalf("shellcheck -s sh on Script(): %v\n%s", err, out)
	}
}

// The reasons bootstrap.sh can fail with are exactly the exported ones.
func TestFailureReasonsAreTheExportedOnes(t *testing.T) {
	var code []string
	for _, line := range strings.Split(bootstrap.Functions(), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			code = append(code, line)
		}
	}
	f := strings.Join(code, "\n")
	found := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b(?:fail |why=)([a-z_]+)\b`).FindAllStringSubmatch(f, -1) {
		found[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`printf '([a-z_]+)\\n' >"\$POD_DIR/bootstrap_failed"`).FindAllStringSubmatch(f, -1) {
		found[m[1]] = true
	}
	var got []string
	for r := range found {
		got = append(got, r)
	}
	sort.Strings(got)
	want := append([]string(nil), bootstrap.Reasons()...)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failure reasons in bootstrap.sh (-exported +script):\n%s", diff)
	}
}

// feed hands a secret to a pipe without any command line holding it, in
// every shell: printf where it is built in, a here-document where printf is
// /usr/bin/printf (posh, mksh). A printf stub first on PATH records any call.
func TestFeedKeepsSecretsOffCommandLines(t *testing.T) {
	const secret = "c2VjcmV0LWhvc3Qta2V5LWJhc2U2NA== 'quoted' $HOME"
	for _, shell := range shtest.Names {
		t.Run(shell, func(t *testing.T) {
			argv := shellArgv(t, shell)
			bin := shtest.NewBin(t)
			log := filepath.Join(bin.Dir, "printf.calls")
			bin.Stub("printf", `echo "$*" >> "`+log+`"; exec /usr/bin/printf "$@"`)
			script := bootstrap.Functions() + "\nfeed \"$SECRET\"\n"
			cmd := exec.Command(argv[0], append(argv[1:], "-c", script)...)
			cmd.Env = []string{"PATH=" + bin.Dir + ":" + shtest.SystemPath, "SECRET=" + secret}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("feed: %v", err)
			}
			if string(out) != secret+"\n" {
				t.Errorf("feed wrote %q, want %q", out, secret+"\n")
			}
			if calls := readString(log); strings.Contains(calls, "c2VjcmV0") {
				t.Errorf("the secret reached printf's command line: %q", calls)
			}
		})
	}
}

// The command carries the scripts without their comment lines. The shell
// must see the same program: both forms parse to the same syntax tree once
// comments are dropped, and the compact form is much smaller.
func TestCompactKeepsTheProgram(t *testing.T) {
	printed := func(name, src string) string {
		t.Helper()
		f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		// Minify prints the program alone, without the layout.
		if err := syntax.NewPrinter(syntax.Minify(true)).Print(&b, f); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for name, src := range map[string]string{
		"bootstrap.sh": bootstrap.Functions(),
		"watchdog":     watchdog.Script(),
		// Comment-looking lines inside a here-document are content.
		"heredoc": "cat <<END\n# kept\n\nEND\n# dropped\n  # dropped\necho ok # kept\n",
	} {
		small := bootstrap.Compact(src)
		if diff := cmp.Diff(printed(name, src), printed(name, small)); diff != "" {
			t.Errorf("%s: compact changed the program (-full +compact):\n%s", name, diff)
		}
		if name != "heredoc" && strings.Contains(small, "\n\n") {
			t.Errorf("%s: compact left blank lines", name)
		}
	}
	if got := bootstrap.Compact("cat <<END\n# kept\n\nEND\n# dropped\necho ok # kept\n"); got != "cat <<END\n# kept\n\nEND\necho ok # kept\n" {
		t.Errorf("Compact kept or dropped the wrong lines: %q", got)
	}
	if full, small := len(watchdog.Script()), len(bootstrap.Compact(watchdog.Script())); small > full*3/4 {
		t.Errorf("compact watchdog is %d of %d bytes", small, full)
	}
}

// Other packages' tests run the bootstrap's functions from the file that
// shtest reads: it is the text the package embeds.
func TestShtestReadsTheEmbeddedFunctions(t *testing.T) {
	if shtest.BootstrapFunctions(t) != bootstrap.Functions() {
		t.Fatal("shtest.BootstrapFunctions differs from the embedded bootstrap.sh")
	}
}
