package localpod

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/runpod"
)

var splitCases = []struct {
	in   string
	want []string
}{
	{"", nil},
	{"   \t\n ", nil},
	{"a", []string{"a"}},
	{"  bash   -c  x ", []string{"bash", "-c", "x"}},
	{"'a b' c", []string{"a b", "c"}},
	{`'it'\''s'`, []string{"it's"}},
	{`''`, []string{""}},
	{`"" ''`, []string{"", ""}},
	{`a''b`, []string{"ab"}},
	{`"a \"b\" \\ \$x \q"`, []string{`a "b" \ $x \q`}},
	{`a\ b`, []string{"a b"}},
	{`\'`, []string{"'"}},
	{"a\\\nb", []string{"ab"}},
	{"\"a\\\nb\"", []string{"ab"}},
	{"'a\nb'", []string{"a\nb"}},
	{`x"y"'z'`, []string{"xyz"}},
	{`'$HOME' "\` + "`" + `"`, []string{"$HOME", "`"}},
}

func TestSplitArgs(t *testing.T) {
	for _, c := range splitCases {
		got, err := SplitArgs(c.in)
		if err != nil {
			t.Errorf("SplitArgs(%q): %v", c.in, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("SplitArgs(%q) (-want +got):\n%s", c.in, diff)
		}
	}
	for _, bad := range []string{`'open`, `"open`, `a\`, `"a\"`} {
		if words, err := SplitArgs(bad); err == nil {
			t.Errorf("SplitArgs(%q) = %q, want an error", bad, words)
		}
	}
}

// shells lists the POSIX shells to compare with, skipping (or, under
// REQUIRE_SHELLS=1, failing for) those missing.
func shells(t *testing.T) [][]string {
	t.Helper()
	var found [][]string
	for _, sh := range [][]string{{"sh"}, {"dash"}, {"bash", "--posix"}, {"busybox", "sh"}, {"posh"}, {"yash"}, {"mksh"}} {
		if _, err := exec.LookPath(sh[0]); err != nil {
			if os.Getenv("REQUIRE_SHELLS") == "1" {
				t.Errorf("%s is missing (REQUIRE_SHELLS=1)", sh[0])
			} else {
				t.Logf("skipping %s: not installed", sh[0])
			}
			continue
		}
		found = append(found, sh)
	}
	return found
}

// shellWords has a real shell split args: `set -- <args>` then print each
// word NUL-terminated.
func shellWords(t *testing.T, sh []string, args string) []string {
	t.Helper()
	script := "set -- " + args + "\nfor w do printf '%s\\0' \"$w\"; done\n"
	cmd := exec.Command(sh[0], append(sh[1:], "-c", script)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v on %q: %v: %s", sh, args, err, stderr.Bytes())
	}
	if len(out) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// SplitArgs reads quoting as the shells do.
func TestSplitArgsAgreesWithShells(t *testing.T) {
	for _, sh := range shells(t) {
		for _, c := range splitCases {
			if c.in == "\"a\\\nb\"" && sh[0] == "posh" {
				// posh keeps a backslash-newline inside double quotes,
				// against POSIX; the client never writes one.
				continue
			}
			got, err := SplitArgs(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if want := shellWords(t, sh, c.in); !cmp.Equal(want, got) {
				t.Errorf("%v splits %q into %q, SplitArgs into %q", sh, c.in, want, got)
			}
		}
	}
}

func randomWord(r *rand.Rand) string {
	const special = " \t\n'\"\\$`*?;&|<>(){}[]#~=%!"
	n := r.IntN(12)
	var b strings.Builder
	for range n {
		switch r.IntN(3) {
		case 0:
			b.WriteByte(special[r.IntN(len(special))])
		case 1:
			b.WriteByte(byte('a' + r.IntN(26)))
		default:
			// Any character but NUL: args travel in JSON, so as UTF-8.
			b.WriteRune(rune(1 + r.IntN(0x2FFF)))
		}
	}
	return b.String()
}

// QuoteArgs then SplitArgs gives the words back, and a shell agrees.
func TestQuoteArgsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sh := shells(t)
	for i := range 300 {
		words := make([]string, 1+r.IntN(5))
		for j := range words {
			words[j] = randomWord(r)
		}
		args := runpod.QuoteArgs(words)
		got, err := SplitArgs(args)
		if err != nil {
			t.Fatalf("SplitArgs(runpod.QuoteArgs(%q)): %v", words, err)
		}
		if diff := cmp.Diff(words, got); diff != "" {
			t.Fatalf("round trip of %q (-want +got):\n%s", words, diff)
		}
		if i < 30 && len(sh) > 0 {
			shell := sh[i%len(sh)]
			if want := shellWords(t, shell, args); !cmp.Equal(want, words) {
				t.Errorf("%v reads runpod.QuoteArgs(%q) as %q", shell, words, want)
			}
		}
	}
}

func FuzzSplitArgs(f *testing.F) {
	for _, c := range splitCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitArgs(s)
		if err != nil {
			return
		}
		again, err := SplitArgs(runpod.QuoteArgs(words))
		if err != nil || !cmp.Equal(words, again) && len(words) > 0 {
			t.Errorf("%q: %q, then %q (%v)", s, words, again, err)
		}
	})
}
