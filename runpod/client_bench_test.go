package runpod_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// The client benchmarks compare GetPod and DeletePod through runpod.Client
// with the same request written by hand on net/http (the "bare" baseline):
// the same headers, the body read whole, the status checked and, for GetPod,
// the same JSON decoded into runpod.Pod. Both talk to one httptest server
// that runs in a child process (this test binary, re-executed), so that
// -benchmem counts the client's allocations only, not the server's.
//
//	go test -run '^$' -bench 'GetPod|DeletePod' -benchmem ./runpod

// benchServerEnv makes the re-executed test binary serve instead of test.
const benchServerEnv = "OVERBRAINER_BENCH_RUNPOD_SERVER"

const (
	benchKey   = "rpa_BENCHKEY_not_a_real_key"
	benchPodID = "benchpod123"
	// benchGoneID is a pod the bench server has deleted: its DELETE
	// answers 204 and its GET 404, so that DeletePod's confirming GET
	// finds it gone.
	benchGoneID = "benchgone456"
)

func init() {
	if os.Getenv(benchServerEnv) == "1" {
		serveBench()
		os.Exit(0)
	}
}

// benchPodJSON is a pod as GET /pods/{id} returns it for a running pod of
// the launcher (without its long args: the smaller the body, the more the
// client's own overhead shows).
func benchPodJSON() []byte {
	started := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	env := map[string]string{}
	for _, k := range []string{podenv.RunIDEnv, podenv.WorkdirEnv, podenv.RunDirEnv,
		podenv.DeadlineEnv, podenv.BootGraceEnv, podenv.RetrieveGraceEnv,
		podenv.KeepEnv, podenv.APIURLEnv, podenv.VersionEnv} {
		env[k] = strings.ToLower(k[12:]) + "-value"
	}
	env[podenv.HostKeyEnv] = "{{ RUNPOD_SECRET_overbrainer_host_key_r1 }}"
	env[podenv.AuthorizedKeyEnv] = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKx0bench0key0bench0key0bench0key0bench0 client"
	p := runpod.Pod{
		ID: benchPodID, Name: "overbrainer-r1", Status: "RUNNING",
		Actions: []runpod.Action{"stop", "terminate", "restart"},
		Image:   "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
		Ports:   []string{"22/tcp"}, Env: env, ContainerDiskGB: 50,
		Cloud: "SECURE", DataCenterID: "EU-RO-1", CUDAVersion: "12.4",
		CostPerHr: 0.44, CreatedAt: started.Add(-30 * time.Second), StartedAt: &started,
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return b
}

// serveBench runs the server of the child process: it prints its URL on
// stdout and serves until its stdin closes (the benchmark process ended).
func serveBench() {
	body := benchPodJSON()
	path := "/v2/pods/" + benchPodID
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/v2/pods/"+benchGoneID && r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path != path || r.Header.Get("Authorization") != "Bearer "+benchKey:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"title":"Not Found","status":404}`)
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	fmt.Println(srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Close()
}

var (
	benchSrvOnce sync.Once
	benchSrvURL  string
	benchSrvErr  error
	// benchSrvIn is the child's stdin, held open (a finalizer would close
	// an unreferenced *os.File) until this process exits.
	benchSrvIn io.WriteCloser
)

// benchServer starts the child server once per test binary and returns its
// base URL. The child exits when this process does (its stdin closes).
func benchServer(b *testing.B) string {
	b.Helper()
	benchSrvOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			benchSrvErr = err
			return
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), benchServerEnv+"=1")
		benchSrvIn, err = cmd.StdinPipe()
		if err != nil {
			benchSrvErr = err
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			benchSrvErr = err
			return
		}
		cmd.Stderr = os.Stderr
		if benchSrvErr = cmd.Start(); benchSrvErr != nil {
			return
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			benchSrvErr = fmt.Errorf("bench server: %v", err)
			return
		}
		benchSrvURL = strings.TrimSpace(line)
	})
	if benchSrvErr != nil {
		b.Fatal(benchSrvErr)
	}
	return benchSrvURL
}

// newTransport is the transport each side gets: its own, with the same
// settings, so neither shares the other's idle connections.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 4
	return t
}

func benchClient(b *testing.B, url string) *runpod.Client {
	b.Helper()
	c, err := runpod.New(benchKey, runpod.WithBaseURL(url+"/v2"),
		runpod.WithHTTPClient(&http.Client{Transport: newTransport(), Timeout: 30 * time.Second}))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// bare sends method to the pod's URL the way a hand-written client would,
// and decodes a 200's body into into (when not nil).
func bare(ctx context.Context, hc *http.Client, method, url string, want int, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+benchKey)
	req.Header.Set("User-Agent", runpod.DefaultUserAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s: status %d", method, resp.StatusCode)
	}
	if into != nil {
		return json.Unmarshal(body, into)
	}
	return nil
}

func BenchmarkGetPod(b *testing.B) {
	url := benchServer(b)
	ctx := context.Background()
	b.Run("client", func(b *testing.B) {
		c := benchClient(b, url)
		b.ReportAllocs()
		for b.Loop() {
			p, err := c.GetPod(ctx, benchPodID)
			if err != nil || p.ID != benchPodID {
				b.Fatalf("GetPod: %v %v", p, err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		hc := &http.Client{Transport: newTransport(), Timeout: 30 * time.Second}
		b.ReportAllocs()
		for b.Loop() {
			var p runpod.Pod
			if err := bare(ctx, hc, http.MethodGet, url+"/v2/pods/"+benchPodID, http.StatusOK, &p); err != nil || p.ID != benchPodID {
				b.Fatalf("GET: %v %v", p, err)
			}
		}
	})
}

func BenchmarkDeletePod(b *testing.B) {
	url := benchServer(b)
	ctx := context.Background()
	b.Run("client", func(b *testing.B) {
		c := benchClient(b, url)
		b.ReportAllocs()
		for b.Loop() {
			if r, err := c.DeletePod(ctx, benchGoneID); err != nil || r != runpod.Deleted {
				b.Fatalf("DeletePod: %v %v", r, err)
			}
		}
	})
	// Bare net/http makes the same two calls: the DELETE and the GET that
	// confirms it.
	b.Run("bare", func(b *testing.B) {
		hc := &http.Client{Transport: newTransport(), Timeout: 30 * time.Second}
		b.ReportAllocs()
		for b.Loop() {
			if err := bare(ctx, hc, http.MethodDelete, url+"/v2/pods/"+benchGoneID, http.StatusNoContent, nil); err != nil {
				b.Fatal(err)
			}
			if err := bare(ctx, hc, http.MethodGet, url+"/v2/pods/"+benchGoneID, http.StatusNotFound, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
