package podssh

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
)

// Stream is a remote command running with its standard input and output
// open: a conversation with the pod over one session.
type Stream struct {
	s   sessionCloser
	In  io.WriteCloser
	Out io.Reader

	mu     sync.Mutex
	stderr bytes.Buffer

	// done closes when the command ended (its session closed), with
	// the session's end in err.
	done chan struct{}
	err  error
}

type sessionCloser interface {
	Close() error
	Wait() error
}

// Stream starts cmd in a new session and returns its streams. ctx bounds
// the start: once started, the stream is the caller's to Close, and ctx's
// end no longer touches it (as with net.Dialer.DialContext).
func (c *Conn) Stream(ctx context.Context, cmd string) (*Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := c.newSession(ctx)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	st := &Stream{s: s, done: make(chan struct{})}
	if st.In, err = s.StdinPipe(); err != nil {
		s.Close()
		return nil, fmt.Errorf("podssh: %w", err)
	}
	if st.Out, err = s.StdoutPipe(); err != nil {
		s.Close()
		return nil, fmt.Errorf("podssh: %w", err)
	}
	s.Stderr = (*lockedTail)(st)
	if err := s.Start(cmd); err != nil {
		s.Close()
		return nil, fmt.Errorf("podssh: starting a stream: %w", err)
	}
	if !stop() {
		// ctx ended while the session started, and closed it.
		return nil, ctx.Err()
	}
	go func() {
		st.err = s.Wait()
		close(st.done)
	}()
	return st, nil
}

// lockedTail keeps the end of a stream's stderr.
type lockedTail Stream

func (t *lockedTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stderr.Write(p)
	if over := t.stderr.Len() - maxStderr; over > 0 {
		t.stderr.Next(over)
	}
	return len(p), nil
}

// Wait waits for the command to end once its output is read to the end. A
// non-zero exit is a *CommandError with the end of standard error.
func (st *Stream) Wait() error {
	<-st.done
	st.mu.Lock()
	defer st.mu.Unlock()
	return commandError(st.err, st.stderr.Bytes())
}

// Done is closed when the command ended, without a read of its output: a
// conversation between two turns learns at once that its pod is gone.
func (st *Stream) Done() <-chan struct{} { return st.done }

// Close ends the conversation: end of input, then the session.
func (st *Stream) Close() error {
	st.In.Close()
	return st.s.Close()
}
