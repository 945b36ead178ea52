package podssh

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// untarScript unpacks the tar stream on standard input into $1, which it
// creates. Ownership is root's in the headers, so tar running as root keeps
// it sane without GNU-only flags.
const untarScript = `mkdir -p "$1" && cd "$1" && tar -xf -`

// tarMark starts the download's stream: what a login shell's rc file may
// print before the script runs is skipped up to it.
const tarMark = "OVERBRAINER_TAR_STREAM\n"

// tarScript writes tarMark, then a tar stream of the names (after $1,
// relative to the directory $1) that exist; no stream when none does.
const tarScript = `dir=$1
shift
cd "$dir" || exit 1
n=$#
while [ "$n" -gt 0 ]; do
  f=$1
  shift
  if [ -e "$f" ]; then set -- "$@" "$f"; fi
  n=$((n - 1))
done
printf 'OVERBRAINER_TAR_STREAM\n'
[ "$#" -gt 0 ] || exit 0
exec tar -cf - "$@"`

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
	gctx, in, stop := guardStall(ctx, pr)
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
func AddTree(tw *tar.Writer, dir, prefix string) error {
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
		_, err = io.Copy(tw, f)
		return err
	})
}

// Download copies the names (relative to remoteDir; missing ones are
// skipped) from the pod into the local directory dir, created 0700 when
// missing. It returns what ExtractTar extracted.
func (c *Conn) Download(ctx context.Context, remoteDir string, names []string, dir string) (Extracted, error) {
	for _, n := range names {
		if n == "" || strings.HasPrefix(n, "-") || strings.HasPrefix(n, "/") {
			return Extracted{}, fmt.Errorf("podssh: download: bad name %q", n)
		}
	}
	// A failed extraction stops reading: the session is then closed, or the
	// remote tar would block on a full window for ever.
	outer := ctx
	pr, pw := io.Pipe()
	ctx, in, stop := guardStall(ctx, pr)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errb bytes.Buffer
	done := make(chan error, 1)
	go func() {
		err := c.Run(ctx, Command(tarScript, append([]string{remoteDir}, names...)...), nil, pw, &errb)
		if err != nil {
			pw.CloseWithError(errRemote)
		} else {
			pw.Close()
		}
		done <- err
	}()
	got, xerr := extractAfterMark(in, dir)
	if xerr != nil {
		cancel()
		pr.CloseWithError(errors.New("podssh: extraction stopped"))
	} else {
		// tar pads its stream past the end-of-archive marker.
		_, _ = io.Copy(io.Discard, pr)
	}
	runErr := <-done
	switch serr := stalled(ctx); {
	case serr != nil && outer.Err() == nil:
		return got, fmt.Errorf("podssh: download from %s: %w", remoteDir, serr)
	case xerr != nil && !errors.Is(xerr, errRemote):
		return got, fmt.Errorf("podssh: download from %s: %w", remoteDir, xerr)
	case runErr != nil:
		return got, fmt.Errorf("podssh: download from %s: %w", remoteDir, commandError(runErr, errb.Bytes()))
	}
	return got, nil
}

// errRemote ends the local side of a download whose remote side failed; the
// remote error is the one reported.
var errRemote = errors.New("podssh: the remote tar failed")

// extractAfterMark skips the stream up to tarMark, then extracts the rest.
func extractAfterMark(r io.Reader, dir string) (Extracted, error) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line == tarMark {
			return ExtractTar(br, dir)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream ended before its start mark")
			}
			return Extracted{}, err
		}
	}
}

// Extracted counts what ExtractTar wrote, and what it refused.
type Extracted struct {
	Files, Dirs int
	Bytes       int64
	// Skipped names entries that were not written: links (which could
	// point a later entry outside the directory), devices and the like.
	Skipped []string
}

// ExtractTar unpacks a tar stream into dir, created 0700 when missing. Only
// regular files and directories are written; a name that would leave dir
// is an error. An empty stream is no error.
func ExtractTar(r io.Reader, dir string) (Extracted, error) {
	var got Extracted
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return got, err
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return got, fmt.Errorf("tar entry %q leaves the directory", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		perm := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, perm|0o700); err != nil {
				return got, err
			}
			got.Dirs++
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
				return got, err
			}
			n, err := writeFile(target, tr, perm|0o600)
			got.Bytes += n
			if err != nil {
				return got, err
			}
			got.Files++
		default:
			got.Skipped = append(got.Skipped, name)
		}
	}
}

// writeFile replaces target with r's content. An existing symbolic link at
// target is replaced, never followed.
func writeFile(target string, r io.Reader, perm fs.FileMode) (int64, error) {
	if fi, err := os.Lstat(target); err == nil && !fi.Mode().IsRegular() {
		if err := os.RemoveAll(target); err != nil {
			return 0, err
		}
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscallNoFollow, perm)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}
