package guard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// minRedacted is the shortest value redacted: a shorter one would blank
// out common words of the log and hide nothing worth hiding.
const minRedacted = 6

// redacted stands where a secret's value was.
const redacted = "[REDACTED]"

// redactor holds the values of the job's secrets, to keep them out of what
// a Run writes whoever printed them (the job with set -x, a traceback):
// the pod's log (WithPodLog), the job's output that Follow streams, and
// the logs Collect and CollectSoFar bring back. Safe for concurrent use.
type redactor struct {
	mu      sync.Mutex
	secrets []string
}

// redacting is the Run's redactor, holding the values of every secret it
// was given (Spec, WithSecrets, Start).
func (r *Run) redacting() *redactor {
	if r.red == nil {
		r.red = &redactor{}
	}
	for _, v := range r.cfg.secrets {
		r.red.addSecret(v)
	}
	return r.red
}

// addSecret redacts s, and each line of it on its own: a log is written a
// line at a time, so a value of many lines (a JSON credential) may never
// appear whole.
func (p *redactor) addSecret(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range append([]string{s}, strings.Split(s, "\n")...) {
		if v = strings.TrimSpace(v); len(v) >= minRedacted && !slices.Contains(p.secrets, v) {
			p.secrets = append(p.secrets, v)
		}
	}
	// The longest first, so that a value within another is not redacted
	// first and leaves the rest of the longer one.
	slices.SortFunc(p.secrets, func(a, b string) int { return len(b) - len(a) })
}

func (p *redactor) redact(s string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, sec := range p.secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	return s
}

func (p *redactor) empty() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.secrets) == 0
}

// pending is the length of the longest end of s that begins a secret
// without being one: the rest of it may come with the next read.
func (p *redactor) pending(s string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, sec := range p.secrets {
		for k := min(len(sec)-1, len(s)); k > n; k-- {
			if strings.HasSuffix(s, sec[:k]) {
				n = k
				break
			}
		}
	}
	return n
}

// redactWriter writes a stream to w with the secrets redacted, a value
// split across two writes included: an end of the stream that may begin
// one is held back until the next write, or Flush.
type redactWriter struct {
	w    io.Writer
	red  *redactor
	tail string
}

func (rw *redactWriter) Write(b []byte) (int, error) {
	s := rw.red.redact(rw.tail + string(b))
	keep := rw.red.pending(s)
	rw.tail = s[len(s)-keep:]
	if _, err := io.WriteString(rw.w, s[:len(s)-keep]); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Flush writes what was held back: the stream ended without the rest of
// a secret.
func (rw *redactWriter) Flush() error {
	s := rw.tail
	rw.tail = ""
	_, err := io.WriteString(rw.w, s)
	return err
}

// flush is Flush at the end of the job's output, as Follow tells it.
func (rw *redactWriter) flush() error {
	if err := rw.Flush(); err != nil {
		return fmt.Errorf("writing the job's output: %w", err)
	}
	return nil
}

// redactFiles redacts the secrets from the downloaded logs under dir, in
// place; a log that cannot be redacted is removed rather than kept with a
// secret in it.
func (r *Run) redactFiles(dir string, names []string) {
	red := r.redacting()
	if red.empty() {
		return
	}
	for _, name := range names {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := redactFile(path, red); err != nil {
			r.warn(fmt.Errorf("redacting the job's secrets from %s: %w; it is removed", path, errors.Join(err, os.Remove(path))))
		}
	}
}

// redactFile rewrites the file at path with the secrets redacted; a file
// that is not there is left so.
func redactFile(path string, red *redactor) error {
	in, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.CreateTemp(filepath.Dir(path), ".redact-*")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	rw := &redactWriter{w: out, red: red}
	_, err = io.Copy(rw, in)
	err = errors.Join(err, rw.Flush(), out.Chmod(fi.Mode().Perm()), out.Close())
	if err != nil {
		return err
	}
	return os.Rename(out.Name(), path)
}
