package podssh

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/overbrainer/overbrainer-go/internal/termtext"
)

// Extracted counts what Extract wrote, and what it refused.
type Extracted struct {
	Files, Dirs int
	Bytes       int64
	// Skipped names entries that were not written: links (which could
	// point a later entry outside the directory), devices and the like.
	Skipped []string
	// PerName counts the files written under each name asked for.
	PerName map[string]int
	// Unchecked: the pod had neither sha256sum nor busybox, so no file was
	// checked against a manifest.
	Unchecked bool
}

// ErrTooLarge: the results are larger than the download's cap. A
// *TooLargeError says which cap and where it was reached.
var ErrTooLarge = errors.New("podssh: the download is larger than its cap")

// TooLargeError is a download stopped at its cap, before the file that
// would have crossed it was written.
type TooLargeError struct {
	MaxBytes int64
	Name     string // the file that would have crossed the cap
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("podssh: the results pass the cap of %d bytes at %s: the rest was not downloaded", e.MaxBytes, termtext.Escape(e.Name, false))
}

func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// ErrChecksum: downloaded files differ from the pod's manifest. A
// *ChecksumError names them.
var ErrChecksum = errors.New("podssh: the downloaded files do not match the pod's checksums")

// ChecksumError names the files that differ from the pod's SHA-256
// manifest, arrived without an entry in it, or did not arrive.
type ChecksumError struct{ Names []string }

func (e *ChecksumError) Error() string {
	names := e.Names
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(" and %d more", len(e.Names)-5)
	}
	return fmt.Sprintf("podssh: %d downloaded files do not match the pod's SHA-256 manifest: %s%s",
		len(e.Names), termtext.Escape(strings.Join(names, ", "), false), more)
}

func (e *ChecksumError) Is(target error) bool { return target == ErrChecksum }

// ExtractTar unpacks a bare tar stream into dir as Extract does, with no
// manifest to check and no cap.
func ExtractTar(r io.Reader, dir string) (Extracted, error) {
	x, err := newExtractor(DownloadRequest{Dir: dir}, nil)
	if err != nil {
		return Extracted{}, err
	}
	defer x.root.Close()
	return x.untar(r)
}

// Extract reads the stream of a download (the manifest, then a tar
// stream) into req.Dir, through an os.Root there: only regular files and
// directories under req.Names are written, files 0600 and directories
// 0700; an existing directory is never replaced by a file, nor a link
// followed; a name that would leave the directory is an error. It stops
// at req.MaxBytes with a *TooLargeError. Each file is hashed as it is
// written: one that differs from the manifest, is missing from it or
// from the stream makes a *ChecksumError once the rest is extracted (a
// file of req.Growing is not checked).
func Extract(r io.Reader, req DownloadRequest) (Extracted, error) {
	br := bufio.NewReader(r)
	sums, unchecked, total, err := readManifest(br)
	if err != nil {
		return Extracted{}, err
	}
	x, err := newExtractor(req, sums)
	if err != nil {
		return Extracted{}, err
	}
	x.total = total
	x.tell()
	defer x.root.Close()
	got, err := x.untar(br)
	got.Unchecked = unchecked
	if err != nil {
		return got, err
	}
	if sums != nil {
		for name := range x.sums {
			if _, ok := x.seen[name]; !ok && !x.growing(name) {
				x.bad = append(x.bad, name)
			}
		}
	}
	if len(x.bad) > 0 {
		slices.Sort(x.bad)
		return got, &ChecksumError{Names: x.bad}
	}
	return got, nil
}

// readManifest reads the manifest's header and its lines: nil sums and
// unchecked when the pod had no tool to compute them; total is the bytes
// the pod counted, -1 when it could not.
func readManifest(br *bufio.Reader) (sums map[string][32]byte, unchecked bool, total int64, err error) {
	total = -1
	head, _, err := termtext.ReadLine(br, 256)
	if err != nil {
		return nil, false, total, fmt.Errorf("reading the manifest's header: %w", err)
	}
	f := strings.Fields(head)
	if len(f) < 3 || len(f) > 4 || f[0] != "OVERBRAINER_MANIFEST" {
		return nil, false, total, fmt.Errorf("the stream has no manifest header: %q", termtext.Escape(head, false))
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 || n > maxManifest {
		return nil, false, total, fmt.Errorf("the manifest's length %q is not one of 0 to %d bytes", f[2], maxManifest)
	}
	if len(f) == 4 {
		// Only a hint for progress: one that does not parse is unknown.
		if t, err := strconv.ParseInt(f[3], 10, 64); err == nil && t >= 0 {
			total = t
		}
	}
	body := make([]byte, n+1)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, false, total, fmt.Errorf("reading the manifest: %w", err)
	}
	if body[n] != '\n' {
		return nil, false, total, errors.New("the manifest does not end where its header says")
	}
	switch f[1] {
	case "none":
		return nil, true, total, nil
	case "sha256", "busybox":
	default:
		return nil, false, total, fmt.Errorf("the manifest's tool %q is unknown", f[1])
	}
	sums = map[string][32]byte{}
	for _, line := range bytes.Split(body[:n], []byte("\n")) {
		name, sum, ok := parseSum(string(line))
		if ok {
			sums[name] = sum
		}
	}
	return sums, false, total, nil
}

