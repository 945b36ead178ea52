package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// Job.Secrets travel on the start session's standard input, and nowhere
// else: not in an event, a saved Record, a log line or
// the start's command line.
func TestJobSecretsTravelOnStdinOnly(t *testing.T) {
	const wandb = "wandb_v1_NeverPrintMe_0123456789"
	gcs := "{\n  \"type\": \"service_account\",\n  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvNeverPrintMe\\n\"\n}\n"
	h := newHarness(t, look{st: ready}, look{st: running, out: "step\n"}, look{st: exited(0)})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	r, err := h.launch(ctx, h.spec(), WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	job := Job{Secrets: map[string]string{"WANDB_API_KEY": wandb, "GCS_KEY_JSON": gcs, "HF_TOKEN": hfToken}}
	if err := r.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Follow(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	want, err := jobctl.JobInput(nil, map[string]string{"WANDB_API_KEY": wandb, "GCS_KEY_JSON": gcs, "HF_TOKEN": hfToken})
	if err != nil {
		t.Fatal(err)
	}
	wantIn, _ := io.ReadAll(want)
	if len(h.pod.starts) != 1 || h.pod.starts[0].Stdin != string(wantIn) {
		t.Fatalf("start calls %+v: want the three secrets on stdin", h.pod.starts)
	}
	var seen []string
	for _, e := range h.allEvents() {
		seen = append(seen, fmt.Sprintf("%+v", e), fmt.Sprint(e.Err))
	}
	for _, rec := range h.allSaved() {
		b, _ := json.Marshal(rec)
		seen = append(seen, string(b))
	}
	seen = append(seen, h.pod.starts[0].Cmd, logs.String())
	for _, s := range seen {
		for _, v := range []string{wandb, "MIIEvNeverPrintMe", hfToken} {
			if strings.Contains(s, v) {
				t.Errorf("a secret (%.8s...) is in %.300s", v, s)
			}
		}
	}
}

// A bad secret name is refused before anything starts, by its name; a
// secret put in the pod's env too, by name or by value, is refused before
// any pod exists. No error shows a value.
func TestJobSecretsRefused(t *testing.T) {
	const value = "s3cr3t-NeverPrintMe"
	ctx := context.Background()
	h := newHarness(t, look{st: ready})
	r, err := h.launch(ctx, h.spec())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"BAD-NAME", "PATH", "RUNPOD_API_KEY", "OVERBRAINER_X", "9LIVES"} {
		err := r.Start(ctx, Job{Secrets: map[string]string{name: value}})
		var fe *podenv.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), value) {
			t.Errorf("secret %q: %v", name, err)
		}
	}
	if err := r.Start(ctx, Job{Secrets: map[string]string{"X": "a\x00" + value}}); err == nil || strings.Contains(err.Error(), value) {
		t.Errorf("a NUL in a value: %v", err)
	}
	if n := len(h.pod.starts); n != 0 {
		t.Fatalf("%d starts after refused secrets", n)
	}

	for _, podEnv := range []map[string]string{{"WANDB_API_KEY": "x"}, {"OTHER": "prefix-" + value}} {
		h := newHarness(t, look{st: ready})
		spec := h.spec()
		spec.Job.Secrets = map[string]string{"WANDB_API_KEY": value}
		spec.PodEnv = podEnv
		_, err := h.launch(ctx, spec)
		if err == nil || strings.Contains(err.Error(), value) || !strings.Contains(err.Error(), "WANDB_API_KEY") {
			t.Errorf("PodEnv %v: %v", podEnv, err)
		}
		if len(h.api.created) != 0 {
			t.Errorf("PodEnv %v: a pod was created", podEnv)
		}
	}
}

