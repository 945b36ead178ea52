package chaos_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The boot-file cells: a FIFO that an earlier pod or job left where the
// bootstrap writes first, in the run directory on a network volume (the
// watchdog's temporary file, the claim). A real guarded run boots on the
// fake's pod runner (the production bootstrap, under bash); the launch is
// told to leave a failed pod, so that only the pod side can delete it.
func TestChaosBootFIFOs(t *testing.T) {
	needPods(t)
	var left atomic.Int64
	t.Run("cases", func(t *testing.T) {
		for _, c := range []struct {
			name, file string
			// boots says the run must boot and finish; else the boot
			// guard must fail the bootstrap and the watchdog delete it.
			boots bool
		}{
			{"watchdog_tmp", "watchdog.sh.tmp", true},
			{"claim", "claim", false},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				srv := runpodtest.NewTestServer(t, runpodtest.WithPodRunner(), runpodtest.AllowPodsLeft())
				vol := srv.AddNetworkVolume("", 20)
				runID := "fifo-" + strings.ReplaceAll(c.name, "_", "-")
				podDir := filepath.Join(vol.Dir, "overbrainer", runID, watchdog.PodDir)
				if err := os.MkdirAll(podDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(filepath.Join(podDir, c.file), 0o644); err != nil {
					t.Fatal(err)
				}
				jobDir := t.TempDir()
				if err := os.WriteFile(filepath.Join(jobDir, "job.sh"), []byte("echo done\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()), runpod.WithGraphQLURL(srv.GraphQLURL()))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				spec := guard.Spec{
					RunID: runID, NetworkVolumeID: vol.ID,
					Job:      guard.Job{Dir: jobDir, Command: "sh job.sh"},
					Deadline: time.Now().Add(time.Hour),
					PodEnv:   map[string]string{"OVERBRAINER_BOOT_TIMEOUT": "5", "OVERBRAINER_CURL_TIMEOUT": "3"},
				}
				run, err := guard.Launch(ctx, api, spec, guard.WithPoll(500*time.Millisecond), guard.WithLeaveOnFailure(),
					guard.WithVerdictTimeout(time.Minute), guard.WithStartTimeout(time.Minute))
				switch {
				case c.boots && err != nil:
					t.Fatalf("the run did not boot past a FIFO at %s: %v", c.file, err)
				case c.boots:
					if err := run.Start(ctx, guard.Job{}); err != nil {
						t.Fatal(err)
					}
					end, err := run.Follow(ctx, io.Discard)
					if err != nil || end.Err() != nil {
						t.Fatalf("follow: %v %v", err, end.Err())
					}
					if _, err := run.Delete(ctx); err != nil {
						t.Fatal(err)
					}
				case err == nil:
					t.Fatalf("the run booted although its claim is a FIFO")
				}
				shtest.Eventually(t, wait, func() bool { return len(srv.Billing()) == 0 }, "no pod left billing")
				if !c.boots {
					b, _ := os.ReadFile(filepath.Join(podDir, "..", watchdog.BootstrapFailed))
					if got := strings.TrimSpace(string(b)); got != "bootstrap_timeout" {
						t.Errorf("%s = %q, want bootstrap_timeout", watchdog.BootstrapFailed, got)
					}
				}
				left.Add(int64(len(srv.Billing())))
			})
		}
	})
	record(t, "boot FIFOs (bash)", "watchdog tmp file and claim: pods left billing", "%d", left.Load())
}
