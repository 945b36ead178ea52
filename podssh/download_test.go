package podssh

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// runDir makes a run directory with outputs to send and to keep.
func runDir(t *testing.T) string {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"outputs/model.bin":        "weights",
		"outputs/sub/it's odd.txt": "odd",
		"outputs/ckpt-1/state":     "big intermediate",
		"outputs/scratch.tmp":      "scratch",
		"job.log":                  "log\n",
		"other":                    "not asked for",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pathOf is a directory holding links to only the named commands.
func pathOf(t *testing.T, names ...string) string {
	bin := t.TempDir()
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			shtest.NeedTool(t, n)
			continue
		}
		if err := os.Symlink(p, filepath.Join(bin, n)); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// The pod's side of a download, under every shell: the manifest names
// what is sent and no more, the excluded files stay, and the client
// checks each file against it. Without sha256sum busybox's is used, and
// without either the stream says so.
func TestTarScriptUnderEveryShell(t *testing.T) {
	tools := []string{"find", "tar", "mktemp", "wc", "tr", "cat", "rm", "printf"}
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		for _, c := range []struct {
			name, algo string
			path       func() string
		}{
			{"sha256sum", "sha256", func() string { return shtest.SystemPath }},
			{"busybox", "busybox", func() string { return pathOf(t, append(tools, "busybox")...) }},
			{"neither", "none", func() string { return pathOf(t, tools...) }},
		} {
			t.Run(c.name, func(t *testing.T) {
				dir := runDir(t)
				names := []string{"outputs", "job.log", "missing"}
				p := shtest.Start(t, sh, tarScript, shtest.Opts{
					Env:  map[string]string{"PATH": c.path()},
					Args: append([]string{dir}, append(append(names, "--"), "ckpt-*", "*.tmp")...),
				})
				if code := p.Wait(t, time.Minute); code != 0 {
					t.Fatalf("exit %d: %s", code, p.Stderr())
				}
				out := p.Stdout()
				head, _, _ := strings.Cut(strings.TrimPrefix(out, tarMark), "\n")
				if !strings.HasPrefix(head, "OVERBRAINER_MANIFEST "+c.algo+" ") {
					t.Fatalf("header %q, want tool %s", head, c.algo)
				}
				local := t.TempDir()
				var dones, totals []int64
				progress := func(done, total int64) { dones, totals = append(dones, done), append(totals, total) }
				got, err := Extract(strings.NewReader(strings.TrimPrefix(out, tarMark)), DownloadRequest{Names: names, Dir: local, Progress: progress})
				if err != nil {
					t.Fatal(err)
				}
				if got.Files != 3 || got.PerName["outputs"] != 2 || got.Unchecked != (c.algo == "none") {
					t.Fatalf("extracted %+v", got)
				}
				// The system's PATH has awk, the others do not: the pod
				// counts the total only with it.
				want := int64(-1)
				if c.algo == "sha256" {
					want = got.Bytes
				}
				if len(dones) < 2 || dones[0] != 0 || dones[len(dones)-1] != got.Bytes || !slices.IsSorted(dones) || totals[0] != want {
					t.Errorf("progress %v of %v, want growing to %d of %d", dones, totals, got.Bytes, want)
				}
				for _, kept := range []string{"outputs/ckpt-1", "outputs/scratch.tmp", "other"} {
					if _, err := os.Lstat(filepath.Join(local, kept)); err == nil {
						t.Errorf("%s was downloaded", kept)
					}
				}
				if b, _ := os.ReadFile(filepath.Join(local, "outputs/sub/it's odd.txt")); string(b) != "odd" {
					t.Errorf("odd file = %q", b)
				}
			})
		}
	})
}