// The redactor (of the pod log's copy, the job's output, the downloaded
// logs) redacts a secret's value, and each line of a value of many lines,
// the longer first.
func TestRedactorRedactsSecrets(t *testing.T) {
	p := &redactor{}
	p.addSecret("abc") // too short to redact
	p.addSecret("line-one-of-it\n  line-two-of-it\n")
	p.addSecret("token-123456")
	p.addSecret("token-123456-longer")
	for in, want := range map[string]string{
		"t x line-one-of-it\n":         "t x [REDACTED]\n",
		"t x   line-two-of-it, more\n": "t x   [REDACTED], more\n",
		"t x token-123456-longer\n":    "t x [REDACTED]\n",
		"t x token-123456 abc\n":       "t x [REDACTED] abc\n",
	} {
		if got := p.redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// A job on a network volume finds its caches there, as defaults the pod's
// env may override; NoVolumeCaches, or no network volume, leaves them out.
func TestJobCachesOnTheNetworkVolume(t *testing.T) {
	for _, tc := range []struct {
		name   string
		volume string
		off    bool
		want   map[string]string
	}{
		{"network volume", "vol-1", false, map[string]string{
			"HF_HOME": "/workspace/.cache/huggingface", "TORCH_HOME": "/workspace/.cache/torch", "PIP_CACHE_DIR": "/workspace/.cache/pip"}},
		{"turned off", "vol-1", true, nil},
		{"no volume", "", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, look{st: ready})
			h.api.volumes["vol-1"] = 100
			spec := h.spec()
			spec.NetworkVolumeID, spec.NoVolumeCaches = tc.volume, tc.off
			ctx := context.Background()
			r, err := h.launch(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Start(ctx, Job{Secrets: map[string]string{"TORCH_HOME": "/secret/torch"}}); err != nil {
				t.Fatal(err)
			}
			if got := r.Record().NoVolumeCaches; got != tc.off {
				t.Errorf("Record.NoVolumeCaches %v", got)
			}
			want, err := jobctl.JobInput(tc.want, map[string]string{"TORCH_HOME": "/secret/torch"})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(want)
			if len(h.pod.starts) != 1 || h.pod.starts[0].Stdin != string(b) {
				t.Fatalf("start input %q, want %q", h.pod.starts, b)
			}
			if tc.want != nil && !strings.Contains(string(b), `[ -n "${HF_HOME-}" ] || HF_HOME='/workspace/.cache/huggingface'`) {
				t.Fatalf("HF_HOME is not a default: %s", b)
			}
		})
	}
}

// The job's output keeps no secret whatever its reads' bounds: a value
// split across two writes, or written a byte at a time, is redacted (a
// value of many lines whole, or line by line); an end that only begins
// one is written at the stream's end, and the rest as it was.
func TestRedactWriterAcrossWrites(t *testing.T) {
	p := &redactor{}
	p.addSecret("token-123456")
	p.addSecret("line-one-of-it\nline-two-of-it\n")
	in := "+ curl -H token-123456 x\n{line-one-of-it\nline-two-of-it}\nlast token-12"
	want := "+ curl -H [REDACTED] x\n{[REDACTED]}\nlast token-12"
	write := func(parts ...string) string {
		var b strings.Builder
		w := &redactWriter{w: &b, red: p}
		for _, s := range parts {
			if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	// The lines of a value are redacted each when its first came alone.
	check := func(how, got string) {
		t.Helper()
		if strings.ReplaceAll(got, "[REDACTED]\n[REDACTED]", "[REDACTED]") != want {
			t.Errorf("%s: %q, want %q", how, got, want)
		}
	}
	for i := range len(in) + 1 {
		check(fmt.Sprintf("split at %d", i), write(in[:i], in[i:]))
	}
	check("a byte at a time", write(strings.Split(in, "")...))
}

// The logs a download brought back have the job's secrets redacted,
// those of a download that then failed too.
func TestDownloadedLogsAreRedacted(t *testing.T) {
	const token = "tok_NeverPrintMe_0123456789"
	for _, fail := range []bool{false, true} {
		h := newHarness(t, look{st: ready}, look{st: exited(0)})
		dir := t.TempDir()
		jobLog := filepath.Join(dir, jobctl.JobLog)
		h.pod.onDownload = func() {
			if err := os.WriteFile(jobLog, []byte("+ : "+token+"\n"), 0o600); err != nil {
				t.Error(err)
			}
		}
		if fail {
			h.pod.downloadErr = errors.New("fake: the download broke")
		}
		spec := h.spec()
		spec.Job.Secrets = map[string]string{"API_TOKEN": token}
		r := h.mustStart(spec)
		if _, err := r.Follow(context.Background(), io.Discard); err != nil {
			t.Fatal(err)
		}
		_, err := r.CollectSoFar(context.Background(), dir)
		if (err != nil) != fail {
			t.Fatalf("CollectSoFar: %v", err)
		}
		if b, err := os.ReadFile(jobLog); err != nil || string(b) != "+ : [REDACTED]\n" {
			t.Errorf("failed download %v: job.log = %q, %v", fail, b, err)
		}
	}
}
