package runpodtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
)

// SharedFile is the file, in a directory of the caller's, by which a
// shared emulator is found: programs that each live shorter than a pod
// (a notebook's cells, launcher commands in other terminals) use the one
// emulator that ServeShared keeps running.
const SharedFile = "local-server.json"

// Shared is a running shared emulator: its root URL, its account key and
// the process that serves it.
type Shared struct {
	URL string `json:"url"`
	Key string `json:"key"`
	PID int    `json:"pid"`
}

// BaseURL is the emulator's REST root (runpod.WithBaseURL).
func (s Shared) BaseURL() string { return s.URL + "/v2" }

// FindShared reads dir's SharedFile and reports the emulator it names
// when its process lives and its server answers.
func FindShared(dir string) (Shared, bool) {
	var s Shared
	b, err := os.ReadFile(filepath.Join(dir, SharedFile))
	if err != nil || json.Unmarshal(b, &s) != nil || s.PID <= 0 || s.Key == "" {
		return s, false
	}
	if syscall.Kill(s.PID, 0) != nil {
		return s, false
	}
	u, err := url.Parse(s.URL)
	if err != nil || u.Host == "" {
		return s, false
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		return s, false
	}
	c.Close()
	return s, true
}

// ErrSharedRunning is ServeShared's refusal when dir names a live one.
var ErrSharedRunning = errors.New("runpodtest: a shared emulator is already running")

// ServeShared records srv in dir's SharedFile (mode 0600: it holds the
// account key) until ctx ends, then removes the file. It refuses when the
// file names an emulator that still runs.
func ServeShared(ctx context.Context, dir string, srv *Server) error {
	if s, ok := FindShared(dir); ok {
		return fmt.Errorf("%w at %s (pid %d)", ErrSharedRunning, s.URL, s.PID)
	}
	b, err := json.Marshal(Shared{URL: srv.URL, Key: srv.APIKey(), PID: os.Getpid()})
	if err != nil {
		return err
	}
	file := filepath.Join(dir, SharedFile)
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		return err
	}
	defer os.Remove(file)
	<-ctx.Done()
	return nil
}
