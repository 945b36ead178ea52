package localpod

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A machine without the local pods' tools gets them installed when it can,
// and a clear message naming the packages when it cannot.
func TestCheckLocalInstallsMissingTools(t *testing.T) {
	if err := Check(); err != nil {
		t.Skip("the pod runner's own check fails first here:", err)
	}
	var stderr bytes.Buffer
	say := func(format string, args ...any) { fmt.Fprintf(&stderr, format+"\n", args...) }
	have := map[string]bool{"bash": true, "tar": true, "setsid": true}
	look := func(name string) bool { return have[name] }

	var installed [][]string
	tc := toolCheck{look: look, install: func(pkgs []string) error {
		installed = append(installed, pkgs)
		for _, t := range Tools {
			if slices.Contains(pkgs, t.Package) {
				have[t.Name] = true
			}
		}
		return nil
	}}
	if err := tc.ensure(say); err != nil {
		t.Fatal(err)
	}
	if len(installed) != 1 || !slices.Equal(installed[0], []string{"openssh-server", "curl"}) {
		t.Fatalf("installed %v", installed)
	}
	if !strings.Contains(stderr.String(), "installing openssh-server curl with apt-get") {
		t.Fatalf("stderr %q", stderr.String())
	}
	// Nothing missing: nothing installed.
	if err := tc.ensure(say); err != nil || len(installed) != 1 {
		t.Fatalf("second check: %v, %v", err, installed)
	}

	// Without a way to install, the error names the packages.
	have = map[string]bool{"bash": true, "tar": true, "setsid": true, "sshd": true}
	err := toolCheck{look: look}.ensure(say)
	if err == nil || !strings.Contains(err.Error(), "need curl: apt-get install curl") {
		t.Fatalf("err %v", err)
	}
	// A failed install says so.
	err = toolCheck{look: look, install: func([]string) error { return errors.New("no network") }}.ensure(say)
	if err == nil || !strings.Contains(err.Error(), "installing curl: no network") {
		t.Fatalf("err %v", err)
	}
}

// TestAptGetGetsACleanEnv: the installer runs apt-get with an env of its
// own, none of the caller's (an account key there must not reach apt-get
// or its hooks). A stub apt-get on PATH records what it was given.
func TestAptGetGetsACleanEnv(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "env")
	stub := "#!/bin/sh\nenv >> " + record + "\n"
	if err := os.WriteFile(filepath.Join(dir, "apt-get"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	t.Setenv("RUNPOD_API_KEY", "rpa_SECRETSECRETSECRET")
	t.Setenv("HF_TOKEN", "hf_SECRETSECRET")
	t.Setenv("http_proxy", "http://127.0.0.1:9")
	tc := systemTools(io.Discard)
	if tc.install == nil {
		t.Skip("the installer runs only as root")
	}
	if err := tc.install([]string{"curl"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	for _, bad := range []string{"SECRET", "RUNPOD_API_KEY", "HF_TOKEN", "http_proxy", dir} {
		if strings.Contains(env, bad) {
			t.Errorf("apt-get got %q in its env:\n%s", bad, env)
		}
	}
	if !strings.Contains(env, "DEBIAN_FRONTEND=noninteractive") || strings.Count(env, "DEBIAN_FRONTEND=") != 2 {
		t.Errorf("apt-get env, want DEBIAN_FRONTEND for both runs:\n%s", env)
	}
}
