package termtext

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, é and 日本", "plain text, é and 日本"},
		{"\x1b]0;owned\x07title", `\x1b]0;owned\x07title`},
		{"a\rb", `a\x0db`},
		{"\x1b[2Kgone", `\x1b[2Kgone`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202eevil", `bidi \u202eevil`},
		{"bad \xff utf8", `bad \xff utf8`},
		{`back\x1b`, `back\\x1b`},
		{"tab\tkept\nline", "tab\tkept\\x0aline"},
		{"del\x7f", `del\x7f`},
	} {
		if got := Escape(c.in, false); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Escape("two\nlines\x1b", true); got != "two\nlines\\x1b" {
		t.Errorf("Escape keeping newlines = %q", got)
	}
}

// No escaped text holds a control character, whatever came in.
func FuzzEscape(f *testing.F) {
	f.Add("\x1b[31mred\u009b\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range Escape(s, false) {
			if (r < 0x20 && r != '\t') || r == 0x7f || unsafeRune(r) {
				t.Fatalf("Escape(%q) kept %U", s, r)
			}
		}
	})
}

func TestReadLineCutsAndGoesOn(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 100) + "\nafter\nlast"
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	var got []string
	var cuts int
	for {
		line, cut, err := ReadLine(br, 10)
		if cut {
			cuts++
		}
		if line != "" {
			got = append(got, line)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"short\n", "xxxxxxxxxx" + CutMark + "\n", "after\n", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") || cuts != 1 {
		t.Fatalf("lines %q (%d cut), want %q", got, cuts, want)
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1_500: "1.5 kB", 2_000_000_000: "2.0 GB", 3_100_000_000_000: "3.1 TB"} {
		if got := ByteSize(n); got != want {
			t.Errorf("ByteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0 files", 1: "1 file", 2: "2 files"} {
		if got := Count(n, "file", "files"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
