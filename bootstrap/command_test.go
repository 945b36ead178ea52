package bootstrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

func TestCommandIsSmallAndEndsByBooting(t *testing.T) {
	cmd := bootstrap.Command()
	if len(cmd) != 3 || cmd[0] != "bash" || cmd[1] != "-c" {
		t.Fatalf("Command()[:2] = %q, want bash -c", cmd[:min(2, len(cmd))])
	}
	script := cmd[2]
	if script != bootstrap.Script() {
		t.Error("Command()[2] is not Script()")
	}
	if n := len(script); n > bootstrap.MaxCommandBytes {
		t.Errorf("the command is %d bytes, the limit is %d", n, bootstrap.MaxCommandBytes)
	}
	if !strings.HasSuffix(script, "\nbootstrap_main\n") {
		t.Error("the command does not end by calling bootstrap_main")
	}
	if strings.Contains(script, "\n#") {
		t.Error("the command carries comment lines")
	}
}

// packedFunctions is the word the command unpacks into the bootstrap's
// functions.
var packedFunctions = regexp.MustCompile(`\nBOOTSTRAP_FUNCTIONS=\$\(unpack ([A-Za-z0-9+/=]+)\) \|\|\n`)

// The command unpacks, under every shell and with the base64 and gzip of
// both coreutils and busybox, exactly what it packed: the watchdog that
// write_watchdog writes is the watchdog package's script (compacted), the
// functions are bootstrap.sh's, and every shell parses them. The shell runs
// the command as it ships, its last line (bootstrap_main) replaced.
func TestCommandUnpacksWhatItCarries(t *testing.T) {
	script, ok := strings.CutSuffix(bootstrap.Script(), "\nbootstrap_main\n")
	m := packedFunctions.FindStringSubmatch(bootstrap.Script())
	if !ok || m == nil {
		t.Fatal("the command does not unpack its functions as this test expects")
	}
	script += `
write_watchdog "$1/watchdog.sh" || exit 3
command -v bootstrap_main >/dev/null || exit 4
[ -z "${BOOTSTRAP_FUNCTIONS+set}" ] || exit 5
unpack "$2" >"$1/functions" || exit 6
`
	wantWatchdog, wantFunctions := bootstrap.Packed()
	busybox := shtest.NeedTool(t, "busybox")
	for _, tools := range []string{"system", "busybox"} {
		for _, shell := range shtest.Names {
			t.Run(tools+"/"+shell, func(t *testing.T) {
				sh, _ := shtest.Lookup(shell)
				bin := shtest.NewBin(t)
				if tools == "busybox" {
					for _, name := range []string{"base64", "gzip"} {
						if err := os.Symlink(busybox, filepath.Join(bin.Dir, name)); err != nil {
							t.Fatal(err)
						}
					}
				}
				dir := t.TempDir()
				res := shtest.Run(t, sh, script, shtest.Opts{Bin: bin, Args: []string{dir, m[1]}})
				if res.Code != 0 {
					t.Fatalf("exit %d: %s", res.Code, res.Stderr)
				}
				if got := readString(filepath.Join(dir, "watchdog.sh")); got != wantWatchdog {
					t.Errorf("write_watchdog wrote %d bytes, not the %d of the watchdog", len(got), len(wantWatchdog))
				}
				if got := readString(filepath.Join(dir, "functions")); got != wantFunctions {
					t.Errorf("the functions unpack to %d bytes, not the %d of bootstrap.sh", len(got), len(wantFunctions))
				}
				argv := append(slices.Clone(sh.Argv), "-n", filepath.Join(dir, "functions"))
				if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
					t.Errorf("%s -n on the unpacked functions: %v\n%s", shell, err, out)
				}
			})
		}
	}
}

