package bench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// BenchmarkLaunchesUnderQuota runs N guarded runs at once from one program
// (a fleet tool: one client, one account key) against the fake in quota
// mode, each a whole cycle on a real emulator pod: launch, start, follow,
// collect, delete. It reports the account key's requests per run and the
// 429s among them, against the same cycle run alone under the same quota,
// so the ratio is the cost of the crowd, and the runs that failed: at
// launch or start (failed-launches), or at any step (failed-runs).
//
// Runpod's quota is 60 requests a minute; the fake keeps its shape (q
// requests per window) on a shorter window so that the crowd meets it as
// often as it would on Runpod, in less time: OVERBRAINER_BENCH_QUOTA
// (default 60) and OVERBRAINER_BENCH_QUOTA_WINDOW (default 10s; 1m is
// Runpod's own). N is 200 with OVERBRAINER_BENCH_FULL=1, else 8, or
// OVERBRAINER_BENCH_CROWD. The crowd runs again with the client's pacing
// off (N-unpaced), to show what the pacing saves.
//
//	go test -run '^$' -bench LaunchesUnderQuota -benchtime 1x ./bench
func BenchmarkLaunchesUnderQuota(b *testing.B) {
	quota := runpodtest.QuotaWindow{Name: "minute", Limit: envInt("OVERBRAINER_BENCH_QUOTA", 60), Window: 10 * time.Second}
	if w, err := time.ParseDuration(os.Getenv("OVERBRAINER_BENCH_QUOTA_WINDOW")); err == nil && w > 0 {
		quota.Window = w
	}
	crowd := 8
	if full() {
		crowd = 200
	}
	crowd = envInt("OVERBRAINER_BENCH_CROWD", crowd)
	if err := localpod.EnsureTools(func(string, ...any) {}, io.Discard); err != nil {
		b.Skipf("the pod runner cannot run pods here: %v", err)
	}
	for _, c := range []struct {
		n      int
		pacing bool
	}{{1, true}, {crowd, true}, {crowd, false}} {
		n, name := c.n, strconv.Itoa(c.n)
		if !c.pacing {
			name += "-unpaced"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				srv := runpodtest.NewTestServer(b, runpodtest.WithPodRunner(), runpodtest.WithQuota(quota))
				api := checkedfake.Client(b, srv, runpod.WithRetry(10, 2*quota.Window), runpod.WithPacing(c.pacing))
				began := time.Now()
				// A failed run is counted, not fatal: the goal is
				// that none fails, and how many did is the measure.
				var g errgroup.Group
				var failed, unlaunched atomic.Int64
				for i := range n {
					g.Go(func() error {
						step, err := quotaRun(b, api, i)
						if err != nil {
							// Every failure, with its step and reason: the
							// report lists them (bench/report).
							b.Logf("%s%s: %v", failedRunLog, step, err)
							failed.Add(1)
							if step == stepLaunch || step == stepStart {
								unlaunched.Add(1)
							}
						}
						return nil
					})
				}
				_ = g.Wait()
				account, refused := 0, 0
				for _, r := range srv.Requests() {
					if r.Caller == runpodtest.CallerAccount {
						account++
						if r.Status == http.StatusTooManyRequests {
							refused++
						}
					}
				}
				if left := srv.Billing(); len(left) > 0 {
					b.Fatalf("%d pods left billing", len(left))
				}
				b.ReportMetric(float64(account)/float64(n), "requests/run")
				b.ReportMetric(float64(refused)/float64(n), "429s/run")
				b.ReportMetric(float64(failed.Load()), "failed-runs")
				b.ReportMetric(float64(unlaunched.Load()), "failed-launches")
				b.ReportMetric(time.Since(began).Seconds(), "wall-s")
			}
		})
	}
}

// failedRunLog starts the log line of a failed run: its step, ": ", and
// its error. bench/report lists these lines.
const failedRunLog = "failed run at "

// The steps of a run, as failedRunLog names them.
const (
	stepLaunch  = "launch"
	stepStart   = "start"
	stepFollow  = "follow"
	stepCollect = "collect"
	stepDelete  = "delete"
)

// quotaRun is one guarded run of a one-line job. A failed run returns the
// step it failed at. A run that fails after its launch still deletes its
// pod, as a launcher would, so that the benchmark's check for pods left
// billing judges the SDK, not the run's early return.
func quotaRun(b *testing.B, api *runpod.Client, i int) (step string, err error) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "train.sh"), []byte("echo run "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
		return stepLaunch, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	spec := guard.Spec{Job: guard.Job{Dir: dir, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	run, err := guard.Launch(ctx, api, spec, guard.WithPoll(time.Second))
	if err != nil {
		return stepLaunch, fmt.Errorf("run %d: %w", i, err)
	}
	defer run.Close()
	defer func() {
		if err != nil {
			if _, derr := run.Delete(ctx); derr != nil {
				err = fmt.Errorf("%w; then deleting its pod: %w", err, derr)
			}
		}
	}()
	if err := run.Start(ctx, guard.Job{}); err != nil {
		return stepStart, fmt.Errorf("run %d: %w", i, err)
	}
	if _, err := run.Follow(ctx, io.Discard); err != nil {
		return stepFollow, fmt.Errorf("run %d: %w", i, err)
	}
	if _, err := run.Collect(ctx, filepath.Join(dir, "results")); err != nil {
		return stepCollect, fmt.Errorf("run %d: %w", i, err)
	}
	if _, err := run.Delete(ctx); err != nil {
		return stepDelete, fmt.Errorf("run %d: %w", i, err)
	}
	return "", nil
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
