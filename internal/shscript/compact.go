// Package shscript prepares the shell scripts the SDK sends to a pod: without
// their comment lines (Compact), and compressed (Pack) for a shell to unpack
// with base64 and gzip.
package shscript

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"regexp"
	"strings"
)

// heredocStart finds the delimiter of a here-document opened on a line.
// Our scripts open at most one per line and never use << for arithmetic.
var heredocStart = regexp.MustCompile(`<<-?[ \t]*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// Compact drops the comment-only and blank lines of a shell script, outside
// here-documents, so that what travels to the pod stays small while the .sh
// files keep their explanations. Code lines, indentation and here-document
// bodies are kept as they are; a test parses both forms and checks that the
// shell sees the same program.
func Compact(script string) string {
	var b strings.Builder
	b.Grow(len(script))
	end := ""
	for _, line := range strings.SplitAfter(script, "\n") {
		if end != "" {
			b.WriteString(line)
			if strings.TrimSuffix(line, "\n") == end {
				end = ""
			}
			continue
		}
		code := strings.TrimLeft(line, " \t")
		if code == "" || code == "\n" || strings.HasPrefix(code, "#") {
			continue
		}
		b.WriteString(line)
		if m := heredocStart.FindStringSubmatch(line); m != nil {
			end = m[1]
		}
	}
	return b.String()
}

// Pack returns text gzip-compressed, then base64-encoded on one line: a word
// that needs no quoting in a shell, which `base64 -d | gzip -d` turns back
// into text (coreutils, busybox). The same text always packs the same.
func Pack(text string) string {
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	_, _ = w.Write([]byte(text))
	_ = w.Close()
	return base64.StdEncoding.EncodeToString(z.Bytes())
}
