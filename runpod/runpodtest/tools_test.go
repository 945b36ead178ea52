package runpodtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A machine without the local pods' tools gets them installed when it can,
// and a clear message naming the packages when it cannot.
func TestCheckLocalInstallsMissingTools(t *testing.T) {
	if err := CheckPodRunner(); err != nil {
		t.Skip("the pod runner's own check fails first here:", err)
	}
	var stderr bytes.Buffer
	say := func(format string, args ...any) { fmt.Fprintf(&stderr, format+"\n", args...) }
	have := map[string]bool{"bash": true, "tar": true, "setsid": true}
	look := func(name string) bool { return have[name] }

	var installed [][]string
	tc := toolCheck{look: look, install: func(pkgs []string) error {
		installed = append(installed, pkgs)
		for _, t := range PodTools {
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
