package podenv_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// fullEnv is an env with every name Env can write.
func fullEnv(t *testing.T) map[string]string {
	s := seedSettings()
	s.Keep, s.VolumeDir, s.VolumeGB, s.SecretEnv, s.MaxCostUSD = true, "/v", 5, []string{"X"}, 3
	s.Interval, s.LeaseTTL, s.SnapshotLead, s.SnapshotWait = time.Second, time.Second, time.Second, time.Second
	s.ProbeTries, s.ProbeWait, s.MaxExtension = 1, time.Second, time.Second
	return mustEnv(t, s)
}

// Every name Env writes belongs to the contract; a user's name does not.
func TestOwns(t *testing.T) {
	for name := range fullEnv(t) {
		if !podenv.Owns(name) {
			t.Errorf("Owns(%s) = false for a name Env writes", name)
		}
	}
	for _, name := range []string{"HF_HOME", "OVERBRAINER_DU", "PATH"} {
		if podenv.Owns(name) {
			t.Errorf("Owns(%s) = true", name)
		}
	}
}

// The names of the pod's env are spelled in Go only by podenv (which
// writes and reads them), the watchdog and the bootstrap (the pod side):
// any other Go code that needs one asks podenv. The exceptions are not the
// pod's contract but the same spelling for another fact, or the fake
// playing Runpod.
func TestContractNamesAreSpelledOnlyHere(t *testing.T) {
	allowed := map[string][]string{
		// The launcher's and the notebook's own setting of the client's
		// API, by the same name.
		"OVERBRAINER_API_URL": {"examples/launch/internal/launcher/launcher.go", "examples/notebook/main.go",
			// The local emulator points its pods' watchdogs at itself.
			"runpod/runpodtest/runner.go"},
		"OVERBRAINER_WORKDIR": {"runpod/runpodtest/runner.go"},
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	env := fullEnv(t)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch rel {
			case "podenv", "watchdog", "bootstrap", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for name := range env {
			if strings.Contains(string(b), `"`+name+`"`) && !slices.Contains(allowed[name], filepath.ToSlash(rel)) {
				t.Errorf("%s spells %q: ask podenv for it", rel, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A secret's description states until when its run needs it, and only a
// description written for that run reads back: an empty one states no
// time, and any other text (a user's, another run's) is an error, for a
// sweeper leaves a secret whose need it cannot read.
func TestHostKeySecretNeed(t *testing.T) {
	until := time.Date(2026, 12, 4, 15, 30, 0, 0, time.FixedZone("CET", 3600))
	desc := podenv.HostKeySecretDescription("20261204-120000-a1b2", until)
	if want := "overbrainer: host key of run 20261204-120000-a1b2, needed until 2026-12-04T14:30:00Z"; desc != want {
		t.Errorf("description %q, want %q", desc, want)
	}
	got, ok, err := podenv.HostKeySecretNeed("20261204-120000-a1b2", desc)
	if err != nil || !ok || !got.Equal(until) {
		t.Errorf("read back %s, %v, %v; want %s", got, ok, err, until)
	}
	if got, ok, err := podenv.HostKeySecretNeed("r1", ""); err != nil || ok || !got.IsZero() {
		t.Errorf("empty: %s, %v, %v; want no time and no error", got, ok, err)
	}
	for _, bad := range []string{
		podenv.HostKeySecretDescription("20261204-120000-ffff", until), // another run's
		desc + " ",
		strings.Replace(desc, "14:30:00Z", "tomorrow", 1),
		"my note about this secret",
		strings.Repeat("x", 70000),
	} {
		_, ok, err := podenv.HostKeySecretNeed("20261204-120000-a1b2", bad)
		if err == nil || ok {
			t.Errorf("%.40q: %v, %v; want an error", bad, ok, err)
			continue
		}
		if len(err.Error()) > 400 {
			t.Errorf("an error of %d bytes quotes the whole description", len(err.Error()))
		}
	}
}

// Only an id of NewRunID's form tells its run's start: a caller's id
// that merely begins like one does not.
func TestRunIDTime(t *testing.T) {
	id, err := podenv.NewRunID(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := podenv.RunIDTime(id); !ok || !at.Equal(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("RunIDTime(%s) = %v, %v", id, at, ok)
	}
	for _, id := range []string{"20200101-000000-mine", "20200101-000000-abcde", "20200101-000000-ABCD", "20200101-000000_abcd", "20200101-000000", "my-run", "20201301-000000-abcd"} {
		if at, ok := podenv.RunIDTime(id); ok {
			t.Errorf("RunIDTime(%s) = %v: not NewRunID's form", id, at)
		}
	}
}

// An extension past LongestExtension is refused: a sweeper relies on it.
func TestLongestExtension(t *testing.T) {
	r := podenv.Rules{Deadline: time.Now().Add(time.Hour), MaxExtension: podenv.LongestExtension}
	if err := r.CheckRules(); err != nil {
		t.Errorf("the longest extension: %v", err)
	}
	r.MaxExtension += time.Second
	var fe *podenv.FieldError
	if err := r.CheckRules(); !errors.As(err, &fe) || fe.Field != "MaxExtension" {
		t.Errorf("an extension past the longest: %v", err)
	}
}