// parseSum reads one line of sha256sum: "HEX  NAME" (" *NAME" in binary
// mode), or GNU's "\HEX  NAME" with "\\", "\n" and "\r" escaped in NAME.
// A name with a newline that busybox printed raw is not read: its file is
// then reported as missing from the manifest.
func parseSum(line string) (string, [32]byte, bool) {
	var sum [32]byte
	escaped := strings.HasPrefix(line, `\`)
	line = strings.TrimPrefix(line, `\`)
	if len(line) < 66 || (line[64:66] != "  " && line[64:66] != " *") {
		return "", sum, false
	}
	if _, err := hex.Decode(sum[:], []byte(line[:64])); err != nil {
		return "", sum, false
	}
	name := line[66:]
	if escaped {
		name = strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\r`, "\r").Replace(name)
	}
	return path.Clean(name), sum, true
}

// extractor writes one stream under its root.
type extractor struct {
	req  DownloadRequest
	root *os.Root
	sums map[string][32]byte // nil: nothing to check
	seen map[string][32]byte // what was written, and its hash
	bad  []string
	got  Extracted
	// total is the pod's count of the bytes it sends, -1 unknown.
	total int64
}

func newExtractor(req DownloadRequest, sums map[string][32]byte) (*extractor, error) {
	if err := os.MkdirAll(req.Dir, 0o700); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(req.Dir)
	if err != nil {
		return nil, err
	}
	return &extractor{req: req, root: root, sums: sums, seen: map[string][32]byte{}, got: Extracted{PerName: map[string]int{}}, total: -1}, nil
}

// growing says whether name may grow as it is sent (req.Growing).
func (x *extractor) growing(name string) bool { return slices.Contains(x.req.Growing, name) }

// asked is the name of req.Names that name is, or is under ("" when none;
// any name when req.Names is empty, as for ExtractTar).
func (x *extractor) asked(name string) (string, bool) {
	if len(x.req.Names) == 0 {
		top, _, _ := strings.Cut(name, "/")
		return top, true
	}
	for _, n := range x.req.Names {
		n = path.Clean(n)
		if name == n || strings.HasPrefix(name, n+"/") {
			return n, true
		}
	}
	return "", false
}

func (x *extractor) untar(r io.Reader) (Extracted, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return x.got, nil
		}
		if err != nil {
			return x.got, err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return x.got, fmt.Errorf("tar entry %q leaves the directory", termtext.Escape(h.Name, false))
		}
		top, ok := x.asked(name)
		if !ok {
			return x.got, fmt.Errorf("tar entry %q is none of the names asked for", termtext.Escape(h.Name, false))
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := x.mkdir(name); err != nil {
				return x.got, err
			}
			x.got.Dirs++
		case tar.TypeReg:
			if err := x.file(name, top, h.Size, tr); err != nil {
				return x.got, err
			}
		case tar.TypeLink:
			// GNU tar sends a second name of a file as a hard link to the
			// first: it is written again as a copy of it.
			src := path.Clean(h.Linkname)
			if _, ok := x.seen[src]; !ok {
				x.got.Skipped = append(x.got.Skipped, name)
				continue
			}
			f, err := x.root.Open(src)
			if err != nil {
				return x.got, err
			}
			fi, err := f.Stat()
			if err == nil {
				err = x.file(name, top, fi.Size(), f)
			}
			f.Close()
			if err != nil {
				return x.got, err
			}
		default:
			x.got.Skipped = append(x.got.Skipped, name)
		}
	}
}

// add counts n more bytes written, and tells the request's Progress.
func (x *extractor) add(n int64) {
	x.got.Bytes += n
	x.tell()
}

func (x *extractor) tell() {
	if x.req.Progress != nil {
		x.req.Progress(x.got.Bytes, x.total)
	}
}

// mkdir makes the directory name (and its parents) 0700.
func (x *extractor) mkdir(name string) error {
	if err := x.root.MkdirAll(name, 0o700); err != nil {
		return err
	}
	d, err := x.root.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Chmod(0o700)
}

// file writes size bytes of r as the file name, 0600, and checks it.
func (x *extractor) file(name, top string, size int64, r io.Reader) error {
	if x.req.MaxBytes > 0 && x.got.Bytes+size > x.req.MaxBytes {
		return &TooLargeError{MaxBytes: x.req.MaxBytes, Name: name}
	}
	if dir := path.Dir(name); dir != "." {
		if err := x.mkdir(dir); err != nil {
			return err
		}
	}
	switch fi, err := x.root.Lstat(name); {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s: a directory is there, and is not replaced by a file", termtext.Escape(name, false))
	case err == nil && !fi.Mode().IsRegular():
		// A link there is replaced, never followed.
		if err := x.root.Remove(name); err != nil {
			return err
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscallNoFollow, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), counting{io.LimitReader(r, size), x.add})
	if err == nil && n < size {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		err = f.Chmod(0o600)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	x.got.Files++
	x.got.PerName[top]++
	var sum [32]byte
	h.Sum(sum[:0])
	x.seen[name] = sum
	if x.sums != nil && !x.growing(name) {
		if want, ok := x.sums[name]; !ok || want != sum {
			x.bad = append(x.bad, name)
		}
	}
	return nil
}
