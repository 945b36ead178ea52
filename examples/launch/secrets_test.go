package main_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// The job's secrets reach the job's environment, and nothing else: no file
// on the pod, no other process's environment or command line, not the
// pod's env, the Record, the state directory, the launcher's output, the
// pod's log or an API request.
func TestSecretReachesTheJobOnly(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	wandb := "wandb_" + stamp + "_NeverPrintMe"
	marker := "MIIEv" + stamp + "KeyBody"
	gcs := "{\n  \"type\": \"service_account\",\n  \"private_key\": \"" + marker + "\"\n}\n"
	w.env = append(w.env, "WANDB_API_KEY="+wandb, "GCS_SOURCE="+gcs)
	job := t.TempDir()
	script := `printf '%s' "$WANDB_API_KEY" | sha256sum | cut -c1-64 > "$OVERBRAINER_OUTPUTS/wandb.sha256"
printf '%s' "$GCS_KEY" | sha256sum | cut -c1-64 > "$OVERBRAINER_OUTPUTS/gcs.sha256"
echo "job waits for its stop"
while [ ! -f "$OVERBRAINER_SNAPSHOT_REQUEST" ]; do sleep 0.2; done
echo "job stops"
`
	if err := os.WriteFile(filepath.Join(job, "job.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p := w.start(args([]string{"run", "--job", job, "--cmd", "sh job.sh", "--secret", "WANDB_API_KEY", "--secret", "GCS_KEY=GCS_SOURCE"}, fast)...)
	p.waitOutput("job waits for its stop", patience)
	r := w.onlyRun()
	secrets := []string{wandb, marker}

	// Every file the pod's tmpfs hold (its run directory, /etc/overbrainer,
	// /etc/ssh, /root, /tmp, /dev/shm), and every other file written
	// since the bootstrap wrote the job's env (all of / but the host's
	// /work and /farm trees, which no pod writes to).
	files := fmt.Sprintf(`{ find / -xdev \( -path /proc -o -path /sys -o -path /work -o -path /farm \) -prune -o -type f -newer %[1]s -print
find %[1]s /etc/overbrainer /etc/ssh /root /tmp /dev/shm /workspace -type f; } 2>/dev/null | tar -cf - --ignore-failed-read -T - 2>/dev/null
exit 0`, podenv.JobEnv)
	tarred := w.command("ssh", r.ID, "--", "sh", "-c", files)
	var tb, terr bytes.Buffer
	tarred.Stdout, tarred.Stderr = &tb, &terr
	if err := tarred.Run(); err != nil {
		t.Fatalf("ssh tar: %v\n%s", err, terr.String())
	}
	n := 0
	tr := tar.NewReader(&tb)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the pod's files: %v", err)
		}
		b, _ := io.ReadAll(tr)
		n++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("the pod's file /%s holds a secret", h.Name)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d files read from the pod", n)
	}

	// Every process of the pod (it has a PID namespace of its own): the
	// environment of those outside the job's process group, and every
	// command line.
	procs := `echo "JOB $(cat ` + r.RunDir + `/job.pid)"
for d in /proc/[0-9]*; do
  set -- $(cat "$d/stat" 2>/dev/null | sed 's/.*) //')
  printf '== %s %s\n' "${d#/proc/}" "$3"
  tr '\0' '\n' < "$d/environ" 2>/dev/null
  printf '== cmdline\n'
  tr '\0' ' ' < "$d/cmdline" 2>/dev/null; echo
done`
	ps := w.run("ssh", r.ID, "--", "sh", "-c", procs)
	if ps.code != 0 {
		t.Fatalf("ssh procs: exit %d\n%s", ps.code, ps.stderr)
	}
	jobGroup, inJob, cmdline, seen := "", false, false, 0
	for _, l := range strings.Split(ps.stdout.String(), "\n") {
		switch f := strings.Fields(l); {
		case len(f) == 2 && f[0] == "JOB":
			jobGroup = f[1]
		case len(f) == 3 && f[0] == "==":
			inJob, cmdline, seen = f[2] == jobGroup, false, seen+1
		case len(f) == 2 && f[0] == "==" && f[1] == "cmdline":
			cmdline = true
		default:
			for _, s := range secrets {
				if strings.Contains(l, s) && (cmdline || !inJob) {
					t.Errorf("a process of the pod outside the job's environment holds a secret: %.200s", l)
				}
			}
		}
	}
	if jobGroup == "" || seen < 3 {
		t.Fatalf("job group %q, %d processes:\n%s", jobGroup, seen, ps.stdout)
	}

	if s := w.run("stop", r.ID); s.code != 0 {
		t.Fatalf("stop exit %d", s.code)
	}
	if code := p.wait(patience); code != 0 {
		t.Fatalf("run exit %d", code)
	}
	for name, want := range map[string]string{"wandb.sha256": wandb, "gcs.sha256": gcs} {
		sum := sha256.Sum256([]byte(want))
		got, err := os.ReadFile(filepath.Join(r.OutDir, "outputs", name))
		if err != nil || strings.TrimSpace(string(got)) != hex.EncodeToString(sum[:]) {
			t.Errorf("the job did not get its secret (%s): %q %v", name, got, err)
		}
	}
	for what, s := range map[string]string{"stdout": p.stdout.String(), "stderr": p.stderr.String()} {
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("a secret is in the launcher's %s", what)
			}
		}
	}
	for _, pod := range w.srv.Pods() {
		for _, sec := range secrets {
			if strings.Contains(fmt.Sprint(pod.Env, pod.Args), sec) || strings.Contains(w.srv.PodLog(pod.ID), sec) {
				t.Errorf("a secret reached pod %s's env, command or log", pod.ID)
			}
		}
	}
	for _, req := range w.srv.Requests() {
		for _, sec := range secrets {
			if strings.Contains(string(req.Body), sec) || strings.Contains(fmt.Sprint(req.Header), sec) {
				t.Errorf("a secret was sent to the API: %s %s", req.Method, req.Path)
			}
		}
	}
	// The state directory (run.json, the Record, pod.log): the names and
	// the variables they come from, never a value.
	run, err := os.ReadFile(filepath.Join(w.stateDir, "runs", r.ID, "run.json"))
	if err != nil || !strings.Contains(string(run), `"GCS_KEY": "GCS_SOURCE"`) {
		t.Errorf("run.json does not name the secrets' variables (%v):\n%s", err, run)
	}
	w.assertPrivate(append(secrets, w.srv.APIKey())...)
	w.assertClean()
}

