package bench_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// BenchmarkMarkerReaction measures, on the real clock, how long the watchdog
// (under dash) takes from a marker file appearing to the DELETE reaching the
// fake API:
//
//   - retrieved: the client writes .pod/retrieved after the job ended;
//   - job_end: the job writes exit_code (OVERBRAINER_RETRIEVE_GRACE=0, so
//     the ended job is abandoned at once and only the detection counts);
//   - retrieved_woken, job_end_woken: the same, followed by
//     watchdog.WakeCommand() run from the run directory, as the launcher's
//     put does after every write and the launcher's job wrapper after
//     exit_code.
//
// Markers are not due times: unless woken, the watchdog sees them at its
// next tick, so the reaction is up to INTERVAL. Each marker is written at a random moment of
// the watchdog's pause, as a client's would be. With
// OVERBRAINER_BENCH_FULL=1 it uses the default INTERVAL of 60 s and six
// watchdogs per marker at once; otherwise INTERVAL=2 and two. The metrics
// are the median, the least and the most of those reactions.
//
//	OVERBRAINER_BENCH_FULL=1 go test -run '^$' -bench MarkerReaction -benchtime 1x ./bench
func BenchmarkMarkerReaction(b *testing.B) {
	sh, _ := shtest.Lookup("dash")
	interval, runs := 2, 2
	if full() {
		interval, runs = 60, 6
	}
	for _, marker := range []string{"retrieved", "job_end", "retrieved_woken", "job_end_woken"} {
		b.Run(marker, func(b *testing.B) {
			shtest.Need(b, sh)
			shtest.NeedTool(b, "curl")
			for i := 0; i < b.N; i++ {
				lat := make([]float64, runs)
				errs := make([]error, runs)
				var wg sync.WaitGroup
				for r := 0; r < runs; r++ {
					wait := markerWatchdog(b, sh, marker, interval)
					wg.Add(1)
					go func() {
						defer wg.Done()
						lat[r], errs[r] = wait()
					}()
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				slices.Sort(lat)
				b.ReportMetric(median(lat), "s/reaction")
				b.ReportMetric(lat[0], "s-min/reaction")
				b.ReportMetric(lat[len(lat)-1], "s-max/reaction")
				b.ReportMetric(float64(len(lat)), "samples")
			}
		})
	}
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// markerWatchdog starts one watchdog for the marker scenario (on the
// benchmark's goroutine) and returns the function, safe on any goroutine,
// that writes the marker during a pause and returns the seconds from the
// write to the DELETE.
func markerWatchdog(b *testing.B, sh shtest.Shell, marker string, interval int) func() (float64, error) {
	marker, woken := strings.CutSuffix(marker, "_woken")
	api := shtest.NewFakeAPI(b)
	dir := runDir(b)
	startJob(b, dir)
	env := watchdogEnv(dir, api, interval)
	markerPath := filepath.Join(dir, watchdog.Retrieved)
	reason := "reason=retrieved"
	if marker == "job_end" {
		env[podenv.RetrieveGraceEnv] = "0"
		markerPath = filepath.Join(dir, watchdog.ExitCode)
		reason = "reason=abandoned"
	} else {
		writeFile(b, filepath.Join(dir, watchdog.ExitCode), "0\n")
	}
	p := shtest.Start(b, sh, watchdog.Script(), shtest.Opts{Dir: dir, Env: env})
	pid := p.Cmd.Process.Pid
	return func() (float64, error) {
		// The first pause follows the first tick, which saw the job (and,
		// for retrieved, its end) but no marker.
		if err := watchPauses(pid, 2*time.Minute, func(int) bool { return false }); err != nil {
			return 0, err
		}
		time.Sleep(time.Duration(rand.Float64() * float64(time.Duration(interval)*time.Second)))
		tmp := markerPath + ".tmp"
		if err := os.WriteFile(tmp, []byte("0\n"), 0o644); err != nil {
			return 0, err
		}
		written := time.Now()
		if err := os.Rename(tmp, markerPath); err != nil {
			return 0, err
		}
		if woken {
			wake := exec.Command("sh", "-c", watchdog.WakeCommand())
			wake.Dir = dir
			if out, err := wake.CombinedOutput(); err != nil {
				return 0, fmt.Errorf("%s: the wake command: %v %s", marker, err, out)
			}
		}
		deadline := written.Add(time.Duration(interval)*time.Second + time.Minute)
		for time.Now().Before(deadline) {
			for _, r := range api.Requests() {
				if r.Method == "DELETE" {
					log, _ := os.ReadFile(filepath.Join(dir, watchdog.Log))
					if !strings.Contains(string(log), reason) {
						return 0, fmt.Errorf("%s: deleted without %s:\n%s", marker, reason, log)
					}
					return r.Time.Sub(written).Seconds(), nil
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		log, _ := os.ReadFile(filepath.Join(dir, watchdog.Log))
		return 0, fmt.Errorf("%s: no DELETE %s after the marker; log:\n%s", marker,
			strconv.Itoa(interval+60)+"s", log)
	}
}
