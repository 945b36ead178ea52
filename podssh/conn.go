package podssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/termtext"

	"golang.org/x/crypto/ssh"
)

// ErrHostKeyMismatch is the dial error when the server's host key is not the
// pinned one: the server is not the run's pod, and nothing is sent to it.
var ErrHostKeyMismatch = errors.New("podssh: the server's host key is not the run's host key")

// Target says where and as whom to connect.
type Target struct {
	// Addr is host:port.
	Addr string
	// User defaults to root, the user of Runpod's images.
	User string
	// Key authenticates the client.
	Key *Key
	// HostKey is the only host key accepted.
	HostKey ssh.PublicKey
	// Timeout bounds the TCP connect and the handshake; 0 means 30s.
	Timeout time.Duration
	// KeepAlive is the interval of the keepalive requests that notice a dead
	// connection; 0 means 15s.
	KeepAlive time.Duration
	// StallAfter is how long an upload or a download may go without
	// moving a byte before it ends with ErrStalled; 0 means 2 minutes. It
	// is generous: a remote tar writing a full SSH window to a slow disk
	// moves nothing for a while.
	StallAfter time.Duration
}

// Conn is an SSH connection to a pod. Its methods are safe for concurrent
// use; each command runs in its own session.
type Conn struct {
	client     *ssh.Client
	done       chan struct{}
	once       sync.Once
	stallAfter time.Duration // Target.StallAfter; 0: defaultStallAfter
}

// Dial connects to the target, checking that the server presents exactly
// the pinned host key. A mismatch returns an error wrapping
// ErrHostKeyMismatch.
func Dial(ctx context.Context, t Target) (*Conn, error) {
	if t.Key == nil || t.HostKey == nil {
		return nil, errors.New("podssh: a Target needs Key and HostKey")
	}
	user := t.User
	if user == "" {
		user = "root"
	}
	timeout := t.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	signer, err := t.Key.Signer()
	if err != nil {
		return nil, err
	}
	pinned := t.HostKey.Marshal()
	cfg := &ssh.ClientConfig{
		User: user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if !bytes.Equal(key.Marshal(), pinned) {
				return ErrHostKeyMismatch
			}
			return nil
		},
		// Ask for the pinned key's type only, so that a server with
		// several host keys shows the one we can check.
		HostKeyAlgorithms: []string{t.HostKey.Type()},
		Timeout:           timeout,
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, fmt.Errorf("podssh: %w", err)
	}
	// The handshake does not take a context: a deadline on the socket and
	// closing it on cancel bound it instead.
	_ = nc.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(nc, t.Addr, cfg)
	stopped := stop()
	if err != nil {
		nc.Close()
		if errors.Is(err, ErrHostKeyMismatch) {
			return nil, fmt.Errorf("podssh: %s: %w", t.Addr, ErrHostKeyMismatch)
		}
		if !stopped && ctx.Err() != nil {
			return nil, fmt.Errorf("podssh: %s: %w", t.Addr, ctx.Err())
		}
		return nil, fmt.Errorf("podssh: %s: %w", t.Addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	c := &Conn{client: ssh.NewClient(sc, chans, reqs), done: make(chan struct{}), stallAfter: t.StallAfter}
	every := t.KeepAlive
	if every == 0 {
		every = 15 * time.Second
	}
	go c.keepAlive(every)
	return c, nil
}

// keepAlive closes the connection when the server stops answering, so that
// a command waiting on a dead network fails instead of hanging.
func (c *Conn) keepAlive(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		go func() {
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		select {
		case <-c.done:
			return
		case err := <-answered:
			if err != nil {
				c.Close()
				return
			}
		case <-time.After(3 * every):
			c.Close()
			return
		}
	}
}

// Close closes the connection.
func (c *Conn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.done)
		err = c.client.Close()
	})
	return err
}

