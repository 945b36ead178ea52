package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	flag "github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// A run file (run -f FILE) is a YAML mapping from run's flags, named as
// the flag without "--", to their values: the flag set that run parses is
// the only list of its keys, their types and their checks.
//
//	job: .
//	cmd: python train.py
//	gpu: NVIDIA GeForce RTX 4090,NVIDIA RTX A6000
//	max-hours: 6
//	secret: [HF_TOKEN]
//	pod-env: {NCCL_DEBUG: INFO}

// pathAnnotation marks a flag whose value is a local path: a relative one
// in a run file is relative to the file's directory, not to where launch
// runs.
const pathAnnotation = "launch_runfile_path"

// markPaths marks fs's flags names as local paths (see pathAnnotation).
func markPaths(fs *flag.FlagSet, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, pathAnnotation, []string{"true"}); err != nil {
			panic(err) // a flag renamed without its mark
		}
	}
}

func isPath(f *flag.Flag) bool { return len(f.Annotations[pathAnnotation]) > 0 }

// pairList is a repeatable flag of NAME=VALUE values, which a run file may
// also give as a mapping.
type pairList interface {
	flag.SliceValue
	pairs()
}

// yamlLine reads the line out of the YAML library's syntax errors.
var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// maxRunFile bounds what is read of a run file: a run is a few lines.
const maxRunFile = 1 << 20

// runFile is a run file's settings, flag name to its values, read by
// readRunFile.
type runFile struct {
	path string
	set  map[string][]string // each flag's values, in the file's order
	line map[string]int      // the line of each flag's key
}

// runKeys is a flag set of run's own flags alone (not the global ones):
// the keys a run file may have, on values of their own for checking.
func runKeys() *flag.FlagSet {
	fs := flag.NewFlagSet("run file", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	new(runFlags).register(fs)
	return fs
}

// readRunFile reads the run file at path and checks each of its values as
// run's flag of that name would: an unknown key, a value of the wrong shape
// or type, a key given twice is an error naming the file, the line and the
// key. fs is run's whole flag set; nothing of it is set.
func readRunFile(fs *flag.FlagSet, path string) (*runFile, error) {
	keys := runKeys()
	isKey := func(name string) bool { return keys.Lookup(name) != nil }
	b, err := readLimited(path)
	if err != nil {
		return nil, usagef("-f: %v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		// The library's messages say "yaml: line N: ...".
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			return nil, usagef("%s:%s: %s", path, m[1], m[2])
		}
		return nil, usagef("%s: %s", path, msg)
	}
	rf := &runFile{path: path, set: map[string][]string{}, line: map[string]int{}}
	if doc.Kind == 0 { // an empty file
		return rf, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, usagef("%s:%d: a run file is a mapping of run's flags (without --) to their values, e.g. max-hours: 6", path, root.Line)
	}
	dir := filepath.Dir(path)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], deref(root.Content[i+1])
		at := fmt.Sprintf("%s:%d", path, k.Line)
		key := k.Value
		if k.Kind != yaml.ScalarNode {
			return nil, usagef("%s: a key is a flag's name, not a %s", at, kindName(k))
		}
		f := fs.Lookup(key)
		switch {
		case f != nil && isKey(key):
		case f != nil:
			return nil, usagef("%s: %s is not a run file's key: give --%s on the command line", at, key, key)
		default:
			return nil, usagef("%s: unknown key %q: a key is one of run's flags without -- (launch run -h lists them)%s", at, key, didYouMean(keys, key))
		}
		if first, dup := rf.line[key]; dup {
			return nil, usagef("%s: %s given twice (first at line %d)", at, key, first)
		}
		at = fmt.Sprintf("%s:%d", path, v.Line)
		vals, err := nodeValues(f, v)
		if err != nil {
			return nil, usagef("%s: %s: %v", at, key, err)
		}
		if isPath(f) {
			for j, s := range vals {
				if s != "" && !filepath.IsAbs(s) {
					vals[j] = filepath.Join(dir, s)
				}
			}
		}
		// Each value is checked on a flag of its own, so that a bad one
		// is refused here with its line.
		if err := checkValues(keys.Lookup(key), vals); err != nil {
			return nil, usagef("%s: %s: %v", at, key, err)
		}
		rf.set[key], rf.line[key] = vals, k.Line
	}
	return rf, nil
}

func readLimited(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxRunFile+1))
	if err == nil && len(b) > maxRunFile {
		err = fmt.Errorf("%s is larger than %d bytes: not a run file", path, maxRunFile)
	}
	return b, err
}

