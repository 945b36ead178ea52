package runpod

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// bigScript is a bootstrap-sized script (32 KiB) full of what quoting gets
// wrong.
var bigScript = func() string {
	var b strings.Builder
	for b.Len() < 32<<10 {
		b.WriteString("printf '%s\\n' \"it's $HOME\" `date` \\\n\t'a''b' \"\\\"\" # comment ; | & > < ( ) { } * ? [ ] ~ !\n")
	}
	return b.String()
}()

var wordSets = [][]string{
	nil,
	{""},
	{"", ""},
	{"bash", "-c", "echo hi"},
	{"bash", "-c", script},
	{"bash", "-c", bigScript},
	{"'"}, {"''"}, {"'\\''"}, {`\`}, {`"`}, {"$"}, {"`"}, {"\n"}, {"\t \n"}, {" leading", "trailing "},
	{"#not-a-comment", "a#b"}, {"~", "*", "?", "[a]", "{a,b}"}, {"日本語", "emoji 🚀", "\xff\xfe invalid utf-8"},
	{"a'b\"c\\d$e`f"}, {"--flag=value with spaces", "-x"},
}

func TestQuoteArgsRoundTrip(t *testing.T) {
	for _, words := range wordSets {
		s := QuoteArgs(words)
		got, err := SplitArgs(s)
		if err != nil {
			t.Errorf("SplitArgs(QuoteArgs(%q)): %v", words, err)
			continue
		}
		if !cmp.Equal(got, words) && !(len(got) == 0 && len(words) == 0) {
			t.Errorf("round trip of %q gave %q via %q", words, got, s)
		}
	}
	if got := QuoteArgs([]string{"bash", "-c", "echo 'hi'"}); got != `'bash' '-c' 'echo '\''hi'\'''` {
		t.Errorf("QuoteArgs = %s", got)
	}
}

func TestSplitArgs(t *testing.T) {
	for in, want := range map[string][]string{
		"":                           nil,
		" \t\n ":                     nil,
		"a b\tc\nd":                  {"a", "b", "c", "d"},
		"  a   b  ":                  {"a", "b"},
		"''":                         {""},
		`"" ''`:                      {"", ""},
		`a'b c'd`:                    {"ab cd"},
		`"a b" c`:                    {"a b", "c"},
		`"\$ \` + "`" + ` \" \\ \n"`: {"$ ` \" \\ \\n"},
		`a\ b`:                       {"a b"},
		`\'`:                         {"'"},
		`\\`:                         {`\`},
		"a\\\nb":                     {"ab"},
		"a \\\n b":                   {"a", "b"},
		"\"a\\\nb\"":                 {"ab"},
		`'it'\''s'`:                  {"it's"},
		`$HOME ${x} $(ls) ;|&`:       {"$HOME", "${x}", "$(ls)", ";|&"},
		`"mixed"'quotes'plain`:       {"mixedquotesplain"},
	} {
		got, err := SplitArgs(in)
		if err != nil {
			t.Errorf("SplitArgs(%q): %v", in, err)
			continue
		}
		if !cmp.Equal(got, want) {
			t.Errorf("SplitArgs(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{`'abc`, `"abc`, `abc\`, `"abc\"`, `a 'b`} {
		if got, err := SplitArgs(bad); err == nil {
			t.Errorf("SplitArgs(%q) = %q, want an error", bad, got)
		}
	}
}

// shellWords has mvdan.cc/sh parse and expand s as the arguments of a
// POSIX command: what a shell would pass to exec.
func shellWords(t testing.TB, s string) ([]string, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader("cmd "+s), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, false
	}
	words, err := expand.Fields(nil, call.Args[1:]...)
	if err != nil {
		return nil, false
	}
	return words, true
}

// TestQuoteArgsMatchesShellParser: a shell parser reads QuoteArgs' output
// back to the same words, and SplitArgs agrees with it where expansions do
// not come in.
func TestQuoteArgsMatchesShellParser(t *testing.T) {
	for _, words := range wordSets {
		if len(words) == 0 || !utf8.ValidString(strings.Join(words, "")) {
			continue // the parser takes only UTF-8
		}
		got, ok := shellWords(t, QuoteArgs(words))
		if !ok || !cmp.Equal(got, words) {
			t.Errorf("the shell parser reads QuoteArgs(%q) as %q (ok %v)", words, got, ok)
		}
	}
	for _, in := range []string{
		`a b`, `"a b" 'c d' e\ f`, `"\\ \" \a"`, `'x'"y"z`, "a\\\nb", `\a\b\'\"`, `"" ''`, `'it'\''s'`,
	} {
		want, ok := shellWords(t, in)
		if !ok {
			t.Fatalf("the shell parser rejects %q", in)
		}
		if got, err := SplitArgs(in); err != nil || !cmp.Equal(got, want) {
			t.Errorf("SplitArgs(%q) = %q, %v; the shell parser says %q", in, got, err, want)
		}
	}
}

// TestQuoteArgsRealShells has real shells read QuoteArgs' output: each
// evaluates it as arguments and prints them back NUL-separated.
func TestQuoteArgsRealShells(t *testing.T) {
	const printWords = `eval "set -- $OB_ARGS"; for w in "$@"; do printf '%s' "$w"; printf '\000'; done`
	shells := [][]string{{"sh"}, {"dash"}, {"bash"}, {"busybox", "sh"}, {"posh"}, {"yash"}, {"mksh"}}
	for _, sh := range shells {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			path, err := exec.LookPath(sh[0])
			if err != nil {
				if os.Getenv("REQUIRE_SHELLS") == "1" {
					t.Fatalf("REQUIRE_SHELLS=1 but %s is missing", sh[0])
				}
				t.Skipf("%s not installed", sh[0])
			}
			for _, words := range wordSets {
				if len(words) == 0 || strings.Contains(strings.Join(words, ""), "\xff") {
					continue // shells differ on invalid UTF-8; nothing to learn
				}
				cmd := exec.Command(path, append(sh[1:], "-c", printWords)...)
				cmd.Env = []string{"OB_ARGS=" + QuoteArgs(words), "PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%q: %v", words, err)
				}
				got := strings.Split(string(bytes.TrimSuffix(out, []byte{0})), "\x00")
				if !cmp.Equal(got, words) {
					t.Errorf("%s reads QuoteArgs(%.60q) as %.60q", sh[0], words, got)
				}
			}
		})
	}
}

func FuzzQuoteArgs(f *testing.F) {
	for _, ws := range wordSets {
		if len(ws) >= 3 {
			f.Add(ws[0], ws[1], ws[2])
		} else if len(ws) == 1 {
			f.Add(ws[0], "", "x")
		}
	}
	f.Add("'", `\'`, `"'"`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		for _, words := range [][]string{{a}, {a, b}, {a, b, c}} {
			if strings.ContainsRune(strings.Join(words, ""), 0) {
				return
			}
			got, err := SplitArgs(QuoteArgs(words))
			if err != nil || !cmp.Equal(got, words) {
				t.Fatalf("round trip of %q: %q, %v", words, got, err)
			}
		}
	})
}

func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{`a "b c" 'd'`, `\'"\""`, "a\\\nb", `"unterminated`, `x\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitArgs(s)
		if err != nil {
			return
		}
		// Whatever SplitArgs reads, QuoteArgs writes back to the same words.
		again, err := SplitArgs(QuoteArgs(words))
		if err != nil || !cmp.Equal(again, words) && len(words) > 0 {
			t.Fatalf("%q → %q → %q, %v", s, words, again, err)
		}
	})
}