// A file that differs from the manifest, one the manifest does not name,
// and one it names that never came are each caught.
func TestExtractChecksEveryFile(t *testing.T) {
	stream := sent(t, runDir(t), "outputs", "job.log")
	req := DownloadRequest{Names: []string{"outputs", "job.log"}}
	req.Dir = t.TempDir()
	if _, err := Extract(bytes.NewReader(stream), req); err != nil {
		t.Fatalf("a clean stream: %v", err)
	}
	// One byte of model.bin's content flipped.
	i := bytes.Index(stream, []byte("weights"))
	bad := slices.Clone(stream)
	bad[i] ^= 0x20
	req.Dir = t.TempDir()
	_, err := Extract(bytes.NewReader(bad), req)
	var ce *ChecksumError
	if !errors.As(err, &ce) || !errors.Is(err, ErrChecksum) || !slices.Equal(ce.Names, []string{"outputs/model.bin"}) {
		t.Fatalf("a flipped byte: %v", err)
	}
	// The manifest's line of job.log dropped: job.log is unaccounted for;
	// a manifest naming a file that never came.
	var manifest []string
	for _, l := range strings.SplitAfter(string(stream), "\n") {
		if len(l) > 66 && l[64:66] == "  " {
			manifest = append(manifest, l)
		}
	}
	body := stream[bytes.Index(stream, []byte("\n\n"))+2:]
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{slices.DeleteFunc(slices.Clone(manifest), func(l string) bool { return strings.HasSuffix(l, " job.log\n") }), "job.log"},
		{append(slices.Clone(manifest), strings.Repeat("0", 64)+"  outputs/ghost\n"), "outputs/ghost"},
	} {
		m := strings.TrimSuffix(strings.Join(c.lines, ""), "\n")
		s := tarMark + "OVERBRAINER_MANIFEST sha256 " + strconv.Itoa(len(m)) + "\n" + m + "\n" + string(body)
		req.Dir = t.TempDir()
		_, err := Extract(strings.NewReader(strings.TrimPrefix(s, tarMark)), req)
		if !errors.As(err, &ce) || !slices.Equal(ce.Names, []string{c.want}) {
			t.Errorf("manifest without a match for %s: %v", c.want, err)
		}
	}
}

