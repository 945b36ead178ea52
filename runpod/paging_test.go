package runpod_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// pagedServer serves n pods in pages of size, or of the limit asked when
// smaller, by Runpod's cursor pagination; failPage, when positive,
// answers that page 400.
func pagedServer(t *testing.T, n, size, failPage int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page := int(calls.Add(1))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if limit != runpod.ListPageSize {
			t.Errorf("page %d: limit %q, want %d on every page", page, r.URL.Query().Get("limit"), runpod.ListPageSize)
		}
		size := min(size, max(limit, 1))
		from := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			from, _ = strconv.Atoi(c)
		}
		if page == failPage {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		type pod struct {
			ID        string    `json:"id"`
			Name      string    `json:"name"`
			CreatedAt time.Time `json:"createdAt"`
		}
		out := struct {
			Pods       []pod          `json:"pods"`
			Pagination map[string]any `json:"pagination"`
		}{Pods: []pod{}}
		for i := from; i < min(from+size, n); i++ {
			out.Pods = append(out.Pods, pod{fmt.Sprint("p", i), fmt.Sprint("overbrainer-r", i), base.Add(time.Duration(i) * time.Second)})
		}
		if from+size < n {
			out.Pagination = map[string]any{"nextCursor": strconv.Itoa(from + size), "hasNextPage": true}
		} else {
			out.Pagination = map[string]any{"nextCursor": nil, "hasNextPage": false}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func pagedClient(t *testing.T, url string) *runpod.Client {
	t.Helper()
	c, err := runpod.New("rpa_TEST", runpod.WithBaseURL(url), runpod.WithRetry(1, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// 10,000 pods over pages of ListPageSize: every one listed, in order,
// one call a page.
func TestListPodsFollowsPages(t *testing.T) {
	srv, calls := pagedServer(t, 10000, 1000, 0)
	pods, err := pagedClient(t, srv.URL).ListPods(context.Background(), runpod.ListPodsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pages := pagesOf(10000); len(pods) != 10000 || int(calls.Load()) != pages {
		t.Fatalf("%d pods in %d calls, want 10000 in %d", len(pods), calls.Load(), pages)
	}
	for i, p := range pods {
		if p.ID != fmt.Sprint("p", i) {
			t.Fatalf("pod %d is %s", i, p.ID)
		}
	}
}

// A failed page fails the whole listing: no part of it is returned.
func TestListPodsFailedPage(t *testing.T) {
	srv, _ := pagedServer(t, 10000, 1000, 7)
	pods, err := pagedClient(t, srv.URL).ListPods(context.Background(), runpod.ListPodsOptions{})
	var ae *runpod.APIError
	if err == nil || pods != nil || !errors.As(err, &ae) {
		t.Fatalf("ListPods = %d pods, %v; want no pods and the page's error", len(pods), err)
	}
}

// A cursor the server refuses (Runpod answers 422 to one sent with other
// parameters, or expired) fails the listing with an error that names the
// page and the server's reason, and lists nothing.
func TestListPodsRefusedCursor(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "" {
			_, _ = w.Write([]byte(`{"pods":[{"id":"a"}],"pagination":{"nextCursor":"c1","hasNextPage":true}}`))
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"title":"Unprocessable Entity","status":422,"detail":"Request validation failed.","errors":["cursor: not valid with these parameters"]}`))
	}))
	defer srv.Close()
	pods, err := pagedClient(t, srv.URL).ListPods(context.Background(), runpod.ListPodsOptions{})
	var ae *runpod.APIError
	if pods != nil || !errors.As(err, &ae) || ae.StatusCode != http.StatusUnprocessableEntity ||
		!strings.Contains(err.Error(), "page 2") || !strings.Contains(err.Error(), "cursor: not valid") {
		t.Fatalf("ListPods = %d pods, %v", len(pods), err)
	}
}

// The old answer, a bare array, is read too; a next page without a new
// cursor is an error, not a loop.
func TestListPodsUnpagedAndBadCursor(t *testing.T) {
	arr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[{"id":"a","name":"overbrainer-a"},{"id":"b","name":"other"}]`))
	}))
	defer arr.Close()
	pods, err := pagedClient(t, arr.URL).ListPods(context.Background(), runpod.ListPodsOptions{NamePrefix: "overbrainer-"})
	if err != nil || len(pods) != 1 || pods[0].ID != "a" {
		t.Fatalf("bare array: %v, %v", pods, err)
	}
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"pods":[{"id":"a"}],"pagination":{"nextCursor":"x","hasNextPage":true}}`))
	}))
	defer stuck.Close()
	if _, err := pagedClient(t, stuck.URL).ListPods(context.Background(), runpod.ListPodsOptions{}); err == nil {
		t.Fatal("a cursor that never moves listed without an error")
	}
}

// The fake pages when configured to, and the client reads every page,
// each with the first page's parameters.
func TestFakePagesPods(t *testing.T) {
	srv := runpodtest.NewTestServer(t, runpodtest.WithPageSize(3), runpodtest.AllowPodsLeft())
	c := checkedfake.Client(t, srv)
	for i := range 8 {
		if _, err := c.CreatePod(context.Background(), runpod.CreatePodRequest{Name: fmt.Sprint("p", i), Image: "x", GPUTypeID: "NVIDIA GeForce RTX 4090"}); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := c.ListPods(context.Background(), runpod.ListPodsOptions{IncludeClusterPods: true})
	if err != nil || len(pods) != 8 {
		t.Fatalf("%d pods, %v; want 8", len(pods), err)
	}
	checkListQueries(t, srv, 3, "includeClusterPods=true&limit="+strconv.Itoa(runpod.ListPageSize))
}

// checkListQueries checks that the fake got n list calls, each with the
// first one's parameters, and a cursor on all but the first.
func checkListQueries(t *testing.T, srv *runpodtest.Server, n int, params string) {
	t.Helper()
	var got []string
	for _, r := range srv.Requests() {
		if r.Method == "GET" && r.Path == "/v2/pods" {
			got = append(got, r.RawQuery)
		}
	}
	if len(got) != n {
		t.Fatalf("list calls %q, want %d", got, n)
	}
	for i, q := range got {
		v, _ := url.ParseQuery(q)
		hasCursor := v.Get("cursor") != ""
		v.Del("cursor")
		if v.Encode() != params || hasCursor != (i > 0) {
			t.Errorf("list call %d: %q, want %q with a cursor after the first", i, q, params)
		}
	}
}

// Past 1,000 pods the list takes pages of the same limit, and the fake
// (which refuses a cursor sent with other parameters) serves them all.
func TestListPodsPast1000(t *testing.T) {
	srv := runpodtest.NewTestServer(t, runpodtest.AllowPodsLeft(), runpodtest.WithProvisioningDelay(24*time.Hour))
	c := checkedfake.Client(t, srv)
	seeds := make([]runpodtest.SeedPod, 1005)
	for i := range seeds {
		seeds[i] = runpodtest.SeedPod{Name: fmt.Sprint("overbrainer-r", i)}
	}
	ids := srv.AddPods(seeds...)
	pods, err := c.ListPods(context.Background(), runpod.ListPodsOptions{SkipArgs: true})
	if err != nil || len(pods) != len(ids) {
		t.Fatalf("%d pods, %v; want %d", len(pods), err, len(ids))
	}
	seen := map[string]bool{}
	for _, p := range pods {
		seen[p.ID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("pod %s not listed", id)
		}
	}
	checkListQueries(t, srv, pagesOf(len(ids)), "limit="+strconv.Itoa(runpod.ListPageSize))
}

// TestListPodsSkipArgs: with SkipArgs every page's pods come without their
// start command, whether it was given as args or as entrypoint and cmd
// (the bootstrap's form), and with all else, env variables named args or
// cmd included, the same as a listing that keeps them.
func TestListPodsSkipArgs(t *testing.T) {
	srv := checkedfake.NewTestServer(t, runpodtest.WithPageSize(2), runpodtest.AllowPodsLeft())
	c := checkedfake.Client(t, srv)
	script := `echo "args":"x" ["cmd"] \ 'q'` + "\n"
	cmd := []string{"bash", "-c", script}
	env := map[string]string{"args": "kept", "cmd": "kept", "K": `"args":"v","cmd":["v"]`}
	for i := range 6 {
		seed := runpodtest.SeedPod{Name: fmt.Sprint("p", i), Env: env}
		if i%2 == 0 {
			seed.Args = runpod.QuoteArgs(cmd)
		} else {
			seed.Entrypoint, seed.Cmd = cmd[:2], cmd[2:]
		}
		srv.AddPods(seed)
	}
	ctx := context.Background()
	whole, err := c.ListPods(ctx, runpod.ListPodsOptions{})
	if err != nil || len(whole) != 6 {
		t.Fatalf("ListPods: %d pods, %v", len(whole), err)
	}
	lean, err := c.ListPods(ctx, runpod.ListPodsOptions{SkipArgs: true})
	if err != nil || len(lean) != 6 {
		t.Fatalf("ListPods with SkipArgs: %d pods, %v", len(lean), err)
	}
	for i := range whole {
		if got, err := whole[i].Command(); err != nil || !slices.Equal(got, cmd) || (i%2 == 1) != (len(whole[i].Entrypoint) > 0) {
			t.Errorf("pod %d: command %q (%v), entrypoint %q", i, got, err, whole[i].Entrypoint)
		}
		l := lean[i]
		if l.Args != "" || len(l.Entrypoint)+len(l.Cmd) > 0 {
			t.Errorf("pod %d with SkipArgs: args %q, entrypoint %q, cmd %q", i, l.Args, l.Entrypoint, l.Cmd)
		}
		w := whole[i]
		w.Args, w.Entrypoint, w.Cmd = "", nil, nil
		l.Entrypoint, l.Cmd = nil, nil // [] or absent: no command either way
		if !reflect.DeepEqual(w, l) {
			t.Errorf("pod %d with SkipArgs:\n%+v\nwant\n%+v", i, l, w)
		}
	}
}

// TestListPodsOfLargestCommands: an account of pods whose start commands
// are as large as a create body allows lists, the sweeper's way
// (SkipArgs, which drops the commands only once a page is read): a listed
// pod carries its command twice, in cmd and args, so a page of
// ListPageSize, which fits guarded pods, is over the client's bound on a
// body; the listing starts over in pages that fit, rather than list
// nothing. The server writes as many pods as the limit asks.
func TestListPodsOfLargestCommands(t *testing.T) {
	const n = 340 // over the bound in one page
	word := strings.Repeat("x", runpod.MaxCreatePodBody-2048)
	command := `"entrypoint":["sh","-c"],"cmd":["` + word + `"],"args":"sh -c '` + word + `'"}`
	var mu sync.Mutex
	var limits []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		limits = append(limits, limit)
		mu.Unlock()
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		to := min(from+max(limit, 1), n)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"pods":[`)
		for i := from; i < to; i++ {
			sep := ","
			if i == from {
				sep = ""
			}
			fmt.Fprintf(w, `%s{"id":"p%d","name":"overbrainer-r%d","desiredStatus":"RUNNING","createdAt":"2026-01-01T00:00:00Z",`, sep, i, i)
			_, _ = io.WriteString(w, command)
		}
		if to < n {
			fmt.Fprintf(w, `],"pagination":{"nextCursor":"%d","hasNextPage":true}}`, to)
		} else {
			_, _ = io.WriteString(w, `],"pagination":{"nextCursor":null,"hasNextPage":false}}`)
		}
	}))
	t.Cleanup(srv.Close)
	pods, err := pagedClient(t, srv.URL).ListPods(context.Background(), runpod.ListPodsOptions{SkipArgs: true})
	if err != nil || len(pods) != n {
		t.Fatalf("%d pods, %v; want %d", len(pods), err, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(limits) != 3 || limits[0] != runpod.ListPageSize || limits[1] != limits[2] || limits[1] >= n {
		t.Errorf("limits asked %v, want %d then twice a smaller one", limits, runpod.ListPageSize)
	}
}

// pagesOf is how many pages ListPods reads for n pods.
func pagesOf(n int) int { return (n + runpod.ListPageSize - 1) / runpod.ListPageSize }
