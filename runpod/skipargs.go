package runpod

import "bytes"

// withoutArgs returns a page of GET /pods with each pod's start command
// dropped, compacted in place, for ListPods' SkipArgs: the value of its
// "args" member emptied ("") and those of its "cmd" and "entrypoint"
// members (arrays of strings) made []. A guarded pod's command is some
// 17 KB of shell, in its cmd and again, escaped, in its args: most of the
// page. encoding/json would scan it twice (once to validate, once
// to decode) only for it to be dropped, while this finds each string's
// end with memchr. A pod is an object in the page's top-level array or in
// the array of its top-level object; a member of those names met anywhere
// else (an env variable, say) is kept, as is one whose value is of
// another type. A page it cannot follow is returned unchanged, for json
// to judge.
func withoutArgs(page []byte) []byte {
	// Each cut is the [start, end) of a value to drop, quotes or brackets
	// included; it keeps its first and last byte: "" or [].
	var cuts [][2]int
	// stack holds '{' or '[' per open container; key is true where the
	// next string of the current object is a member name; member is the
	// command member whose value comes next, if any.
	var stack []byte
	key, member := false, ""
	for i := 0; i < len(page); i++ {
		switch c := page[i]; c {
		case '[':
			if member == "cmd" || member == "entrypoint" {
				end := arrayEnd(page, i)
				if end < 0 {
					return page
				}
				cuts = append(cuts, [2]int{i, end})
				member = ""
				i = end - 1
				continue
			}
			fallthrough
		case '{':
			stack = append(stack, c)
			key, member = c == '{', ""
		case '}', ']':
			if len(stack) == 0 {
				return page
			}
			stack = stack[:len(stack)-1]
			key = false
		case ',':
			key = len(stack) > 0 && stack[len(stack)-1] == '{'
		case '"':
			end := stringEnd(page, i)
			if end < 0 {
				return page
			}
			switch {
			case key:
				member = ""
				if name := string(page[i+1 : end-1]); inPod(stack) && (name == "args" || name == "cmd" || name == "entrypoint") {
					member = name
				}
				key = false
			case member == "args":
				cuts = append(cuts, [2]int{i, end})
				member = ""
			default:
				member = ""
			}
			i = end - 1
		case ':':
		default:
			// A literal or a number ends any command member of another
			// type; blanks change nothing.
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				member = ""
			}
		}
	}
	if len(stack) != 0 {
		return page
	}
	w, r := 0, 0
	for _, c := range cuts {
		w += copy(page[w:], page[r:c[0]+1])
		page[w] = page[c[1]-1]
		w++
		r = c[1]
	}
	w += copy(page[w:], page[r:])
	return page[:w]
}

// inPod reports whether the innermost open object is a pod of a page:
// an element of the top-level array, or of an array in the top-level
// object (its "pods").
func inPod(stack []byte) bool {
	return bytes.Equal(stack, []byte("[{")) || bytes.Equal(stack, []byte("{[{"))
}

// arrayEnd returns the index just past the bracket that closes the JSON
// array opening at start, or -1 when it does not close or its brackets do
// not match.
func arrayEnd(b []byte, start int) int {
	var open []byte // the closers awaited, innermost last
	for i := start; i < len(b); i++ {
		switch c := b[i]; c {
		case '[':
			open = append(open, ']')
		case '{':
			open = append(open, '}')
		case ']', '}':
			if len(open) == 0 || open[len(open)-1] != c {
				return -1
			}
			open = open[:len(open)-1]
			if len(open) == 0 {
				return i + 1
			}
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return -1
			}
			i = end - 1
		}
	}
	return -1
}

// stringEnd returns the index just past the closing quote of the JSON
// string that opens at start, or -1 when it does not close.
func stringEnd(b []byte, start int) int {
	for i := start + 1; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		// A quote after an odd run of backslashes is escaped.
		n := 0
		for k := i - 1; k > start && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
		i++
	}
}
