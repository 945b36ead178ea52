package podssh

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

func dial(t *testing.T, addr string, client, host *Key) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), Target{Addr: addr, Key: client, HostKey: host.Public})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestKeyRoundTrip(t *testing.T) {
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := k.PrivatePEM("c")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pemBytes, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n")) {
		t.Fatalf("not an OpenSSH PEM: %.40q", pemBytes)
	}
	back, err := ParseKey(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Public.Marshal(), k.Public.Marshal()) {
		t.Fatal("the parsed key differs")
	}
	line := k.AuthorizedKey("overbrainer-r1")
	if !strings.HasPrefix(line, "ssh-ed25519 ") || !strings.HasSuffix(line, " overbrainer-r1") || strings.Contains(line, "\n") {
		t.Fatalf("authorized line %q", line)
	}
	pub, err := ParsePublicKey(line)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pub.Marshal(), k.Public.Marshal()) {
		t.Fatal("the parsed public key differs")
	}
	// A broken key's error does not quote the key.
	bad := bytes.Replace(pemBytes, []byte("KEY-----\n"), []byte("KEY-----\nXX"), 1)
	_, err = ParseKey(bad)
	if err == nil || strings.Contains(err.Error(), string(pemBytes[40:60])) {
		t.Fatalf("ParseKey(broken) = %v", err)
	}
}

