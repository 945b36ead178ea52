package bench_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/sweep"
)

// BenchmarkListAtScale lists an account of many guarded pods, pages of
// runpod.ListPageSize, against the fake: with ListPods ("listpods"), with one dry-run
// sweep.Once that judges every pod and secret ("sweep"), and, as the
// baseline, with bare net/http that fetches the same pages and decodes
// them into runpod.Pod ("bare"). Each reports its wall time, the peak of
// its heap (sampled every millisecond) and of its RSS, and its requests.
//
// The fake runs in a child process (this test binary, re-executed) so that
// the memory and CPU measured are the lister's alone; the fake's own CPU
// time is reported apart (fake-cpu-s). Its pods are seeded (no request,
// no process each) and look like a launcher's: the real start command
// (bootstrap.Entrypoint and Cmd, some 17 KB, which the fake reports in the
// pod's cmd and again in its args, as Runpod does) and environment, a host-key secret each,
// statuses and times for every rule of the sweep.
//
// 10,000 pods with OVERBRAINER_BENCH_FULL=1, else 2,000, or
// OVERBRAINER_BENCH_PODS.
//
//	go test -run '^$' -bench ListAtScale -benchtime 1x ./bench
func BenchmarkListAtScale(b *testing.B) {
	n := 2000
	if full() {
		n = 10000
	}
	n = envInt("OVERBRAINER_BENCH_PODS", n)
	fake := startListFake(b, n)
	for _, side := range []struct {
		name string
		run  func(ctx context.Context, hc *http.Client) (int, error)
	}{
		{"bare", func(ctx context.Context, hc *http.Client) (int, error) {
			pods, err := bareList(ctx, hc, fake.url+"/v2/pods")
			return len(pods), err
		}},
		{"listpods", func(ctx context.Context, hc *http.Client) (int, error) {
			pods, err := fake.client(b, hc).ListPods(ctx, runpod.ListPodsOptions{})
			return len(pods), err
		}},
		{"sweep", func(ctx context.Context, hc *http.Client) (int, error) {
			rep, err := sweep.Once(ctx, fake.client(b, hc), sweep.Policy{DryRun: true})
			if err == nil && len(rep.Decisions) != rep.Pods+rep.Secrets {
				err = fmt.Errorf("%d decisions for %d pods and %d secrets", len(rep.Decisions), rep.Pods, rep.Secrets)
			}
			return rep.Pods, err
		}},
	} {
		b.Run(side.name, func(b *testing.B) {
			var wall, heap, rss, cpu, fakeCPU, reqs float64
			for range b.N {
				var count countingTransport
				hc := &http.Client{Transport: &count}
				m := startMemWatch()
				cpu0, fake0 := selfCPU(), fake.cpu()
				began := time.Now()
				got, err := side.run(context.Background(), hc)
				wall += time.Since(began).Seconds()
				cpu += (selfCPU() - cpu0).Seconds()
				fakeCPU += (fake.cpu() - fake0).Seconds()
				h, r := m.stop()
				heap, rss = max(heap, h), max(rss, r)
				reqs += float64(count.rest.Load())
				if err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("%d pods listed, want %d", got, n)
				}
			}
			k := float64(b.N)
			b.ReportMetric(wall/k, "wall-s")
			b.ReportMetric(heap/(1<<20), "peak-heap-MiB")
			b.ReportMetric(rss/(1<<20), "peak-rss-MiB")
			b.ReportMetric(reqs/k, "requests")
			b.ReportMetric(cpu/k, "cpu-s")
			b.ReportMetric(fakeCPU/k, "fake-cpu-s")
			b.ReportMetric(float64(n), "pods")
		})
	}
}

// listFakeEnv makes the re-executed test binary serve the seeded fake; its
// value is the number of pods.
const (
	listFakeEnv = "OVERBRAINER_BENCH_LIST_FAKE"
	listKey     = "rpa_BENCH_list_account_key"
)

func init() {
	if v := os.Getenv(listFakeEnv); v != "" {
		n, _ := strconv.Atoi(v)
		serveListFake(n)
		os.Exit(0)
	}
}

