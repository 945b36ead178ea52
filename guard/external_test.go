package guard_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// userMain is a program of another module: the whole cycle of a guarded
// run on an emulator of its own, with the module's exported packages only.
// It prints its pods before it closes the emulator (which would end them
// whatever the program did).
const userMain = `package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

func main() {
	// The emulator's pods are this program, re-executed as their init.
	localpod.PodInit()
	srv := runpodtest.NewServer(runpodtest.WithPodRunner())
	err := cycle(srv)
	for _, p := range srv.Pods() {
		fmt.Printf("pod %s %s billing=%v\n", p.ID, p.Status, p.Billing)
	}
	srv.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "user:", err)
		os.Exit(1)
	}
}

func cycle(srv *runpodtest.Server) error {
	ctx := context.Background()
	api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		return err
	}
	if err := os.MkdirAll("job", 0o755); err != nil {
		return err
	}
	script := "echo training; echo 42 > \"$OVERBRAINER_OUTPUTS/answer\"; echo done\n"
	if err := os.WriteFile("job/train.sh", []byte(script), 0o644); err != nil {
		return err
	}
	spec := guard.Spec{Job: guard.Job{Dir: "job", Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	run, err := guard.Launch(ctx, api, spec, guard.WithPoll(500*time.Millisecond))
	if err != nil {
		return err
	}
	if err := run.Start(ctx, guard.Job{}); err != nil {
		return err
	}
	end, err := run.Follow(ctx, os.Stdout)
	if err != nil {
		return err
	}
	if _, err := run.Collect(ctx, "results"); err != nil {
		return err
	}
	res, err := run.Delete(ctx)
	fmt.Println("delete:", res)
	if err != nil {
		return err
	}
	return end.Err()
}
`

// A Go program in another module, with its own go.mod and a replace to
// this checkout, launches, follows, collects and deletes a guarded run on
// the local emulator with the exported packages alone (Go refuses the
// internal ones there). The build uses the local module cache only.
func TestAProgramOfAnotherModule(t *testing.T) {
	shtest.NeedPods(t, localpod.Check())
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goMod := "module example.com/user\n\ngo 1.26.0\n\n" +
		"require github.com/overbrainer/overbrainer-go v0.0.0\n\n" +
		"replace github.com/overbrainer/overbrainer-go => " + checkout + "\n"
	for name, content := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "main.go": []byte(userMain)} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", ".")
	cmd.Dir = dir
	// -mod=mod lets go add the requirements the replaced module brings;
	// GOPROXY=off keeps it to the module cache.
	cmd.Env = append(os.Environ(), "GOFLAGS="+goFlags(t)+" -mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"\ntraining\n", "\ndone\n", "\ndelete: deleted\n"} {
		if !strings.Contains("\n"+out.String(), want) {
			t.Errorf("no %q in its output:\n%s", strings.TrimSpace(want), out.String())
		}
	}
	pods := regexp.MustCompile(`(?m)^pod \S+ (\S+) billing=(\S+)$`).FindAllStringSubmatch(out.String(), -1)
	if len(pods) != 1 || pods[0][1] != "TERMINATED" || pods[0][2] != "false" {
		t.Errorf("its pods before its emulator closed: %q, want one TERMINATED, not billing", pods)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "results", "outputs", "answer")); err != nil || string(b) != "42\n" {
		t.Errorf("its collected answer: %q, %v", b, err)
	}
}

// goFlags is the go command's GOFLAGS (its environment's, or go env's).
func goFlags(t *testing.T) string {
	t.Helper()
	b, err := exec.Command("go", "env", "GOFLAGS").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