// tarOf is a bare tar stream of regular files, with no manifest.
func tarOf(t *testing.T, files ...string) []byte {
	var b bytes.Buffer
	b.WriteString("OVERBRAINER_MANIFEST none 0\n\n")
	tw := tar.NewWriter(&b)
	for _, f := range files {
		if err := AddFile(tw, f, []byte("0123456789"), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return b.Bytes()
}

// Extract writes only what was asked, 0600 and 0700, never over a
// directory, and stops at its cap.
func TestExtractWritesOnlyWhatItAsked(t *testing.T) {
	req := DownloadRequest{Names: []string{"outputs", "job.log"}, Dir: t.TempDir()}
	got, err := Extract(bytes.NewReader(tarOf(t, "outputs/a/b", "job.log")), req)
	if err != nil || got.Files != 2 {
		t.Fatalf("%+v %v", got, err)
	}
	for name, want := range map[string]os.FileMode{"outputs": 0o700, "outputs/a": 0o700, "outputs/a/b": 0o600, "job.log": 0o600} {
		if fi, err := os.Stat(filepath.Join(req.Dir, name)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", name, fi.Mode().Perm(), err, want)
		}
	}
	if _, err := Extract(bytes.NewReader(tarOf(t, "job.log", ".bashrc")), req); err == nil || !strings.Contains(err.Error(), "none of the names") {
		t.Errorf("a name not asked for: %v", err)
	}
	if _, err := os.Stat(filepath.Join(req.Dir, ".bashrc")); err == nil {
		t.Error(".bashrc was written")
	}
	// A directory where the stream has a file stays a directory.
	_, err = Extract(bytes.NewReader(tarOf(t, "outputs/a")), req)
	if err == nil || !strings.Contains(err.Error(), "not replaced") {
		t.Errorf("a file over a directory: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(req.Dir, "outputs/a/b")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the directory's file is gone: %v", err)
	}
	// The cap stops before the file that crosses it.
	req.Dir, req.MaxBytes = t.TempDir(), 15
	_, err = Extract(bytes.NewReader(tarOf(t, "outputs/1", "outputs/2")), req)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.Name != "outputs/2" {
		t.Fatalf("past the cap: %v", err)
	}
	if _, err := os.Stat(filepath.Join(req.Dir, "outputs/2")); err == nil {
		t.Error("the file past the cap was written")
	}
}

// The pod's side of a download is POSIX sh that shellcheck accepts.
func TestTarScriptShellcheck(t *testing.T) {
	bin := shtest.NeedTool(t, "shellcheck")
	for name, script := range map[string]string{"tar": tarScript, "untar": untarScript} {
		cmd := exec.Command(bin, "-s", "sh", "-")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("shellcheck of the %s script: %v\n%s", name, err, out)
		}
	}
}

// A file of Growing that differs from its stale checksum, has none, or
// never came is no error; the other files are still checked.
func TestExtractLeavesGrowingFilesUnchecked(t *testing.T) {
	stream := sent(t, runDir(t), "outputs", "job.log")
	logAt := bytes.LastIndex(stream, []byte("log\n"))
	grown := slices.Clone(stream)
	grown[logAt] = 'L' // the log changed after its checksum
	req := DownloadRequest{Names: []string{"outputs", "job.log"}, Growing: []string{"job.log"}, Dir: t.TempDir()}
	if _, err := Extract(bytes.NewReader(grown), req); err != nil {
		t.Fatalf("a growing log that changed: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(req.Dir, "job.log")); string(b) != "Log\n" {
		t.Errorf("job.log = %q, want it as it came", b)
	}
	grown[bytes.Index(grown, []byte("weights"))] ^= 0x20
	req.Dir = t.TempDir()
	var ce *ChecksumError
	if _, err := Extract(bytes.NewReader(grown), req); !errors.As(err, &ce) || !slices.Equal(ce.Names, []string{"outputs/model.bin"}) {
		t.Fatalf("an output that changed, beside a growing log: %v", err)
	}
	for _, bad := range []string{"", "/job.log", "../job.log", "a//b"} {
		req.Growing = []string{bad}
		if err := req.check(); err == nil {
			t.Errorf("Growing %q accepted", bad)
		}
	}
}

// GNU tar exits 1 when a file changed while it read it: with a manifest
// to judge the files that is no failure, without one it still is. Under
// every shell.
func TestTarScriptTakesAChangedFileToTheManifest(t *testing.T) {
	tools := []string{"find", "mktemp", "wc", "tr", "cat", "rm", "printf"}
	realTar := shtest.NeedTool(t, "tar")
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		for _, c := range []struct {
			name string
			path []string
			want int
		}{
			{"sha256sum", append(tools, "sha256sum"), 0},
			{"neither", tools, 1},
		} {
			t.Run(c.name, func(t *testing.T) {
				bin := pathOf(t, c.path...)
				// A tar that sends the files, then reports one changed.
				wrapper := "#!/bin/sh\n'" + realTar + "' \"$@\"\necho 'tar: job.log: file changed as we read it' >&2\nexit 1\n"
				if err := os.WriteFile(filepath.Join(bin, "tar"), []byte(wrapper), 0o755); err != nil {
					t.Fatal(err)
				}
				p := shtest.Start(t, sh, tarScript, shtest.Opts{
					Env:  map[string]string{"PATH": bin},
					Args: []string{runDir(t), "outputs", "job.log", "--"},
				})
				if code := p.Wait(t, time.Minute); code != c.want {
					t.Fatalf("exit %d, want %d: %s", code, c.want, p.Stderr())
				}
			})
		}
	})
}

// sent is what the pod's side of a download of dir's names sends after
// its start mark, with sha256sum.
func sent(t *testing.T, dir string, names ...string) []byte {
	t.Helper()
	shtest.NeedTool(t, "sha256sum")
	args := append(append([]string{"-c", tarScript, "sh", dir}, names...), "--")
	out, err := exec.Command("sh", args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimPrefix(out, []byte(tarMark))
}
