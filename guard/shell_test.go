package guard_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// On an emulator pod, from a Run attached from the launched one's Record
// as another process would: a command's output and exit status through
// Shell, the real OpenSSH client through the written ssh_config (and its
// refusal of another host key), then a cancel of the running job, whose
// results so far are collected before the pod is deleted.
func TestShellSSHConfigAndCancel(t *testing.T) {
	shtest.NeedPods(t, localpod.Check())
	sshBin := shtest.NeedTool(t, "ssh")
	srv := runpodtest.NewTestServer(t, runpodtest.WithPodRunner())
	api := checkedfake.Client(t, srv)
	dir := t.TempDir()
	job := filepath.Join(dir, "job")
	script := "echo first > \"$OVERBRAINER_OUTPUTS/partial\"; echo started; while :; do sleep 0.1; done\n"
	if err := os.Mkdir(job, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(job, "train.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh", Secrets: map[string]string{"API_TOKEN": "tok_NotInASession_42"}},
		Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	launched, err := guard.Launch(ctx, api, spec, guard.WithPoll(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer launched.Delete(ctx)
	if err := launched.Start(ctx, guard.Job{}); err != nil {
		t.Fatal(err)
	}
	launched.Detach()
	run, err := guard.Attach(ctx, api, launched.Record(), guard.WithPoll(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Delete(ctx)

	var out, errb bytes.Buffer
	err = run.Shell(ctx, podssh.ShellOptions{Command: "echo ok; echo oops >&2; exit 3", Stdout: &out, Stderr: &errb})
	var ce *podssh.CommandError
	if !errors.As(err, &ce) || ce.Status != 3 || out.String() != "ok\n" || errb.String() != "oops\n" {
		t.Fatalf("Shell = %v; stdout %q, stderr %q: want exit 3, ok and oops apart", err, out.String(), errb.String())
	}
	// A session is in the run directory with the job's variables, not
	// its secrets.
	out.Reset()
	err = run.Shell(ctx, podssh.ShellOptions{Command: `echo "$(pwd) $OVERBRAINER_RUN_DIR $OVERBRAINER_OUTPUTS ${API_TOKEN-none}"`, Stdout: &out, Stderr: &errb})
	rd := run.Record().RunDir
	if want := rd + " " + rd + " " + rd + "/outputs none\n"; err != nil || out.String() != want {
		t.Errorf("Shell in the job's surroundings: %v, %q, want %q", err, out.String(), want)
	}

	cfg, err := run.WriteSSHConfig(ctx, filepath.Join(dir, "ssh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ssh_config", "known_hosts", "id_ed25519"} {
		if fi, err := os.Stat(filepath.Join(dir, "ssh", name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want 0600", name, err, fi.Mode())
		}
		// The client's key is in its own file only.
		if b, _ := os.ReadFile(filepath.Join(dir, "ssh", name)); strings.Contains(string(b), "PRIVATE KEY") != (name == "id_ed25519") {
			t.Errorf("%s: holds the private key: %v", name, name != "id_ed25519")
		}
	}
	openssh := func() (string, error) {
		cmd := exec.Command(sshBin, "-F", cfg.File, "-o", "BatchMode=yes", cfg.Alias, "echo", "ok")
		cmd.Stdin = nil
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if got, err := openssh(); err != nil || got != "ok\n" {
		t.Fatalf("ssh -F %s %s: %v\n%s", cfg.File, cfg.Alias, err, got)
	}
	if !strings.Contains(cfg.Command, cfg.File) || !strings.HasSuffix(cfg.Command, " "+cfg.Alias) {
		t.Errorf("command %q", cfg.Command)
	}
	// Another host key for the alias: ssh refuses the pod, asking nothing.
	other, err := podssh.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	known := filepath.Join(dir, "ssh", "known_hosts")
	if err := os.WriteFile(known, []byte(cfg.Alias+" "+other.AuthorizedKey("")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := openssh(); err == nil || strings.Contains(got, "ok\n") || !strings.Contains(got, "Host key verification failed") {
		t.Fatalf("ssh with another host key pinned: %v\n%s", err, got)
	}

	res, err := run.Cancel(ctx)
	if err != nil || res != guard.CancelStopped {
		t.Fatalf("Cancel = %q, %v", res, err)
	}
	if st := run.State(); st.PID <= 0 || !st.Started() || !st.Ended() || st.Lost() || !st.Cancelled {
		t.Fatalf("the state after the cancel: %+v, started %v, ended %v, lost %v", st, st.Started(), st.Ended(), st.Lost())
	}
	end, err := run.Follow(ctx, io.Discard)
	if err != nil || end.How != guard.HowCancelled {
		t.Fatalf("Follow after the cancel = %v, %v", end, err)
	}
	if res, err := run.Cancel(ctx); err != nil || res != guard.CancelEnded {
		t.Fatalf("a second Cancel = %q, %v", res, err)
	}
	results := filepath.Join(dir, "results")
	if _, err := run.Collect(ctx, results); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(results, guard.OutputsDir, "partial")); string(b) != "first\n" {
		t.Errorf("outputs/partial %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(results, "cancelled")); string(b) != jobctl.CancelClient+"\n" {
		t.Errorf("cancelled marker %q", b)
	}
	if _, err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Billing()); n != 0 {
		t.Fatalf("%d pods still billing", n)
	}
}
