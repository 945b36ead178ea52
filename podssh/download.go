package podssh

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/overbrainer/overbrainer-go/internal/termtext"
)

// DownloadRequest says what Download brings back from the pod.
type DownloadRequest struct {
	// RemoteDir is the directory on the pod the names are relative to.
	RemoteDir string
	// Names are what is fetched (files or directories, one path element
	// each or more; missing ones are skipped). Nothing else is written.
	Names []string
	// Exclude are base-name globs (as find -name and tar --exclude read
	// them) of files and directories kept on the pod.
	Exclude []string
	// Dir is the local directory, created 0700 when missing.
	Dir string
	// MaxBytes caps the bytes of the files written; 0 means no cap.
	MaxBytes int64
	// Progress, when set, is told the bytes written so far, of the total
	// the pod counted before it sent them.
	Progress Progress
	// Growing are files (paths as in Names) that may grow while they are
	// sent, such as a running job's log: they are written as they came,
	// unchecked, since the pod's checksum of them is stale at once.
	Growing []string
}

func (q DownloadRequest) check() error {
	if len(q.Names) == 0 {
		return errors.New("podssh: download: no names")
	}
	for _, n := range q.Names {
		if n == "" || strings.HasPrefix(n, "-") || strings.HasPrefix(n, "/") || n == ".." || strings.HasPrefix(n, "../") {
			return fmt.Errorf("podssh: download: bad name %q", n)
		}
	}
	for _, n := range q.Growing {
		if n == "" || path.IsAbs(n) || path.Clean(n) != n || n == ".." || strings.HasPrefix(n, "../") {
			return fmt.Errorf("podssh: download: growing file %q is not a clean relative path", n)
		}
	}
	for _, p := range q.Exclude {
		if p == "" || strings.ContainsAny(p, "/\n\x00") {
			return fmt.Errorf("podssh: download: exclude pattern %q is not a base-name glob", p)
		}
	}
	if q.MaxBytes < 0 {
		return fmt.Errorf("podssh: download: MaxBytes %d is negative", q.MaxBytes)
	}
	return nil
}

// tarMark starts the download's stream: what a login shell's rc file may
// print before the script runs is skipped up to it.
const tarMark = "OVERBRAINER_TAR_STREAM\n"

// tarScript runs in the directory $1 with the names, "--", then the
// exclude patterns. It writes tarMark, the manifest's header
// ("OVERBRAINER_MANIFEST sha256|busybox|none LENGTH [TOTAL]", TOTAL the
// bytes of the files it sends, when wc and awk could count them), the manifest (what
// sha256sum prints for each file that is sent, LENGTH bytes) and a
// newline, then a tar stream of the names that exist (none when none
// does). The manifest is kept in a temporary file, never in a variable:
// some shells do not hold arbitrary bytes.
const tarScript = `LC_ALL=C
export LC_ALL
dir=$1
shift
cd "$dir" || exit 1
n=$#
found=0
pats=0
while [ "$n" -gt 0 ]; do
  f=$1
  shift
  n=$((n - 1))
  if [ "$pats" = 1 ]; then
    set -- "$@" "--exclude=$f"
  elif [ "$f" = -- ]; then
    pats=1
    set -- "$@" --
  elif [ -e "$f" ]; then
    found=$((found + 1))
    set -- "$@" "$f"
  fi
done
if command -v sha256sum >/dev/null 2>&1; then
  algo=sha256
elif command -v busybox >/dev/null 2>&1 && busybox sha256sum </dev/null >/dev/null 2>&1; then
  algo=busybox
else
  algo=none
fi
sums() {
  m=$#
  first=1
  while [ "$m" -gt 0 ]; do
    a=$1
    shift
    m=$((m - 1))
    case $a in
    --) ;;
    --exclude=*)
      if [ "$first" = 1 ]; then
        set -- "$@" "(" -name "${a#--exclude=}"
        first=0
      else
        set -- "$@" -o -name "${a#--exclude=}"
      fi
      ;;
    *) set -- "$@" "$a" ;;
    esac
  done
  [ "$first" = 1 ] || set -- "$@" ")" -prune -o
  case $tool in
  sha256) find "$@" -type f -exec sha256sum {} + ;;
  busybox) find "$@" -type f -exec busybox sha256sum {} + ;;
  size) find "$@" -type f -exec wc -c /dev/null {} + ;;
  esac
}
printf 'OVERBRAINER_TAR_STREAM\n'
if [ "$found" = 0 ]; then
  printf 'OVERBRAINER_MANIFEST %s 0\n\n' "$algo"
  exit 0
fi
t=$(mktemp) || exit 1
tool=$algo
if [ "$algo" != none ] && ! sums "$@" >"$t"; then
  rm -f "$t"
  echo "overbrainer: computing the checksums failed" >&2
  exit 1
fi
size=$(wc -c <"$t" | tr -d ' ')
# Each wc prints a total line after its files (/dev/null makes sure it
# has two): half the sum of every line is the files' bytes.
tool=size
total=$(sums "$@" 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s / 2 }' 2>/dev/null)
case $total in '' | *[!0-9]*) total= ;; esac
printf 'OVERBRAINER_MANIFEST %s %s%s\n' "$algo" "$size" "${total:+ $total}"
cat "$t"
rm -f "$t"
printf '\n'
while [ "$1" != -- ]; do
  set -- "$@" "$1"
  shift
done
shift
tar -cf - "$@"
rc=$?
# GNU tar exits 1 when a file changed while it read it (a growing log):
# the manifest judges every other file, so only a manifest-less send
# keeps that failure.
[ "$rc" = 1 ] && [ "$algo" != none ] && rc=0
exit "$rc"`

