package podssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"
)

// WindowSize is a terminal's size in characters.
type WindowSize struct{ Width, Height int }

// ShellOptions says what Shell runs, and with which streams (nil ones are
// empty or discarded).
type ShellOptions struct {
	// Command runs instead of the login shell when it is set: a command
	// line for the remote user's shell, as Run takes it.
	Command string
	// Term asks for a PTY of this terminal type (e.g. "xterm-256color"):
	// an interactive session, its output and errors merged as on a
	// terminal. Empty: no PTY, the streams kept apart.
	Term string
	// Size is the PTY's size to begin with (80x24 when zero); each value
	// received from Resize then changes it.
	Size   WindowSize
	Resize <-chan WindowSize
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Shell runs an interactive session (the login shell, or o.Command), with
// a PTY when o.Term is set. It returns once the remote side has exited: a
// non-zero exit is a *CommandError with its status (128+n for a signal),
// and ctx's end closes the session and returns ctx's error.
func (c *Conn) Shell(ctx context.Context, o ShellOptions) error {
	s, err := c.newSession(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	s.Stdin, s.Stdout, s.Stderr = o.Stdin, o.Stdout, o.Stderr
	if o.Term != "" {
		size := o.Size
		if size.Width <= 0 || size.Height <= 0 {
			size = WindowSize{Width: 80, Height: 24}
		}
		modes := ssh.TerminalModes{ssh.ECHO: 1, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}
		if err := s.RequestPty(o.Term, size.Height, size.Width, modes); err != nil {
			return fmt.Errorf("podssh: asking for a PTY: %w", err)
		}
	}
	if o.Resize != nil {
		ended := make(chan struct{})
		defer close(ended)
		go followSize(s, o.Resize, ended)
	}
	err = c.wait(ctx, s, func() error {
		if o.Command == "" {
			return s.Shell()
		}
		return s.Start(o.Command)
	})
	var exit *ssh.ExitError
	if errors.As(err, &exit) {
		return &CommandError{Status: exit.ExitStatus()}
	}
	return err
}

// followSize passes each new size on to the session's PTY until the
// session ends.
func followSize(s *ssh.Session, sizes <-chan WindowSize, ended <-chan struct{}) {
	for {
		select {
		case <-ended:
			return
		case size, ok := <-sizes:
			if !ok {
				return
			}
			if size.Width > 0 && size.Height > 0 {
				_ = s.WindowChange(size.Height, size.Width)
			}
		}
	}
}

// JoinArgs is the command line that runs argv as it is, each word quoted
// for the remote shell; empty for no argv.
func JoinArgs(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// ExitStatus is the remote exit status an error of Shell or Output
// carries, and whether it carries one.
func ExitStatus(err error) (int, bool) {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.Status, true
	}
	return 0, false
}
