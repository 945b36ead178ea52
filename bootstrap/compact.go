package bootstrap

import (
	"regexp"
	"strings"
)

// heredocStart finds the delimiter of a here-document opened on a line.
// Our scripts open at most one per line and never use << for arithmetic.
var heredocStart = regexp.MustCompile(`<<-?[ \t]*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// compact drops the comment-only and blank lines of a shell script, outside
// here-documents, so that the pod's command stays well under
// MaxCommandBytes while the .sh files keep their explanations. Code lines,
// indentation and here-document bodies are kept as they are; a test parses
// both forms and checks that the shell sees the same program.
func compact(script string) string {
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
