package runpodtest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// A shared emulator is found by its file while it serves, the file is
// private and refused a second server, and it goes with the server.
func TestSharedEmulator(t *testing.T) {
	dir := t.TempDir()
	if _, ok := runpodtest.FindShared(dir); ok {
		t.Fatal("found a shared emulator in an empty directory")
	}
	srv := checkedfake.NewTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runpodtest.ServeShared(ctx, dir, srv) }()
	var got runpodtest.Shared
	deadline := time.Now().Add(10 * time.Second)
	for ok := false; !ok; got, ok = runpodtest.FindShared(dir) {
		if time.Now().After(deadline) {
			t.Fatal("the shared emulator is not found")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got.URL != srv.URL || got.Key != srv.APIKey() || got.BaseURL() != srv.BaseURL() {
		t.Errorf("found %+v, want the server at %s", got, srv.URL)
	}
	st, err := os.Stat(filepath.Join(dir, runpodtest.SharedFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the file: %v, mode %v; want 0600", err, st.Mode())
	}
	if err := runpodtest.ServeShared(context.Background(), dir, srv); !errors.Is(err, runpodtest.ErrSharedRunning) {
		t.Errorf("a second server: %v, want ErrSharedRunning", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, runpodtest.SharedFile)); !os.IsNotExist(err) {
		t.Errorf("the file outlived its server: %v", err)
	}
}

// A file left by a process that died names no emulator.
func TestSharedFileOfADeadProcess(t *testing.T) {
	dir := t.TempDir()
	srv := checkedfake.NewTestServer(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	b := `{"url":"` + srv.URL + `","key":"k","pid":` + strconv.Itoa(dead.Process.Pid) + `}`
	if err := os.WriteFile(filepath.Join(dir, runpodtest.SharedFile), []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, ok := runpodtest.FindShared(dir); ok {
		t.Errorf("found %+v, whose process is dead", s)
	}
}
