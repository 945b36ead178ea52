package termtext

import (
	"bufio"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every C0 and C1 control character, DEL, the
// Unicode bidirectional controls and each byte of invalid UTF-8 written as
// a Go escape (\x1b, \u202e, ...); a backslash becomes \\ so that an
// escape is never ambiguous. Tabs are kept; keepNewlines also keeps "\n".
// Printable text, whatever its script, is unchanged.
func Escape(s string, keepNewlines bool) string {
	if clean(s, keepNewlines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n' && keepNewlines, r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean says s needs no escape: the common case costs no allocation.
func clean(s string, keepNewlines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return false // decoded by the slow path
		}
		if c == '\\' || c == 0x7f || (c < 0x20 && c != '\t' && !(c == '\n' && keepNewlines)) {
			return false
		}
	}
	return true
}

// unsafeRune is a C1 control or a character that reorders what follows
// it on screen.
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || r == 0x061c || r == 0x200e || r == 0x200f ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// CutMark ends a line that ReadLine cut at its bound.
const CutMark = " [line cut]"

// ReadLine returns the next line of br with its newline, at most limit bytes
// of it: the rest of a longer line is read and dropped, and the line ends
// in CutMark then "\n", with cut set. A cut line is no error: what follows
// it is read as usual. err is br's (io.EOF after a last line without a
// newline, which is returned).
func ReadLine(br *bufio.Reader, limit int) (line string, cut bool, err error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !cut {
			if room := limit - len(b); len(chunk) > room {
				b, cut = append(b, chunk[:max(room, 0)]...), true
			} else {
				b = append(b, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if cut {
			b = append(b, CutMark+"\n"...)
		}
		return string(b), cut, err
	}
}

// ByteSize is n bytes for a person, in powers of 1000 as disks and
// networks count them.
func ByteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// Count is n and the noun for it: one for 1, else many ("1 file",
// "2 files", "0 files").
func Count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