// A bad secret name, or one whose variable is unset, is refused before
// anything is created, by its name.
func TestBadSecretIsAUsageError(t *testing.T) {
	t.Parallel()
	w := newAPIWorld(t)
	w.env = append(w.env, "SET_ONE=s3cr3t-NeverPrintMe")
	for _, c := range []struct{ flag, says string }{
		{"BAD-NAME", `"BAD-NAME" is not a variable name`},
		{"RUNPOD_API_KEY", "RUNPOD_API_KEY: names starting with"},
		{"PATH=SET_ONE", "PATH is the shell's own variable"},
		{"WANDB_API_KEY=UNSET_ONE", "secret WANDB_API_KEY: the variable UNSET_ONE is empty or not set"},
	} {
		p := w.run("run", "--secret", c.flag)
		if p.code != 2 {
			t.Errorf("--secret %s: exit %d, want 2\n%s", c.flag, p.code, p.stderr)
		}
		mustContain(t, "--secret "+c.flag, p.stderr.String(), c.says, "usage: launch run")
		if strings.Contains(p.stderr.String(), "NeverPrintMe") {
			t.Errorf("--secret %s: a value is in the error", c.flag)
		}
	}
	if len(w.srv.Pods()) != 0 || len(w.runs()) != 0 {
		t.Fatal("a refused secret created something")
	}
}