// serveListFake seeds a fake with n guarded pods, prints its URL and
// serves until its stdin closes.
func serveListFake(n int) {
	srv := runpodtest.NewServer(runpodtest.WithAPIKey(listKey))
	defer srv.Close()
	now := srv.Now()
	seeds := make([]runpodtest.SeedPod, n)
	for i := range seeds {
		created := now.Add(-time.Duration(30+i%600) * time.Minute)
		runID := created.UTC().Format("20060102-150405") + fmt.Sprintf("-%04x", i%0x10000)
		deadline := now.Add(time.Hour)
		status := runpodtest.StatusRunning
		switch i % 10 {
		case 1: // past its deadline
			deadline = now.Add(-time.Hour)
		case 2: // exited long ago
			status = runpodtest.StatusExited
		}
		env, err := podenv.Settings{
			RunID: runID, Workdir: "/workspace/overbrainer",
			Rules:         podenv.Rules{Deadline: deadline, MaxCostUSD: 50},
			AuthorizedKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcomaqb8ckRepkDHH1CfKQjIlXD1MGWnmwCZJZcsNG3 overbrainer-" + runID,
			Claim:         "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV",
		}.Env()
		if err != nil {
			panic(err)
		}
		if i%50 == 3 { // named like a guarded run's pod, but unmarked
			delete(env, podenv.RunIDEnv)
		}
		seeds[i] = runpodtest.SeedPod{
			Name: podenv.PodNamePrefix + runID, Image: guard.DefaultImage, Env: env,
			Entrypoint: bootstrap.Entrypoint(), Cmd: bootstrap.Cmd(),
			Status: status, CreatedAt: created, StartedAt: created.Add(time.Minute),
		}
		srv.AddSecret(podenv.HostKeySecretName(runID), "host key of "+runID)
	}
	srv.AddPods(seeds...)
	fmt.Println(srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// listFake is the child process serving the fake.
type listFake struct {
	url string
	pid int
}

func startListFake(b *testing.B, n int) *listFake {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), listFakeEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("list fake: %v", err)
	}
	return &listFake{url: strings.TrimSpace(line), pid: cmd.Process.Pid}
}

func (f *listFake) client(b *testing.B, hc *http.Client) *runpod.Client {
	c, err := runpod.New(listKey, runpod.WithBaseURL(f.url+"/v2"),
		runpod.WithHTTPClient(hc), runpod.WithPacing(false))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// cpu is the fake's CPU time so far.
func (f *listFake) cpu() time.Duration {
	d, _ := procCPU(f.pid)
	return d
}

// bareList is ListPods written by hand: every page fetched, its body read
// whole and decoded into runpod.Pod, the cursor followed.
func bareList(ctx context.Context, hc *http.Client, u string) ([]runpod.Pod, error) {
	var all []runpod.Pod
	cursor := ""
	for {
		q := url.Values{"limit": {strconv.Itoa(runpod.ListPageSize)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+listKey)
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET /pods: status %d", resp.StatusCode)
		}
		var page struct {
			Pods       []runpod.Pod `json:"pods"`
			Pagination struct {
				NextCursor  string `json:"nextCursor"`
				HasNextPage bool   `json:"hasNextPage"`
			} `json:"pagination"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Pods...)
		if !page.Pagination.HasNextPage {
			return all, nil
		}
		cursor = page.Pagination.NextCursor
	}
}

// countingTransport counts the REST requests (GraphQL apart) it carries,
// on a fresh transport of its own.
type countingTransport struct {
	once sync.Once
	t    *http.Transport
	rest atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.once.Do(func() { c.t = http.DefaultTransport.(*http.Transport).Clone() })
	if !strings.HasSuffix(r.URL.Path, "/graphql") {
		c.rest.Add(1)
	}
	return c.t.RoundTrip(r)
}

// memWatch samples the heap every millisecond and keeps its peak; the RSS
// peak comes from the kernel's high-water mark, reset at the start.
type memWatch struct {
	done chan struct{}
	peak chan uint64
}

var heapMetric = "/memory/classes/heap/objects:bytes"

func startMemWatch() *memWatch {
	runtime.GC()
	debug.FreeOSMemory()
	// 5 resets VmHWM to the current RSS (Linux 4.0 and later).
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	m := &memWatch{done: make(chan struct{}), peak: make(chan uint64, 1)}
	go func() {
		s := []metrics.Sample{{Name: heapMetric}}
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-m.done:
				m.peak <- peak
				return
			case <-t.C:
			}
		}
	}()
	return m
}

// stop returns the peaks of the heap and of the RSS, in bytes.
func (m *memWatch) stop() (heap, rss float64) {
	close(m.done)
	return float64(<-m.peak), float64(statusKiB(os.Getpid(), "VmHWM") * 1024)
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
