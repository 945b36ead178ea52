package main_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// A run detached from the launcher that started it: ssh runs commands on
// its pod with their output and exit status, OpenSSH reaches it through
// the written ssh_config, an interactive session on a real terminal
// follows the terminal's size, and cancel stops the job at once, collects
// and deletes the pod.
func TestSSHThenCancel(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(args([]string{"run", "--detach"}, fast, demo(600))...)
	p.waitOutput("step 2/600", patience)
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130", code)
	}
	r := w.onlyRun()

	ok := w.run("ssh", r.ID, "--", "echo", "ok")
	if ok.code != 0 || ok.stdout.String() != "ok\n" {
		t.Fatalf("ssh -- echo ok: exit %d, stdout %q\n%s", ok.code, ok.stdout, ok.stderr)
	}
	config := filepath.Join(w.stateDir, "runs", r.ID, "ssh_config")
	mustContain(t, "ssh stderr", ok.stderr.String(), "ssh -F '"+config+"' "+r.PodName)
	// Each word reaches the pod as it is.
	if three := w.run("ssh", r.ID, "--", "sh", "-c", "echo \"$0\"; exit 3", "it's"); three.code != 3 || three.stdout.String() != "it's\n" {
		t.Fatalf("ssh -- sh -c 'exit 3': exit %d, stdout %q, want 3", three.code, three.stdout)
	}
	// A session starts in the run directory, with the job's variables.
	if here := w.run("ssh", r.ID, "--", "sh", "-c", `echo "$PWD $OVERBRAINER_OUTPUTS"`); here.stdout.String() != r.RunDir+" "+r.RunDir+"/outputs\n" {
		t.Errorf("ssh -- echo $PWD $OVERBRAINER_OUTPUTS: %q, want the run directory and its outputs", here.stdout)
	}
	openssh := exec.Command(shtest.NeedTool(t, "ssh"), "-F", config, "-o", "BatchMode=yes", r.PodName, "cat", r.RunDir+"/job.pid")
	if out, err := openssh.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("ssh -F %s %s: %v\n%s", config, r.PodName, err, out)
	}

	// Without a terminal (a pipe), the shell reads its commands from it.
	piped := w.command("ssh", r.ID)
	piped.Stdin = strings.NewReader("echo piped-$((6*7))\n")
	if out, err := piped.Output(); err != nil || !strings.Contains(string(out), "piped-42") {
		t.Fatalf("ssh with a pipe for stdin: %v, stdout %q", err, out)
	}
	interactive(t, w, r)

	c := w.run("cancel", r.ID)
	if c.code != 0 {
		t.Fatalf("cancel exit %d", c.code)
	}
	mustContain(t, "cancel stderr", c.stderr.String(), "job cancelled: its process group was stopped", "results downloaded", "deleted", "cost: ~$")
	r = w.onlyRun()
	if r.Phase != state.PhaseDone {
		t.Errorf("phase %s after the cancel", r.Phase)
	}
	if b, _ := os.ReadFile(filepath.Join(r.OutDir, "cancelled")); string(b) != "client\n" {
		t.Errorf("cancelled marker %q", b)
	}
	// No checkpoint was asked for: the job was stopped where it was.
	if log, _ := os.ReadFile(filepath.Join(r.OutDir, "job.log")); !strings.Contains(string(log), "step 2/600") || strings.Contains(string(log), "snapshot requested") {
		t.Errorf("job.log:\n%s", log)
	}
	w.assertClean()
	w.assertPrivate(w.srv.APIKey())
}

// interactive drives "launch ssh RUN" through a real terminal: a typed
// command's output, the size following the terminal's, the exit status.
func interactive(t *testing.T, w *world, r *state.Run) {
	t.Helper()
	cmd := w.command("ssh", r.ID)
	cmd.SysProcAttr = nil // pty makes it a session leader with the terminal
	term, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	var screen shtest.SyncBuffer
	go func() { _, _ = io.Copy(&screen, term) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Types line until the screen shows want: the first lines may come
	// before the remote shell reads, a resize travels apart from them.
	typeUntil := func(line, want string) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for !strings.Contains(screen.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q after typing %q:\n%s", want, line, screen.String())
			}
			if _, err := io.WriteString(term, line+"\r"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	typeUntil("stty size", "24 80")
	if err := pty.Setsize(term, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	typeUntil("stty size", "40 120")
	typeUntil("echo typed-$((6*7))", "typed-42")
	if _, err := io.WriteString(term, "exit 5\r"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if code := cmd.ProcessState.ExitCode(); code != 5 {
			t.Fatalf("the interactive ssh ended with %v, exit %d, want 5:\n%s", err, code, screen.String())
		}
	case <-time.After(patience):
		_ = cmd.Process.Kill()
		t.Fatalf("the interactive ssh did not end:\n%s", screen.String())
	}
}

// --keep-pod warns as the job starts, with the price and how to reach and
// remove the pod; a cancel once the job ended only says so and collects,
// and the kept pod stays until rm.
func TestKeepPodWarnsAndCancelAfterTheEnd(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.run(args([]string{"run", "--keep-pod"}, fast, demo(1))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	r := w.onlyRun()
	warning := lineWith(p.stderr.String(), "warning: pod "+r.PodID+" is kept")
	for _, want := range []string{"~$0.690/h", "launch rm " + r.ID, "launch ssh " + r.ID, "ssh -F ", "after 1h0m0s with no SSH session open"} {
		if !strings.Contains(warning, want) {
			t.Errorf("warning %q lacks %q", warning, want)
		}
	}
	if strings.Index(p.stderr.String(), warning) > strings.Index(p.stderr.String(), "job ended") {
		t.Error("the warning came after the job's end")
	}
	c := w.run("cancel", r.ID)
	if c.code != 0 {
		t.Fatalf("cancel exit %d", c.code)
	}
	mustContain(t, "cancel stderr", c.stderr.String(), "the job had ended already", "results downloaded", "is kept (--keep-pod)")
	if rm := w.run("rm", r.ID); rm.code != 0 {
		t.Fatalf("rm exit %d", rm.code)
	}
	w.assertClean()
	// Once its pod is gone, a run has nothing to reach or cancel.
	for _, cmd := range [][]string{{"ssh", r.ID, "--", "true"}, {"cancel", r.ID}} {
		if p := w.run(cmd...); p.code != 1 || !strings.Contains(p.stderr.String(), "has ended") {
			t.Errorf("%s after rm: exit %d\n%s", cmd[0], p.code, p.stderr)
		}
	}
}
