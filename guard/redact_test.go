package guard_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// A job that prints its secrets (set -x, a credential echoed) leaves them
// neither in the output Follow streams, nor in the job.log Collect brings
// back, nor in the pod's log: each is [REDACTED], each line of a value of
// many lines too.
func TestAJobsPrintedSecretsAreRedacted(t *testing.T) {
	const token = "tok_NeverPrintMe_0123456789"
	cred := "{\n  \"private_key\": \"MIIEvNeverPrintMe\"\n}"
	_, api := podRunner(t)
	dir := t.TempDir()
	job := writeJob(dir, `set -x
: "$API_TOKEN"
printf '%s\n' "$CRED_JSON"
echo done > "$OVERBRAINER_OUTPUTS/model"`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh", Secrets: map[string]string{"API_TOKEN": token, "CRED_JSON": cred}},
		Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	var podLog lockedBuffer
	run, err := guard.Launch(ctx, api, spec, guard.WithPodLog(&podLog), guard.WithPoll(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Delete(context.Background())
	if err := run.Start(ctx, guard.Job{}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, err := run.Follow(ctx, &out); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	if _, err := run.Collect(ctx, results); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	jobLog, err := os.ReadFile(filepath.Join(results, "job.log"))
	if err != nil {
		t.Fatal(err)
	}
	pod, _ := podLog.close()
	for name, text := range map[string]string{"Follow's output": out.String(), "job.log": string(jobLog), "pod.log": pod} {
		for _, v := range []string{token, "MIIEvNeverPrintMe"} {
			if strings.Contains(text, v) {
				t.Errorf("%s holds a secret (%.8s...):\n%s", name, v, text)
			}
		}
	}
	// The job did print them: the test would pass on a job that did not.
	for name, text := range map[string]string{"Follow's output": out.String(), "job.log": string(jobLog)} {
		// set -x's two lines and the credential printed.
		if !strings.Contains(text, "+ : [REDACTED]\n") || strings.Count(text, "[REDACTED]") < 3 {
			t.Errorf("%s lacks the redacted lines:\n%s", name, text)
		}
	}
}