// Download copies req's names from the pod into req.Dir, checking each
// file against the SHA-256 manifest the pod computed (Extract says how).
func (c *Conn) Download(ctx context.Context, req DownloadRequest) (Extracted, error) {
	var got Extracted
	err := c.Fetch(ctx, req, func(r io.Reader) error {
		var err error
		got, err = Extract(r, req)
		return err
	})
	return got, err
}

// Fetch runs the pod's side of a download of req and calls read with the
// stream (the manifest, then the tar) for Extract. read's error stops the
// download, and is returned.
func (c *Conn) Fetch(ctx context.Context, req DownloadRequest, read func(io.Reader) error) error {
	if err := req.check(); err != nil {
		return err
	}
	args := append([]string{req.RemoteDir}, req.Names...)
	args = append(append(args, "--"), req.Exclude...)
	// A failed extraction stops reading: the session is then closed, or the
	// remote tar would block on a full window for ever.
	outer := ctx
	pr, pw := io.Pipe()
	ctx, in, stop := c.guardStall(ctx, pr)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errb := &tail{max: maxStderr}
	done := make(chan error, 1)
	go func() {
		err := c.Run(ctx, Command(tarScript, args...), nil, pw, errb)
		if err != nil {
			pw.CloseWithError(errRemote)
		} else {
			pw.Close()
		}
		done <- err
	}()
	xerr := afterMark(in, read)
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
		return fmt.Errorf("podssh: download from %s: %w", req.RemoteDir, serr)
	case xerr != nil && !errors.Is(xerr, errRemote):
		return fmt.Errorf("podssh: download from %s: %w", req.RemoteDir, xerr)
	case runErr != nil:
		return fmt.Errorf("podssh: download from %s: %w", req.RemoteDir, commandError(runErr, errb.Bytes()))
	}
	return nil
}

// errRemote ends the local side of a download whose remote side failed; the
// remote error is the one reported.
var errRemote = errors.New("podssh: the remote tar failed")

// Bounds on what comes before the tar stream: an rc file's chatter, line
// by line, then the manifest.
const (
	maxPreamble     = 1 << 20
	maxPreambleLine = 4 << 10
	maxManifest     = 64 << 20
)

// afterMark skips the stream up to tarMark, then calls read with the rest.
func afterMark(r io.Reader, read func(io.Reader) error) error {
	br := bufio.NewReader(r)
	skipped := 0
	for skipped <= maxPreamble {
		line, _, err := termtext.ReadLine(br, maxPreambleLine)
		if line == tarMark {
			return read(br)
		}
		skipped += len(line)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream ended before its start mark")
			}
			return err
		}
	}
	return fmt.Errorf("no start mark in the first %d bytes of the stream", maxPreamble)
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	b   bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tail) Bytes() []byte { return t.b.Bytes() }
