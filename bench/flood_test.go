package bench_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// floodLine is the line the flooding job prints, over and over.
const floodLine = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopq"

// BenchmarkFollowFlood follows a job that prints a flood of output (1 GiB
// with OVERBRAINER_BENCH_FULL=1, else 64 MiB) through the launcher, and
// reports the launcher's peak RSS against the same launcher following a
// job of one line, and whether every byte arrived, in order. Issue 19's
// goal: under 100 MB for 1 GB in about a minute, no byte lost.
//
//	go test -run '^$' -bench FollowFlood -benchtime 1x ./bench
func BenchmarkFollowFlood(b *testing.B) {
	bin := needLauncher(b)
	size := int64(64 << 20)
	if full() {
		size = 1 << 30
	}
	lines := size / int64(len(floodLine)+1)
	for _, c := range []struct {
		name  string
		lines int64
	}{{"one_line", 1}, {"flood", lines}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				srv := runpodtest.NewTestServer(b, runpodtest.WithPodRunner())
				job := b.TempDir()
				script := fmt.Sprintf("yes %s | head -n %d\n", floodLine, c.lines)
				if err := os.WriteFile(filepath.Join(job, "flood.sh"), []byte(script), 0o644); err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command(bin, "run", "--state-dir", filepath.Join(b.TempDir(), "state"),
					"--api-url", srv.BaseURL(),
					"--job", job, "--cmd", "sh flood.sh", "--max-hours", "1")
				cmd.Env = append(os.Environ(), "RUNPOD_API_KEY="+srv.APIKey())
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				began := time.Now()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				got, bad, readErr := countFlood(out)
				if err := cmd.Wait(); err != nil || readErr != nil {
					b.Fatalf("launcher: %v, reading: %v\n%s", err, readErr, stderr.String())
				}
				wall := time.Since(began)
				rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
				if got != c.lines || bad != 0 {
					b.Errorf("%d of %d lines arrived, %d of them damaged", got, c.lines, bad)
				}
				b.ReportMetric(float64(rss)/1024, "rss-MiB")
				b.ReportMetric(float64(c.lines-got+bad), "lines-lost")
				b.ReportMetric(float64(got*int64(len(floodLine)+1))/(1<<20)/wall.Seconds(), "MiB/s")
				b.ReportMetric(wall.Seconds(), "wall-s")
			}
		})
	}
}

// countFlood counts the flood's lines on the launcher's stdout and the
// lines that are not the flood's line. Other lines are not expected: the
// launcher writes its own to stderr.
func countFlood(r io.Reader) (good, bad int64, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		l, err := br.ReadSlice('\n')
		switch {
		case err == io.EOF:
			if len(l) > 0 {
				bad++
			}
			return good, bad, nil
		case err == bufio.ErrBufferFull:
			bad++
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return good, bad, err
			}
			continue
		case err != nil:
			return good, bad, err
		}
		if string(l[:len(l)-1]) == floodLine {
			good++
		} else {
			bad++
		}
	}
}
