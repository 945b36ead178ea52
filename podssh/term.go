//go:build unix

package podssh

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// IsTerminal says f is a terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// AttachTerminal makes o an interactive session on this program's
// terminal f: a PTY of type $TERM (xterm when unset) of f's size that
// follows f's size changes (SIGWINCH), and f in raw mode, so that what is
// typed, Ctrl-C included, goes to the pod as it is. o's streams that are
// nil become f. Call restore once the session ended: it puts the terminal
// back as it was.
//
// A program without a terminal (a notebook's kernel, a pipe) has no PTY
// to give: it runs commands with Shell without Term, or Exec.
func AttachTerminal(f *os.File, o *ShellOptions) (restore func(), err error) {
	fd := int(f.Fd())
	if !term.IsTerminal(fd) {
		return nil, errors.New("podssh: not a terminal")
	}
	size := func() WindowSize {
		w, h, _ := term.GetSize(fd)
		return WindowSize{Width: w, Height: h}
	}
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, err
	}
	o.Term = os.Getenv("TERM")
	if o.Term == "" {
		o.Term = "xterm"
	}
	o.Size = size()
	if o.Stdin == nil {
		o.Stdin = f
	}
	if o.Stdout == nil {
		o.Stdout = f
	}
	if o.Stderr == nil {
		o.Stderr = f
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	sizes, done := make(chan WindowSize, 1), make(chan struct{})
	o.Resize = sizes
	go func() {
		defer close(sizes)
		for {
			select {
			case <-done:
				return
			case <-winch:
			}
			select {
			case sizes <- size():
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
		_ = term.Restore(fd, old)
	}, nil
}
