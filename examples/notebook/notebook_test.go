package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// maxLines is the notebook's budget of lines of code: 80 for issue 13,
// kept with the check that a cell's API answers and the choice of cells
// (issue 45).
const maxLines = 80

// The notebook stays a notebook: at most maxLines lines of code, comments
// and blank lines aside, and only the module's exported packages.
func TestNotebookIsSmallAndUsesExportedPackagesOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		n := linesOfCode(t, file, src)
		t.Logf("%s: %d lines of code", file, n)
		total += n
		f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if err := exported(path); err != nil {
				t.Errorf("%s imports %s: %v", file, path, err)
			}
		}
	}
	if total > maxLines {
		t.Errorf("the notebook has %d lines of code, more than %d", total, maxLines)
	}
}

// exported refuses an import a program of another module could not make,
// or one of the module's internal packages.
func exported(path string) error {
	first, _, _ := strings.Cut(path, "/")
	if !strings.Contains(first, ".") {
		return nil // the standard library
	}
	if !strings.HasPrefix(path, "github.com/overbrainer/overbrainer-go/") {
		return fmt.Errorf("not a package of this module or the standard library")
	}
	for _, elem := range strings.Split(path, "/") {
		if elem == "internal" {
			return fmt.Errorf("an internal package")
		}
	}
	return nil
}

// linesOfCode counts the lines that hold a token other than a comment.
func linesOfCode(t *testing.T, name string, src []byte) int {
	t.Helper()
	fset := token.NewFileSet()
	file := fset.AddFile(name, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, func(pos token.Position, msg string) { t.Fatalf("%s: %s", pos, msg) }, 0)
	lines := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue // inserted at a line's end
		}
		first := fset.Position(pos).Line
		for l := first; l <= first+strings.Count(lit, "\n"); l++ {
			lines[l] = true
		}
	}
	return len(lines)
}

func TestLinesOfCode(t *testing.T) {
	src := "package p\n\n// a comment\nimport \"fmt\" // trailing\n\n/* a\nblock */\nvar s = `two\nlines`\n"
	if n := linesOfCode(t, "p.go", []byte(src)); n != 4 {
		t.Errorf("linesOfCode = %d, want 4", n)
	}
}

// needPods skips (or fails with REQUIRE_SHELLS=1) where pods cannot run.
func needPods(t *testing.T) {
	t.Helper()
	shtest.NeedPods(t, localpod.Check())
}

// runNotebook builds the notebook and runs it in a fresh directory, with
// the variables of env added to this process's (less its Runpod and
// overbrainer ones), checks that it exited 0 once the job said "training
// done" and its pod was deleted, and returns what it printed.
func runNotebook(t *testing.T, env ...string) (stdout string) {
	t.Helper()
	dir := t.TempDir()
	out, errOut, err := runCells(t, buildNotebook(t), dir, env)
	if err != nil {
		t.Fatalf("notebook: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "\ntraining done\n") {
		t.Errorf("no \"training done\" line in the notebook's output:\n%s", out.String())
	}
	rec, err := guard.LoadRecord(filepath.Join(dir, "overbrainer-notebook", "record.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ExitCode == nil || *rec.ExitCode != 0 || rec.Ended.IsZero() {
		t.Errorf("the saved Record (phase %s, ended %v, note %q) has no exit code 0 or no end", rec.Phase, rec.Ended, rec.Note)
	}
	if line := fmt.Sprintf("# pod %s deleted\n", rec.PodID); !strings.Contains(out.String(), line) {
		t.Errorf("no %q in the notebook's output:\n%s", line, out.String())
	}
	return out.String()
}

// buildNotebook builds the notebook's program.
func buildNotebook(t *testing.T) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "notebook")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the notebook: %v\n%s", err, out)
	}
	return binary
}

// runCells runs the notebook's binary in dir with the cells named (all of
// them when none), the variables of env added to this process's (less its
// Runpod and overbrainer ones). It waits at most 3 minutes: much less
// than Attach's 20 minutes of waiting for a pod.
func runCells(t *testing.T, binary, dir string, env []string, cells ...string) (stdout, stderr *bytes.Buffer, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, cells...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNPOD_") && !strings.HasPrefix(kv, "OVERBRAINER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// The notebook's own emulator kills its pods when it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the cells %v did not end within 3 minutes\nstdout:\n%s\nstderr:\n%s", cells, out.String(), errOut.String())
	}
	if strings.Contains(out.String()+errOut.String(), "PRIVATE KEY") {
		t.Error("the notebook printed a private key")
	}
	return &out, &errOut, err
}

// A cell whose API went away (its local-server stopped after the launch
// cell) fails at once, saying so, instead of waiting for the pod for the
// start timeout.
func TestACellWhoseAPIIsGoneFails(t *testing.T) {
	t.Parallel()
	needPods(t)
	srv := runpodtest.NewTestServer(t, runpodtest.WithPodRunner(), runpodtest.AllowPodsLeft())
	env := []string{"RUNPOD_API_KEY=" + srv.APIKey(), podenv.APIURLEnv + "=" + srv.BaseURL()}
	binary, dir := buildNotebook(t), t.TempDir()
	if out, errOut, err := runCells(t, binary, dir, env, "launch"); err != nil {
		t.Fatalf("launch cell: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	srv.Close()
	out, errOut, err := runCells(t, binary, dir, env, "start")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("start cell with its API gone: %v, want exit 1\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	mustContain := "notebook: the Runpod API at " + srv.BaseURL() + " does not answer"
	if !strings.Contains(errOut.String(), mustContain) || !strings.Contains(errOut.String(), "local-server") {
		t.Fatalf("stderr lacks %q:\n%s", mustContain, errOut)
	}
	if _, _, err := runCells(t, binary, dir, env, "nonesuch"); err == nil {
		t.Fatal("an unknown cell was accepted")
	}
}

// The cells on an emulator that outlives them, as in gonb with a
// local-server: the pod is gone once the notebook exited, and so is the
// secret, and the key never shows.
func TestNotebookOnAnEmulatorThatOutlivesIt(t *testing.T) {
	t.Parallel()
	needPods(t)
	srv := runpodtest.NewTestServer(t, runpodtest.WithPodRunner())
	out := runNotebook(t, "RUNPOD_API_KEY="+srv.APIKey(),
		podenv.APIURLEnv+"="+srv.BaseURL())
	if strings.Contains(out, srv.APIKey()) {
		t.Error("the notebook printed the API key")
	}
	pods := srv.Pods()
	if len(pods) != 1 || pods[0].Status != "TERMINATED" || pods[0].Billing {
		t.Errorf("pods after the notebook: %+v, want one, TERMINATED and not billing", pods)
	}
	if s := srv.Secrets(); len(s) != 0 {
		t.Errorf("%d secret(s) left", len(s))
	}
}

// Without RUNPOD_API_KEY the notebook runs every cell on an emulator of its
// own, and exits 0 only once its pod is deleted.
func TestNotebookOnItsOwnEmulator(t *testing.T) {
	t.Parallel()
	needPods(t)
	runNotebook(t)
}
