package runpod

import (
	"encoding/json"
	"errors"
	"strings"
)

// REST v2 takes a pod's start command as one string, args ("Arguments
// passed to the container entrypoint"), where the older APIs and the
// console take a shell-like command line. We assume Runpod splits that
// string into words by POSIX shell quoting rules, without running a shell:
// no expansions, no operators. QuoteArgs writes every word in single quotes,
// the one form every such splitter (POSIX sh, shlex, Go shellwords) reads
// back verbatim, so the assumption only has to hold for that form.

// QuoteArgs renders words as one command-line string for a pod's args: each
// word in single quotes, a single quote inside a word written as '\”.
// SplitArgs(QuoteArgs(w)) returns w for any words without NUL bytes, and a
// POSIX shell reads the string to the same words.
func QuoteArgs(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(w, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

// SplitArgs splits a pod's args string into words the way a POSIX shell
// splits a simple command's words, without expanding anything: blanks
// (space, tab, newline) separate words; single quotes keep everything up to
// the next single quote; double quotes keep everything up to the next
// unescaped double quote, where a backslash escapes only $, `, ", \ and
// newline; outside quotes a backslash keeps the next character; a backslash
// before a newline joins lines. $, `, ;, |, & and the like are ordinary
// characters. An empty or blank string has no words (nil). An unterminated
// quote or a trailing backslash is an error.
func SplitArgs(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool // a word has started, maybe empty ('')
	)
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch ch {
		case ' ', '\t', '\n':
			end()
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("runpod: args: unterminated single quote")
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(s) {
					switch n := s[i+1]; n {
					case '\n':
						i++
						continue
					case '$', '`', '"', '\\':
						word.WriteByte(n)
						i++
						continue
					}
				}
				word.WriteByte(c)
			}
			if !closed {
				return nil, errors.New("runpod: args: unterminated double quote")
			}
		case '\\':
			if i+1 >= len(s) {
				return nil, errors.New("runpod: args: trailing backslash")
			}
			i++
			if s[i] == '\n' {
				continue // line continuation: neither a word nor a break
			}
			word.WriteByte(s[i])
			inWord = true
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	end()
	return words, nil
}

// parseArgsObject reads args in its JSON form, {"entrypoint":[...],
// "cmd":[...]} with either member or both; ok is false for anything else
// (a shell string).
func parseArgsObject(args string) (entrypoint, cmd []string, ok bool) {
	s := strings.TrimSpace(args)
	if !strings.HasPrefix(s, "{") {
		return nil, nil, false
	}
	var v struct {
		Entrypoint []string `json:"entrypoint"`
		Cmd        []string `json:"cmd"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if dec.Decode(&v) != nil || dec.More() {
		return nil, nil, false
	}
	return v.Entrypoint, v.Cmd, true
}
