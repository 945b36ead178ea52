package podssh

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// untarScript unpacks the tar stream on standard input into $1, which it
// creates. Ownership is root's in the headers, so tar running as root keeps
// it sane without GNU-only flags.
const untarScript = `mkdir -p "$1" && cd "$1" && tar -xf -`

// Upload copies the local directory dir into remoteDir on the pod (created
// when missing), as one tar stream over a session: regular files,
// directories and symbolic links, with their permission bits.
func (c *Conn) Upload(ctx context.Context, dir, remoteDir string) error {
	return c.UploadTar(ctx, remoteDir, func(tw *tar.Writer) error { return AddTree(tw, dir, "") })
}

// UploadTar unpacks into remoteDir (created when missing) the tar stream
// that write makes, as one session.
func (c *Conn) UploadTar(ctx context.Context, remoteDir string, write func(*tar.Writer) error) error {
	pr, pw := io.Pipe()
	local := make(chan error, 1)
	go func() {
		tw := tar.NewWriter(pw)
		err := write(tw)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
		local <- err
	}()
	var errb bytes.Buffer
	gctx, in, stop := c.guardStall(ctx, pr)
	defer stop()
	err := c.Run(gctx, Command(untarScript, remoteDir), in, nil, &errb)
	pr.Close()
	if serr := stalled(gctx); serr != nil && ctx.Err() == nil {
		<-local
		return fmt.Errorf("podssh: upload to %s: %w", remoteDir, serr)
	}
	// A local failure cuts the stream short, and the remote tar then
	// complains about it: the local error is the one that explains.
	if lerr := <-local; lerr != nil && !errors.Is(lerr, io.ErrClosedPipe) {
		return fmt.Errorf("podssh: upload to %s: %w", remoteDir, lerr)
	}
	if err != nil {
		return fmt.Errorf("podssh: upload to %s: %w", remoteDir, commandError(err, errb.Bytes()))
	}
	return nil
}

// WriteTar writes dir's tree to w as a tar stream, names relative to dir.
func WriteTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	if err := AddTree(tw, dir, ""); err != nil {
		return err
	}
	return tw.Close()
}

// AddFile adds one regular file to a tar stream, owned by root.
func AddFile(tw *tar.Writer, name string, content []byte, mode fs.FileMode) error {
	h := &tar.Header{
		Name: name, Mode: int64(mode.Perm()), Size: int64(len(content)), Typeflag: tar.TypeReg,
		Uname: "root", Gname: "root", ModTime: time.Now(), Format: tar.FormatPAX,
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := tw.Write(content)
	return err
}

// AddTree adds dir's tree to a tar stream under prefix (a directory name
// ending in "/", or "" for the top): regular files, directories and
// symbolic links. Anything else is an error: a socket or a device has no
// place in a job's directory.
func AddTree(tw *tar.Writer, dir, prefix string) error { return addTree(tw, dir, prefix, nil) }

// addTree is AddTree telling add (when not nil) each chunk of file
// content it sent.
func addTree(tw *tar.Writer, dir, prefix string, add func(int64)) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." && prefix == "" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case info.Mode().IsRegular(), info.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a regular file, directory or symbolic link", p)
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = strings.TrimSuffix(prefix+filepath.ToSlash(rel), "/.")
		if rel == "." {
			h.Name = prefix
		} else if info.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "root", "root"
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, counting{f, add})
		return err
	})
}