// deref follows a YAML alias (*name) to its node.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// nodeValues are the flag values that node v gives flag f: one for a
// scalar; for a repeatable flag, one per item of a list, or per NAME: VALUE
// of a mapping when its values are NAME=VALUE pairs.
func nodeValues(f *flag.Flag, v *yaml.Node) ([]string, error) {
	_, repeatable := f.Value.(flag.SliceValue)
	_, pairs := f.Value.(pairList)
	switch {
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
		return nil, errors.New("no value (write the flag's value, or leave the key out)")
	case v.Kind == yaml.ScalarNode:
		return []string{v.Value}, nil
	case v.Kind == yaml.SequenceNode && repeatable:
		var out []string
		for _, it := range v.Content {
			it = deref(it)
			if it.Kind != yaml.ScalarNode || it.ShortTag() == "!!null" {
				return nil, fmt.Errorf("line %d: an item is one value, not a %s", it.Line, kindName(it))
			}
			out = append(out, it.Value)
		}
		return out, nil
	case v.Kind == yaml.MappingNode && pairs:
		var out []string
		for i := 0; i+1 < len(v.Content); i += 2 {
			name, val := deref(v.Content[i]), deref(v.Content[i+1])
			if name.Kind != yaml.ScalarNode || val.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: want NAME: VALUE", name.Line)
			}
			out = append(out, name.Value+"="+val.Value)
		}
		return out, nil
	case repeatable && pairs:
		return nil, fmt.Errorf("want a value, a list of values or a mapping of NAME: VALUE, not a %s", kindName(v))
	case repeatable:
		return nil, fmt.Errorf("want a value or a list of values, not a %s", kindName(v))
	}
	return nil, fmt.Errorf("want one value (%s), not a %s", typeText(f), kindName(v))
}

// checkValues sets vals on f (a flag of runKeys), as the command line
// would, and says what is wrong with the first that does not take.
func checkValues(f *flag.Flag, vals []string) error {
	for _, s := range vals {
		err := f.Value.Set(s)
		switch {
		case err == nil:
		case typeText(f) != f.Value.Type():
			return fmt.Errorf("want %s, not %q", typeText(f), s) // strconv's words add nothing
		default:
			return fmt.Errorf("want %s, not %q: %v", typeText(f), s, err)
		}
	}
	return nil
}

// typeText says what a flag's value is, for a person.
func typeText(f *flag.Flag) string {
	switch t := f.Value.Type(); t {
	case "bool":
		return "true or false"
	case "int":
		return "a whole number"
	case "float64":
		return "a number"
	case "duration":
		return "a duration such as 90s, 30m or 2h"
	case "string", "stringArray":
		return "a string"
	default:
		return t
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		return "value"
	}
	return "YAML node"
}

// didYouMean names the key's closest run flag, when one is close.
func didYouMean(keys *flag.FlagSet, key string) string {
	best, bestD := "", 3
	keys.VisitAll(func(f *flag.Flag) {
		if d := editDistance(key, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// apply sets fs's flags to the file's values, but for those given on the
// command line (fs.Changed): the command line wins, a repeatable flag's
// values of the command line replacing the file's whole.
func (rf *runFile) apply(fs *flag.FlagSet) error {
	for key, vals := range rf.set {
		f := fs.Lookup(key)
		if f.Changed {
			continue
		}
		if err := setEach(f.Value.Set, vals); err != nil { // checked by readRunFile
			return usagef("%s:%d: %s: %v", rf.path, rf.line[key], key, err)
		}
	}
	return nil
}

// printRun writes the run fs holds as a run file: each of run's flags
// (isKey) with its value, in the order they are defined, the hidden ones
// only when set. A flag from the command line or left at its default says
// so in a comment. Secrets cannot show: a flag names a secret's variable,
// never its value.
func printRun(w io.Writer, fs *flag.FlagSet, rf *runFile) error {
	keys := runKeys()
	isKey := func(name string) bool { return keys.Lookup(name) != nil }
	if rf == nil {
		rf = &runFile{}
	}
	root := &yaml.Node{Kind: yaml.MappingNode}
	sorted := fs.SortFlags
	fs.SortFlags = false
	fs.VisitAll(func(f *flag.Flag) {
		_, inFile := rf.set[f.Name]
		if !isKey(f.Name) || (hiddenFlags[f.Name] && !inFile && !f.Changed) {
			return
		}
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: f.Name}
		v := valueNode(f)
		switch {
		case f.Changed:
			v.LineComment = "command line"
		case !inFile:
			v.LineComment = "default"
		}
		root.Content = append(root.Content, k, v)
	})
	fs.SortFlags = sorted
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root},
		HeadComment: "The run that launch run would start: a run file (launch run -f FILE) of every flag of run."}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// valueNode is a flag's value as YAML: a list for a repeatable flag, a
// scalar otherwise, quoted when YAML would read it as another type.
func valueNode(f *flag.Flag) *yaml.Node {
	abs := func(s string) string {
		if isPath(f) && s != "" {
			if a, err := filepath.Abs(s); err == nil {
				return a
			}
		}
		return s
	}
	if sv, ok := f.Value.(flag.SliceValue); ok {
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range slices.Clone(sv.GetSlice()) {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
		}
		return n
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: abs(f.Value.String())}
	switch f.Value.Type() {
	case "bool", "int", "float64":
	default:
		n.Tag = "!!str"
	}
	return n
}
