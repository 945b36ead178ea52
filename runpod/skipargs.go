package runpod

import "bytes"

// withoutArgs returns a page of GET /pods with the value of each pod's
// "args" member emptied (""), compacted in place, for ListPods' SkipArgs.
// A guarded pod's args are some 24 KB of escaped shell, nine tenths of the
// page: encoding/json would scan them twice (once to validate, once to
// decode) only for them to be dropped, while this finds each string's end
// with memchr. A pod is an object in the page's top-level array or in
// the array of its top-level object; an "args" met anywhere else (an env
// variable of that name, say) is kept. A page it cannot follow is returned
// unchanged, for json to judge.
func withoutArgs(page []byte) []byte {
	var cuts [][2]int // [start, end) of each args string, quotes included
	// stack holds '{' or '[' per open container; key is true where the
	// next string of the current object is a member name.
	var stack []byte
	key, podArgs := false, false
	for i := 0; i < len(page); i++ {
		switch c := page[i]; c {
		case '{', '[':
			stack = append(stack, c)
			key, podArgs = c == '{', false
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
				podArgs = string(page[i:end]) == `"args"` && inPod(stack)
				key = false
			case podArgs:
				cuts = append(cuts, [2]int{i, end})
				podArgs = false
			}
			i = end - 1
		case ':':
		default:
			// A literal or a number ends any args member that is not a
			// string; blanks change nothing.
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				podArgs = false
			}
		}
	}
	if len(stack) != 0 {
		return page
	}
	// Each cut keeps its two quotes: the string becomes "".
	w, r := 0, 0
	for _, c := range cuts {
		w += copy(page[w:], page[r:c[0]+1])
		page[w] = '"'
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