// A pod that cannot unpack the bootstrap (its image lacks base64 or gzip)
// deletes itself with the API, says why, and sleeps, under every shell.
func TestCommandWithoutUnpackerDeletesThePod(t *testing.T) {
	for _, missing := range []string{"base64", "gzip"} {
		for _, shell := range shtest.Names {
			t.Run(missing+"/"+shell, func(t *testing.T) {
				t.Parallel()
				sh, _ := shtest.Lookup(shell)
				shtest.Need(t, sh)
				api := shtest.NewFakeAPI(t)
				// Only what the last resort needs is on PATH.
				bin := shtest.NewBin(t)
				for _, name := range []string{"base64", "gzip", "curl", "cat", "printf", "sleep"} {
					if name == missing {
						continue
					}
					p, err := exec.LookPath(name)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(p, filepath.Join(bin.Dir, name)); err != nil {
						t.Fatal(err)
					}
				}
				p := shtest.Start(t, sh, bootstrap.Script(), shtest.Opts{Env: map[string]string{
					"PATH": bin.Dir, "RUNPOD_POD_ID": "pod1", "RUNPOD_API_KEY": "rpa_KEY",
					"OVERBRAINER_API_URL": api.URL(),
				}})
				api.WaitFor(t, func(rs []shtest.Request) bool {
					return slices.ContainsFunc(rs, func(r shtest.Request) bool {
						return r.Method == "DELETE" && r.Path == "/pods/pod1" && r.Auth == "Bearer rpa_KEY"
					})
				}, bootTimeout)
				shtest.Eventually(t, bootTimeout, func() bool {
					return strings.Contains(p.Stderr(), "DELETE answered") || p.Exited()
				}, "the bootstrap did not say the DELETE's answer:\n%s", lazyStderr{p})
				if p.Exited() {
					t.Fatalf("the command ended (%d) instead of sleeping:\n%s", p.ExitCode(), p.Stderr())
				}
				if !strings.Contains(p.Stderr(), "overbrainer bootstrap: cannot unpack the bootstrap") {
					t.Errorf("the output does not say why:\n%s", p.Stderr())
				}
			})
		}
	}
}

// lazyStderr reads a process's stderr only when a failure message is printed.
type lazyStderr struct{ p *shtest.Proc }

func (l lazyStderr) String() string { return l.p.Stderr() }

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
	// WATCHDOG_PACKED is for the packed functions (checked above, in
	// bootstrap.sh), which shellcheck cannot see here.
	out, err = exec.Command("shellcheck", "-s", "sh", "--exclude=SC2034", path).CombinedOutput()
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

// The host key never reaches a program the command runs before
// bootstrap_main, under every shell: the unpacking's base64 and gzip run
// with an environment that no longer holds it. (The chaos suite's /proc
// sampling once found it in a gzip's environment.)
func TestUnpackingNeverSeesTheHostKey(t *testing.T) {
	script, ok := strings.CutSuffix(bootstrap.Script(), "\nbootstrap_main\n")
	if !ok {
		t.Fatal("the command does not end with bootstrap_main")
	}
	script += "\nwrite_watchdog \"$1/watchdog.sh\" || exit 3\n"
	const secret = "c2VjcmV0LWhvc3Qta2V5LWJhc2U2NA=="
	for _, shell := range shtest.Names {
		t.Run(shell, func(t *testing.T) {
			sh, _ := shtest.Lookup(shell)
			bin := shtest.NewBin(t)
			dir := t.TempDir()
			envs := filepath.Join(dir, "envs")
			for _, name := range []string{"base64", "gzip"} {
				real, err := exec.LookPath(name)
				if err != nil {
					t.Fatal(err)
				}
				bin.Stub(name, "env >> "+shellQuote(envs)+"\nexec "+shellQuote(real)+` "$@"`)
			}
			res := shtest.Run(t, sh, script, shtest.Opts{Bin: bin, Args: []string{dir},
				Env: map[string]string{podenv.HostKeyEnv: secret}})
			if res.Code != 0 {
				t.Fatalf("exit %d: %s", res.Code, res.Stderr)
			}
			got := readString(envs)
			if !strings.Contains(got, "PATH=") {
				t.Fatalf("the stubs recorded no environment: %q", got)
			}
			if strings.Contains(got, secret) {
				t.Errorf("the host key reached base64 or gzip's environment")
			}
		})
	}
}
