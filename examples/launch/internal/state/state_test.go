package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
)

func mode(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestRunsArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := podenv.NewRunID(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckID(id); err != nil || len(id) != len("20260301-120000-abcd") || id[:16] != "20260301-120000-" {
		t.Fatalf("id %q: %v", id, err)
	}
	code := 0
	r := &Run{
		Record: guard.Record{
			ID: id, PodName: "overbrainer-" + id, ClientKey: "-----BEGIN OPENSSH PRIVATE KEY-----\n",
			HostKey: "ssh-ed25519 AAAA",
			Plan:    podenv.Plan{Rules: podenv.Rules{Deadline: time.Unix(1700003600, 0).UTC()}},
			Poll:    2 * time.Second, Phase: PhaseRunning, ExitCode: &code, LogOffset: 42,
		},
		Created: time.Unix(1700000000, 0).UTC(),
	}
	if err := s.Create(r); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(r); err == nil {
		t.Fatal("a run was created twice")
	}
	for p, want := range map[string]fs.FileMode{
		dir:                                      0o700,
		filepath.Join(dir, "runs"):               0o700,
		s.RunPath(id):                            0o700,
		filepath.Join(s.RunPath(id), "run.json"): 0o600,
	} {
		if got := mode(t, p); got != want {
			t.Errorf("%s: mode %o, want %o", p, got, want)
		}
	}
	back, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	// A run saved before the client key moved into run.json keeps its
	// key in a file of its own: Load still finds it.
	old := *back
	old.ClientKey = ""
	if err := s.Save(&old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.RunPath(id), "client_key"), []byte(r.ClientKey), 0o600); err != nil {
		t.Fatal(err)
	}
	if back, err := s.Load(id); err != nil || back.ClientKey != r.ClientKey {
		t.Fatalf("the old layout's key: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(s.RunPath(id), ".tmp-*"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestListKeepsBrokenRuns(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"b", "a"} {
		if err := s.Create(&Run{Record: guard.Record{ID: id}, Created: time.Unix(int64(100-i), 0)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(s.RunPath("broken"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.RunPath("broken"), "run.json"), []byte("{"), 0o600)
	os.Mkdir(filepath.Join(s.Dir, "runs", "not a run"), 0o700)
	runs, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids, phases []string
	for _, r := range runs {
		ids = append(ids, r.ID)
		phases = append(phases, string(r.Phase))
	}
	if diff := cmp.Diff([]string{"broken", "a", "b"}, ids); diff != "" {
		t.Fatal(diff)
	}
	if phases[0] != string(PhaseUnknown) {
		t.Fatalf("broken run phase %q", phases[0])
	}
	if _, err := s.Load("nope"); !errors.Is(err, ErrNoRun) {
		t.Fatal(err)
	}
	if _, err := s.Load("../x"); err == nil {
		t.Fatal("a path was taken for a run id")
	}
}

func TestLock(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(&Run{Record: guard.Record{ID: "r"}}); err != nil {
		t.Fatal(err)
	}
	l, err := s.TryLock("r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryLock("r"); !errors.Is(err, ErrBusy) {
		t.Fatalf("second lock: %v", err)
	}
	l.Unlock()
	l2, err := s.TryLock("r")
	if err != nil {
		t.Fatal(err)
	}
	l2.Unlock()
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(EnvDir, "/somewhere")
	if d, _ := DefaultDir(); d != "/somewhere" {
		t.Fatal(d)
	}
	t.Setenv(EnvDir, "")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	if d, _ := DefaultDir(); d != "/cfg/overbrainer/launch" {
		t.Fatal(d)
	}
}
