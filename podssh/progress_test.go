package podssh

import (
	"archive/tar"
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// An upload through a Counter and a download with a Progress tell growing
// counts over a real sshd, ending at the bytes that moved, of the totals
// counted on each side before the first byte.
func TestTransfersTellTheirProgress(t *testing.T) {
	src := tree(t)
	files, size, err := TreeSize(src)
	if err != nil || files != 3 || size != int64(len("echo train\n")+100000+len("quote")) {
		t.Fatalf("TreeSize = %d files, %d bytes, %v", files, size, err)
	}
	client, host := keys(t)
	d := startSSHD(t, host, client.AuthorizedKey(""))
	c, ctx := dial(t, d.addr, client, host), context.Background()
	var up []int64
	counter := &Counter{Total: size + 3, Progress: func(done, total int64) {
		if total != size+3 {
			t.Errorf("upload total %d, want %d", total, size+3)
		}
		up = append(up, done)
	}}
	remote := filepath.Join(t.TempDir(), "up")
	err = c.UploadTar(ctx, remote, func(tw *tar.Writer) error {
		if err := counter.AddTree(tw, src, "tree/"); err != nil {
			return err
		}
		return counter.AddFile(tw, "cmd", []byte("hi\n"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(up) < 2 || !slices.IsSorted(up) || up[len(up)-1] != size+3 || counter.Done() != size+3 {
		t.Errorf("upload progress %v, want growing to %d", up, size+3)
	}

	var down, totals []int64
	got, err := c.Download(ctx, DownloadRequest{RemoteDir: remote, Names: []string{"tree", "cmd"}, Dir: t.TempDir(),
		Progress: func(done, total int64) { down, totals = append(down, done), append(totals, total) }})
	if err != nil {
		t.Fatal(err)
	}
	if got.Bytes != size+3 || len(down) < 2 || !slices.IsSorted(down) || down[len(down)-1] != got.Bytes {
		t.Errorf("download progress %v, want growing to %d", down, got.Bytes)
	}
	if totals[0] != got.Bytes {
		t.Errorf("the pod counted %d bytes before sending %d", totals[0], got.Bytes)
	}
}
