package localpod

import (
	"errors"
	"fmt"
	"strings"
)

// SplitArgs splits a pod's `args` string into the words a POSIX shell would
// see, the way the fake runs a pod's command. Runpod's v2 API carries the
// container command as one string, and clients render each word quoted, so
// only quoting matters here: single quotes (literal up to the next '), double
// quotes (where a backslash escapes only $ ` " \ and newline), backslash
// escapes outside quotes (a backslash-newline joins lines), and blanks
// (space, tab, newline) between words. Nothing is expanded: `$x`, `*` or `;`
// stay literal characters of their word, as they would reach an exec call.
func SplitArgs(s string) ([]string, error) {
	var (
		words []string
		word  strings.Builder
		// inWord is true once the current word has begun, so that an
		// empty quoted string ('' or "") still makes a word.
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case '\\':
			if i+1 >= len(s) {
				return nil, errors.New("localpod: args end with a lone backslash")
			}
			i++
			if s[i] == '\n' { // line continuation: both characters vanish
				continue
			}
			word.WriteByte(s[i])
			inWord = true
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("localpod: args have an unterminated single quote at byte %d", i)
			}
			word.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case '"':
			start := i
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					switch s[i+1] {
					case '$', '`', '"', '\\':
						i++
					case '\n':
						i++
						continue
					}
				}
				word.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("localpod: args have an unterminated double quote at byte %d", start)
			}
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}