// Done is closed once the connection is closed, by Close or because the
// server stopped answering.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Run runs cmd in a new session with the given streams (nil ones are
// empty or discarded). It returns an *ssh.ExitError when the command exits
// non-zero, and ctx's error when ctx ends first (the session is closed).
func (c *Conn) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) error {
	s, err := c.newSession(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	s.Stdin, s.Stdout, s.Stderr = stdin, stdout, stderr
	return c.wait(ctx, s, func() error { return s.Start(cmd) })
}

// newSession opens a session, waiting for the server's answer no longer
// than ctx: x/crypto's NewSession takes no context, and a server that
// never answers an open (a wedged sshd, a frozen pod) would hold its
// caller for ever. A session that opens after ctx ended is closed.
func (c *Conn) newSession(ctx context.Context) (*ssh.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type opened struct {
		s   *ssh.Session
		err error
	}
	got := make(chan opened)
	abandoned := make(chan struct{})
	go func() {
		s, err := c.client.NewSession()
		select {
		case got <- opened{s, err}:
		case <-abandoned:
			if err == nil {
				s.Close()
			}
		}
	}()
	select {
	case o := <-got:
		if o.err != nil {
			return nil, fmt.Errorf("podssh: new session: %w", o.err)
		}
		return o.s, nil
	case <-ctx.Done():
		close(abandoned)
		// The open may have been answered just as ctx ended.
		select {
		case o := <-got:
			if o.err == nil {
				o.s.Close()
			}
		default:
		}
		return nil, fmt.Errorf("podssh: new session: %w", ctx.Err())
	}
}

// wait starts the session and waits for it to end, closing it when ctx
// ends first (ctx's error is returned then).
func (c *Conn) wait(ctx context.Context, s *ssh.Session, start func() error) error {
	done := make(chan struct{})
	defer close(done)
	stop := context.AfterFunc(ctx, func() {
		s.Close()
		// Closing a session only asks the server to close it: when the
		// server does not answer, the connection goes, which ends every
		// wait on it.
		select {
		case <-done:
		case <-time.After(abandonAfter):
			c.Close()
		}
	})
	defer stop()
	err := start()
	if err == nil {
		err = s.Wait()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// abandonAfter is how long Run waits for a session it closed on a done
// context before it closes the whole connection.
var abandonAfter = 10 * time.Second

// CommandError is a command's non-zero exit, with the end of what it wrote
// on standard error.
type CommandError struct {
	Status int
	Stderr string
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("podssh: remote command exited %d", e.Status)
	if e.Stderr != "" {
		// The pod wrote it: it may hold terminal escapes.
		msg += ": " + termtext.Escape(e.Stderr, false)
	}
	return msg
}

// maxStderr bounds the stderr kept in a CommandError.
const maxStderr = 2048

// Output runs cmd and returns its standard output. A non-zero exit is a
// *CommandError carrying the tail of standard error.
func (c *Conn) Output(ctx context.Context, cmd string, stdin io.Reader) ([]byte, error) {
	var out, errb bytes.Buffer
	err := c.Run(ctx, cmd, stdin, &out, &errb)
	return out.Bytes(), commandError(err, errb.Bytes())
}

func commandError(err error, stderr []byte) error {
	var exit *ssh.ExitError
	if !errors.As(err, &exit) {
		return err
	}
	text := strings.TrimSpace(string(stderr))
	if len(text) > maxStderr {
		text = "..." + text[len(text)-maxStderr:]
	}
	return &CommandError{Status: exit.ExitStatus(), Stderr: text}
}

// Quote quotes s for a POSIX shell: single quotes, with each ' as '\”.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Command is the remote command line that runs script with sh, whatever the
// user's login shell is, with args as $1, $2, ... The script and the args
// are visible in the pod's process list: never put a secret there.
func Command(script string, args ...string) string {
	var b strings.Builder
	b.WriteString("sh -c ")
	b.WriteString(Quote(script))
	b.WriteString(" sh")
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(Quote(a))
	}
	return b.String()
}
