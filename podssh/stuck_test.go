package podssh

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// frozenConn stops reading once frozen: the server then answers nothing
// more, yet the connection stays up.
type frozenConn struct {
	net.Conn
	frozen chan struct{}
	closed chan struct{} // closed when the test ends
	once   sync.Once
}

func (c *frozenConn) freeze() { c.once.Do(func() { close(c.frozen) }) }

func (c *frozenConn) Read(b []byte) (int, error) {
	select {
	case <-c.frozen:
		<-c.closed
		return 0, io.EOF
	default:
	}
	return c.Conn.Read(b)
}

// testServer is an SSH server (x/crypto's) on 127.0.0.1 that takes the
// client's key and hands each connection to serve, in a goroutine of its
// own; the connections close when the test ends.
func testServer(t *testing.T, host, client *Key, serve func(nc net.Conn, cfg *ssh.ServerConfig)) string {
	t.Helper()
	signer, err := host.Signer()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if string(k.Marshal()) != string(client.Public.Marshal()) {
				return nil, errors.New("unknown key")
			}
			return nil, nil
		},
	}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { nc.Close() })
			go serve(nc, cfg)
		}
	}()
	return ln.Addr().String()
}

// stuckServer is an SSH server that accepts a session and its command,
// then reads nothing more: neither the command's end nor the session's
// close ever get an answer, the case a session close alone cannot end.
func stuckServer(t *testing.T, host, client *Key) string {
	return testServer(t, host, client, func(nc net.Conn, cfg *ssh.ServerConfig) {
		fc := &frozenConn{Conn: nc, frozen: make(chan struct{}), closed: make(chan struct{})}
		t.Cleanup(func() { close(fc.closed) })
		_, chans, reqs, err := ssh.NewServerConn(fc, cfg)
		if err != nil {
			return
		}
		go ssh.DiscardRequests(reqs)
		for nch := range chans {
			ch, creqs, err := nch.Accept()
			if err != nil {
				continue
			}
			go func() {
				for r := range creqs {
					// Accept exec, then nothing: no output,
					// no exit status, no close.
					if r.Type == "exec" {
						fc.freeze()
					}
					r.Reply(r.Type == "exec", nil)
				}
				_ = ch
			}()
		}
	})
}

func TestRunAbandonsAStuckSession(t *testing.T) {
	client, host := keys(t)
	addr := stuckServer(t, host, client)
	defer func(d time.Duration) { abandonAfter = d }(abandonAfter)
	abandonAfter = 200 * time.Millisecond
	c, err := Dial(context.Background(), Target{Addr: addr, Key: client, HostKey: host.Public})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, "true", nil, nil, nil) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run stayed stuck after its context ended")
	}
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the connection of an abandoned session stayed open")
	}
}

// An upload or a download over a connection that stopped moving bytes
// ends with ErrStalled, not never; a caller's own deadline still reads as
// its own.
func TestTransfersEndWhenNothingMoves(t *testing.T) {
	client, host := keys(t)
	addr := stuckServer(t, host, client)
	defer func(d time.Duration) { abandonAfter = d }(abandonAfter)
	abandonAfter = 200 * time.Millisecond
	stallAfter := 300 * time.Millisecond
	dialStuck := func() *Conn {
		c, err := Dial(context.Background(), Target{Addr: addr, Key: client, HostKey: host.Public, StallAfter: stallAfter})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	within := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			t.Fatalf("%s stayed stuck", what)
			return nil
		}
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := within("the upload", func() error { return dialStuck().Upload(context.Background(), src, "/nonexistent/up") })
	if !errors.Is(err, ErrStalled) {
		t.Errorf("upload to a frozen server = %v, want ErrStalled", err)
	}
	err = within("the download", func() error {
		_, err := dialStuck().Download(context.Background(), DownloadRequest{RemoteDir: "/nonexistent", Names: []string{"x"}, Dir: t.TempDir()})
		return err
	})
	if !errors.Is(err, ErrStalled) {
		t.Errorf("download from a frozen server = %v, want ErrStalled", err)
	}
	// The caller's deadline, shorter than a stall, is the error.
	stallAfter = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = within("the upload", func() error { return dialStuck().Upload(ctx, src, "/nonexistent/up") })
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrStalled) {
		t.Errorf("upload past its deadline = %v, want the deadline", err)
	}
}

// silentChannelServer answers the connection's keepalives but never a
// channel open: a session's open waits for an answer that never comes.
func silentChannelServer(t *testing.T, host, client *Key) string {
	return testServer(t, host, client, func(nc net.Conn, cfg *ssh.ServerConfig) {
		_, _, reqs, err := ssh.NewServerConn(nc, cfg)
		if err != nil {
			return
		}
		// Requests are answered; channels are never taken.
		for r := range reqs {
			r.Reply(true, nil)
		}
	})
}

// A session whose open the server never answers ends with its context,
// for every way of opening one; the connection stays for other sessions.
func TestSessionOpenHonoursContext(t *testing.T) {
	client, host := keys(t)
	addr := silentChannelServer(t, host, client)
	opens := map[string]func(context.Context, *Conn) error{
		"Run": func(ctx context.Context, c *Conn) error { return c.Run(ctx, "true", nil, nil, nil) },
		"Stream": func(ctx context.Context, c *Conn) error {
			_, err := c.Stream(ctx, "true")
			return err
		},
		"Shell": func(ctx context.Context, c *Conn) error { return c.Shell(ctx, ShellOptions{Command: "true"}) },
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			c, err := Dial(context.Background(), Target{Addr: addr, Key: client, HostKey: host.Public})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- open(ctx, c) }()
			select {
			case err := <-done:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("%s = %v, want the context's end", name, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s stayed waiting for the session's open after its context ended", name)
			}
		})
	}
}
