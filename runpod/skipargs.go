package runpod

import (
	"bytes"
	"slices"
)

// withoutArgs returns a page of GET /pods with each pod's start command
// dropped (see argsDropper), compacted in place.
func withoutArgs(page []byte) []byte {
	d := argsDropper{out: page[:0]}
	_, _ = d.Write(page)
	return d.out
}

// argsDropper is an io.Writer that takes a page of GET /pods as it comes
// and keeps it, in out, without each pod's start command, for ListPods'
// SkipArgs: the value of its "args" member emptied ("") and those of its
// "cmd" and "entrypoint" members (arrays of strings) made []. A guarded
// pod's command is some 17 KB of shell, in its cmd and again, escaped, in
// its args: most of the page, which so never has to be held whole, nor
// scanned twice by encoding/json (once to validate, once to decode) only to
// be dropped; each string's end is found with memchr. A pod is an object in
// the page's top-level array or in the array of its top-level object; a
// member of those names met anywhere else (an env variable, say) is kept,
// as is one whose value is of another type. Past what it cannot follow
// (not JSON) it keeps the rest as it comes, for json to judge.
type argsDropper struct {
	out []byte
	// stack holds '{' or '[' per open container; key is true where the
	// next string of the current object is a member name; member is the
	// command member whose value comes next, if any.
	stack  []byte
	key    bool
	member string
	state  dropState
	// In a string: bs is the run of backslashes just before what comes
	// next; name holds a member name read so far (up to 16 bytes).
	bs   int
	name []byte
	// closers are the brackets a dropped array awaits, innermost last.
	closers []byte
}

type dropState uint8

const (
	inValue      dropState = iota // between tokens
	inName                        // a member name, kept
	inString                      // another string, kept
	inArgs                        // the string of an args member, dropped
	inArray                       // an array of cmd or entrypoint, dropped
	inArrayQuote                  // a string inside such an array
	lost                          // not JSON: the rest is kept as it comes
)

// Write takes the next bytes of the page; it never fails.
func (d *argsDropper) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		switch d.state {
		case lost:
			d.out = append(d.out, p...)
			return n, nil
		case inName, inString, inArgs, inArrayQuote:
			end, closed := d.stringPart(p)
			switch d.state {
			case inName:
				// The name first: in place (withoutArgs), out may
				// overwrite p.
				if len(d.name) <= 16 {
					d.name = append(d.name, p[:min(end, 17)]...)
				}
				d.out = append(d.out, p[:end]...)
			case inString:
				d.out = append(d.out, p[:end]...)
			}
			p = p[end:]
			if closed {
				d.closeString()
			}
		case inArray:
			i := bytes.IndexAny(p, "\"[]{}")
			if i < 0 {
				return n, nil
			}
			c := p[i]
			p = p[i+1:]
			switch c {
			case '"':
				d.state, d.bs = inArrayQuote, 0
			case '[':
				d.closers = append(d.closers, ']')
			case '{':
				d.closers = append(d.closers, '}')
			default:
				if d.closers[len(d.closers)-1] != c {
					d.state = lost
					continue
				}
				d.closers = d.closers[:len(d.closers)-1]
				if len(d.closers) == 0 {
					d.out = append(d.out, ']')
					d.state = inValue
				}
			}
		default:
			d.value(p[0])
			p = p[1:]
		}
	}
	return n, nil
}

// value takes one byte between tokens.
func (d *argsDropper) value(c byte) {
	switch c {
	case '[':
		if d.member == "cmd" || d.member == "entrypoint" {
			d.out = append(d.out, c)
			d.closers = append(d.closers[:0], ']')
			d.state, d.member = inArray, ""
			return
		}
		d.stack = append(d.stack, c)
		d.key, d.member = false, ""
	case '{':
		d.stack = append(d.stack, c)
		d.key, d.member = true, ""
	case '}', ']':
		if len(d.stack) == 0 {
			d.out = append(d.out, c)
			d.state = lost
			return
		}
		d.stack = d.stack[:len(d.stack)-1]
		d.key = false
	case ',':
		d.key = len(d.stack) > 0 && d.stack[len(d.stack)-1] == '{'
	case '"':
		d.out = append(d.out, c)
		d.bs = 0
		switch {
		case d.key:
			d.state, d.name = inName, d.name[:0]
		case d.member == "args":
			d.state = inArgs
		default:
			d.state = inString
		}
		return
	case ':', ' ', '\t', '\n', '\r':
	default:
		// A literal or a number ends any command member of another
		// type.
		d.member = ""
	}
	d.out = append(d.out, c)
}

// stringPart finds, in p, the end of the string d is in: it returns the
// length of p that belongs to the string, its closing quote included when
// closed. An escaped quote follows an odd run of backslashes.
func (d *argsDropper) stringPart(p []byte) (end int, closed bool) {
	from := 0
	for {
		j := bytes.IndexByte(p[from:], '"')
		if j < 0 {
			d.bs = backslashes(p[from:], d.bs)
			return len(p), false
		}
		j += from
		if backslashes(p[from:j], d.bs)%2 == 0 {
			return j + 1, true
		}
		from, d.bs = j+1, 0
	}
}

// backslashes is the run of backslashes at the end of p, run being the
// one before p.
func backslashes(p []byte, run int) int {
	n := 0
	for n < len(p) && p[len(p)-1-n] == '\\' {
		n++
	}
	if n == len(p) {
		return run + n
	}
	return n
}

// closeString ends the string d was in, its closing quote taken.
func (d *argsDropper) closeString() {
	switch d.state {
	case inName:
		d.member = ""
		name := d.name[:max(len(d.name)-1, 0)] // without the closing quote
		if inPod(d.stack) && (string(name) == "args" || string(name) == "cmd" || string(name) == "entrypoint") {
			d.member = string(name)
		}
		d.key, d.state = false, inValue
	case inArgs:
		d.out = append(d.out, '"')
		d.member, d.state = "", inValue
	case inArrayQuote:
		d.state = inArray
	default:
		d.member, d.state = "", inValue
	}
}

// inPod reports whether the innermost open object is a pod of a page:
// an element of the top-level array, or of an array in the top-level
// object (its "pods").
func inPod(stack []byte) bool {
	return slices.Equal(stack, []byte("[{")) || slices.Equal(stack, []byte("{[{"))
}