func TestCommandQuotesEveryArgument(t *testing.T) {
	client, host := keys(t)
	d := startSSHD(t, host, client.AuthorizedKey(""))
	c := dial(t, d.addr, client, host)
	args := []string{"it's", "$HOME `id` \"x\"", "", "a\nb", "-n"}
	out, err := c.Output(context.Background(), Command(`for a do printf '<%s>' "$a"; done`, args...), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "<it's><$HOME `id` \"x\"><><a\nb><-n>"
	if string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

func TestRunStreamsAndErrors(t *testing.T) {
	client, host := keys(t)
	d := startSSHD(t, host, client.AuthorizedKey(""))
	c := dial(t, d.addr, client, host)
	ctx := context.Background()

	out, err := c.Output(ctx, Command(`tr a-z A-Z`), strings.NewReader("from stdin"))
	if err != nil || string(out) != "FROM STDIN" {
		t.Fatalf("Output = %q, %v", out, err)
	}
	_, err = c.Output(ctx, Command(`echo something broke >&2; exit 7`), nil)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Status != 7 || ce.Stderr != "something broke" {
		t.Fatalf("err = %#v", err)
	}

	// Cancelling the context ends a running command that would otherwise
	// run until its input ends, as the pod's watch script and tar do: sshd
	// closes the command's stdin with the session. (A command that neither
	// reads nor writes outlives its session under a root login, where sshd
	// refuses the signal request; Run then drops the connection, which
	// TestRunAbandonsAStuckSession covers.)
	cctx, cancel := context.WithCancel(ctx)
	stdin, hold := io.Pipe()
	defer hold.Close()
	var said shtest.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx, Command(`echo started; exec cat >/dev/null`), stdin, &said, nil) }()
	shtest.Eventually(t, time.Minute, func() bool {
		return strings.Contains(said.String(), "started") || len(done) > 0
	}, "the command never started")
	select {
	case err := <-done:
		t.Fatalf("the command ended before it was cancelled: %v", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel = %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	// The connection still serves commands.
	if out, err := c.Output(ctx, "echo ok", nil); err != nil || string(out) != "ok\n" {
		t.Fatalf("after cancel: %q, %v", out, err)
	}
}

func TestDialRefusesAnotherHostKey(t *testing.T) {
	client, host := keys(t)
	d := startSSHD(t, host, client.AuthorizedKey(""))
	other, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Dial(context.Background(), Target{Addr: d.addr, Key: client, HostKey: other.Public})
	if !errors.Is(err, ErrHostKeyMismatch) {
		t.Fatalf("Dial with another pinned key = %v, want ErrHostKeyMismatch", err)
	}
	// The refusal happened before authentication: sshd never saw our key.
	if strings.Contains(d.log.String(), "Accepted publickey") {
		t.Fatalf("the client authenticated to a server it should not trust:\n%s", d.log)
	}
}

func TestDialWithAnUnauthorizedClientKey(t *testing.T) {
	client, host := keys(t)
	d := startSSHD(t, host, client.AuthorizedKey(""))
	stranger, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Dial(context.Background(), Target{Addr: d.addr, Key: stranger, HostKey: host.Public})
	if err == nil || errors.Is(err, ErrHostKeyMismatch) {
		t.Fatalf("Dial with an unknown client key = %v", err)
	}
	mustContain(t, err.Error(), "unable to authenticate")
}

func TestDialHonoursContext(t *testing.T) {
	client, host := keys(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Dial(ctx, Target{Addr: "127.0.0.1:1", Key: client, HostKey: host.Public})
	if err == nil {
		t.Fatal("Dial with a cancelled context succeeded")
	}
}

// tree makes a small job directory.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sub", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "train.sh"), []byte("echo train\n"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sub", "deep", "data.txt"), bytes.Repeat([]byte("x"), 100000), 0o644))
	must(os.WriteFile(filepath.Join(dir, "it's odd.txt"), []byte("quote"), 0o600))
	must(os.Symlink("sub/deep/data.txt", filepath.Join(dir, "link")))
	return dir
}

func TestUploadAndDownload(t *testing.T) {
	client, host := keys(t)
	d := startSSHD(t, host, client.AuthorizedKey(""))
	c := dial(t, d.addr, client, host)
	ctx := context.Background()
	src := tree(t)
	// The "pod" is this machine: the remote directory is a local one.
	remote := filepath.Join(t.TempDir(), "run dir", "job")
	if err := c.Upload(ctx, src, remote); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"train.sh", "sub/deep/data.txt", "it's odd.txt"} {
		want, _ := os.ReadFile(filepath.Join(src, name))
		got, err := os.ReadFile(filepath.Join(remote, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s uploaded as %d bytes, %v", name, len(got), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(remote, "train.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("train.sh mode: %v %v", fi.Mode(), err)
	}
	if l, err := os.Readlink(filepath.Join(remote, "link")); err != nil || l != "sub/deep/data.txt" {
		t.Fatalf("link = %q, %v", l, err)
	}

	local := filepath.Join(t.TempDir(), "out")
	got, err := c.Download(ctx, DownloadRequest{RemoteDir: remote, Names: []string{"sub", "train.sh", "missing", "link"}, Dir: local})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Extracted{Files: 2, Dirs: 2, Bytes: int64(100000 + len("echo train\n")), Skipped: []string{"link"}, PerName: map[string]int{"sub": 1, "train.sh": 1}}, got); diff != "" {
		t.Fatalf("download (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(local, "sub", "deep", "data.txt"))
	if err != nil || len(b) != 100000 {
		t.Fatalf("downloaded data.txt: %d bytes, %v", len(b), err)
	}
	if fi, err := os.Stat(local); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("download dir mode: %v %v", fi.Mode(), err)
	}

	// Nothing to download is no error.
	got, err = c.Download(ctx, DownloadRequest{RemoteDir: remote, Names: []string{"nope"}, Dir: filepath.Join(t.TempDir(), "empty")})
	if err != nil || got.Files != 0 {
		t.Fatalf("download of nothing = %+v, %v", got, err)
	}
	// A tree under a prefix and a file beside it, in one stream.
	runDir := filepath.Join(t.TempDir(), "run")
	err = c.UploadTar(ctx, runDir, func(tw *tar.Writer) error {
		if err := AddTree(tw, src, "job/"); err != nil {
			return err
		}
		return AddFile(tw, "command.sh", []byte("sh train.sh\n"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(runDir, "command.sh")); string(b) != "sh train.sh\n" {
		t.Fatalf("command.sh %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(runDir, "job", "train.sh")); string(b) != "echo train\n" {
		t.Fatalf("job/train.sh %q", b)
	}

	// A local file that cannot be archived fails the upload with its own
	// error, not the remote tar's complaint about a cut stream.
	bad := t.TempDir()
	if err := mkfifo(filepath.Join(bad, "pipe")); err != nil {
		t.Fatal(err)
	}
	err = c.Upload(ctx, bad, filepath.Join(t.TempDir(), "up"))
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("upload of a fifo: %v", err)
	}

	// A missing remote directory is.
	_, err = c.Download(ctx, DownloadRequest{RemoteDir: filepath.Join(remote, "absent"), Names: []string{"x"}, Dir: t.TempDir()})
	var ce *CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("download from a missing directory = %v", err)
	}
}

func TestExtractTarRefusesEscapes(t *testing.T) {
	for _, name := range []string{"../evil", "/etc/evil", "a/../../evil"} {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte("x"))
		tw.Close()
		dir := t.TempDir()
		_, err := ExtractTar(&b, filepath.Join(dir, "x"))
		if err == nil {
			t.Fatalf("%q extracted", name)
		}
		if _, err := os.Stat(filepath.Join(dir, "evil")); err == nil {
			t.Fatalf("%q escaped", name)
		}
	}
}

func TestExtractTarDoesNotFollowALink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o644, Size: 3, Typeflag: tar.TypeReg})
	tw.Write([]byte("new"))
	tw.Close()
	if _, err := ExtractTar(&b, dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Fatalf("wrote through a link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "new" {
		t.Fatalf("f = %q", b)
	}
}

func TestWriteTarRefusesASocketOrFifo(t *testing.T) {
	dir := t.TempDir()
	if err := mkfifo(filepath.Join(dir, "pipe")); err != nil {
		t.Skip("no fifo here:", err)
	}
	err := WriteTar(new(bytes.Buffer), dir)
	if err == nil {
		t.Fatal("a fifo was archived")
	}
	mustContain(t, err.Error(), "not a regular file")
}

// A login shell's rc file may print before the download's script runs: the
// stream is read from its start mark on, the chatter's lines bounded.
func TestExtractAfterMarkSkipsNoise(t *testing.T) {
	extract := func(r io.Reader, dir string) (Extracted, error) {
		var got Extracted
		err := afterMark(r, func(r io.Reader) error {
			var err error
			got, err = Extract(r, DownloadRequest{Names: []string{"f"}, Dir: dir})
			return err
		})
		return got, err
	}
	var b bytes.Buffer
	b.WriteString("pyenv: warning\n" + strings.Repeat("a banner without an end ", 1000) + "\n" + tarMark + "OVERBRAINER_MANIFEST none 0\n\n")
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("ok"))
	tw.Close()
	dir := t.TempDir()
	got, err := extract(&b, dir)
	if err != nil || got.Files != 1 || !got.Unchecked {
		t.Fatalf("%+v %v", got, err)
	}
	if f, _ := os.ReadFile(filepath.Join(dir, "f")); string(f) != "ok" {
		t.Fatalf("f = %q", f)
	}
	if _, err := extract(strings.NewReader("no mark at all\n"), t.TempDir()); err == nil {
		t.Fatal("a stream without its mark was accepted")
	}
	// Endless chatter is refused, not held in memory.
	endless := io.MultiReader(strings.NewReader(strings.Repeat("chatter\n", maxPreamble/4)), strings.NewReader(tarMark))
	if _, err := extract(endless, t.TempDir()); err == nil || !strings.Contains(err.Error(), "no start mark") {
		t.Fatalf("endless chatter: %v", err)
	}
	// The mark and an empty manifest: nothing to download.
	if got, err := extract(strings.NewReader(tarMark+"OVERBRAINER_MANIFEST sha256 0\n\n"), t.TempDir()); err != nil || got.Files != 0 {
		t.Fatalf("%+v %v", got, err)
	}
}

// A stream is a conversation: lines in, answers out, and the command's exit
// with its stderr at the end.
func TestStream(t *testing.T) {
	client, host := keys(t)
	d := startSSHD(t, host, client.AuthorizedKey(""))
	c := dial(t, d.addr, client, host)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Stream(done, "true"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stream on an ended context = %v", err)
	}
	// ctx bounds the start only: the stream outlives it.
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.Stream(ctx, Command(`while read -r l; do echo "got $l"; done; echo bye >&2; exit 4`))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	br := bufio.NewReader(st.Out)
	for _, l := range []string{"a", "b c"} {
		fmt.Fprintln(st.In, l)
		got, err := br.ReadString('\n')
		if err != nil || got != "got "+l+"\n" {
			t.Fatalf("%q %v", got, err)
		}
	}
	st.In.Close()
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("rest %q", rest)
	}
	var ce *CommandError
	if err := st.Wait(); !errors.As(err, &ce) || ce.Status != 4 || ce.Stderr != "bye" {
		t.Fatalf("Wait = %#v", err)
	}
}

// A stream's Done tells that its command ended, with its output unread:
// a conversation between two turns learns at once that its pod is gone.
func TestStreamDoneWithOutputUnread(t *testing.T) {
	client, host := keys(t)
	d := startSSHD(t, host, client.AuthorizedKey(""))
	c := dial(t, d.addr, client, host)
	st, err := c.Stream(context.Background(), Command(`read -r l; echo "got $l"; exit 3`))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	select {
	case <-st.Done():
		t.Fatal("Done before the command ended")
	default:
	}
	fmt.Fprintln(st.In, "x")
	select {
	case <-st.Done():
	case <-time.After(time.Minute):
		t.Fatal("Done never closed after the command ended")
	}
	got, err := bufio.NewReader(st.Out).ReadString('\n')
	if err != nil || got != "got x\n" {
		t.Fatalf("the output after Done: %q %v", got, err)
	}
	var ce *CommandError
	if err := st.Wait(); !errors.As(err, &ce) || ce.Status != 3 {
		t.Fatalf("Wait = %#v", err)
	}
}
