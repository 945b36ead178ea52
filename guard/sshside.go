package guard

import (
	"archive/tar"
	"context"
	"io"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podssh"
)

// conn is the Run's SSH side: one connection to the pod (a *podssh.Conn,
// or a fake in the tests).
type conn interface {
	// Watch starts the long-lived look at the run directory.
	Watch(ctx context.Context, runDir string) (watcher, error)
	Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) error
	Output(ctx context.Context, cmd string, stdin io.Reader) ([]byte, error)
	UploadTar(ctx context.Context, remoteDir string, write func(*tar.Writer) error) error
	Download(ctx context.Context, req podssh.DownloadRequest) (podssh.Extracted, error)
	Done() <-chan struct{}
	Close() error
}

// watcher is a jobctl.Watcher.
type watcher interface {
	Poll(ctx context.Context, offset int64, touchLease bool, max int) (jobctl.State, []byte, error)
	Put(ctx context.Context, name, value string) error
	Close()
	Done() <-chan struct{} // closed when the session ended
}

type dialFunc func(ctx context.Context, t podssh.Target) (conn, error)

// sshConn is a real connection. tap, a test seam, sees a download's
// stream before it is extracted (to corrupt it in transit).
type sshConn struct {
	*podssh.Conn
	tap func(io.Reader) io.Reader
}

func (c sshConn) Watch(ctx context.Context, runDir string) (watcher, error) {
	return jobctl.Watch(ctx, c.Conn, runDir)
}

func (c sshConn) Download(ctx context.Context, req podssh.DownloadRequest) (podssh.Extracted, error) {
	if c.tap == nil {
		return c.Conn.Download(ctx, req)
	}
	var got podssh.Extracted
	err := c.Fetch(ctx, req, func(r io.Reader) error {
		var err error
		got, err = podssh.Extract(c.tap(r), req)
		return err
	})
	return got, err
}

func dialSSH(ctx context.Context, t podssh.Target) (conn, error) {
	c, err := podssh.Dial(ctx, t)
	if err != nil {
		return nil, err
	}
	return sshConn{Conn: c}, nil
}
