package runpod

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestListPodsSlowPageSmaller: a page that does not come within its
// timeout is asked for again smaller, the listing starting over from the
// first page (a cursor is valid only with the limit that issued it), and
// the listing is whole.
func TestListPodsSlowPageSmaller(t *testing.T) {
	t.Parallel()
	const n = ListPageSize + 100
	var mu sync.Mutex
	var asked []string // limit/cursor of each request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, _ := strconv.Atoi(q.Get("limit"))
		from, _ := strconv.Atoi(q.Get("cursor"))
		mu.Lock()
		asked = append(asked, q.Get("limit")+"/"+q.Get("cursor"))
		mu.Unlock()
		if limit > ListPageSize/4 && from > 0 {
			// Too slow past the first page: its start, then nothing
			// until the client gives up.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"pods": [`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		var pods []string
		for i := from; i < min(from+limit, n); i++ {
			pods = append(pods, fmt.Sprintf(`{"id": "p%d", "name": "n%d", "createdAt": %q}`, i, i, time.Unix(int64(i), 0).UTC().Format(time.RFC3339)))
		}
		next := `{"nextCursor": null, "hasNextPage": false}`
		if from+limit < n {
			next = fmt.Sprintf(`{"nextCursor": "%d", "hasNextPage": true}`, from+limit)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"pods": [%s], "pagination": %s}`, strings.Join(pods, ","), next)
	}))
	t.Cleanup(srv.Close)
	c, err := New("k", WithBaseURL(srv.URL), WithRetry(3, time.Millisecond), WithHTTPClient(&http.Client{Timeout: 300 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	c.podReadTime = 0 // every page's timeout the client's
	pods, err := c.ListPods(context.Background(), ListPodsOptions{})
	if err != nil {
		t.Fatalf("ListPods: %v", err)
	}
	if len(pods) != n || pods[0].ID != "p0" || pods[n-1].ID != fmt.Sprint("p", n-1) {
		t.Errorf("%d pods, want %d in order", len(pods), n)
	}
	seen := map[string]bool{}
	for _, p := range pods {
		if seen[p.ID] {
			t.Errorf("%s listed twice", p.ID)
		}
		seen[p.ID] = true
	}
	mu.Lock()
	defer mu.Unlock()
	l := ListPageSize
	want := []string{fmt.Sprintf("%d/", l), fmt.Sprintf("%d/%d", l, l), // the slow page, not asked for again
		fmt.Sprintf("%d/", l/2), fmt.Sprintf("%d/%d", l/2, l/2),
		fmt.Sprintf("%d/", l/4)}
	for i := l / 4; i < n; i += l / 4 {
		want = append(want, fmt.Sprintf("%d/%d", l/4, i))
	}
	if fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Errorf("asked %v\nwant  %v", asked, want)
	}
}

// The timeout of a page grows with the pods it asks for; a client
// without a timeout bounds no page.
func TestPageTimeout(t *testing.T) {
	c, err := New("k", WithHTTPClient(&http.Client{Timeout: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	if small, full := c.pageTimeout(10), c.pageTimeout(ListPageSize); small <= time.Minute || full <= small {
		t.Errorf("timeouts %s for 10 pods, %s for %d", small, full, ListPageSize)
	}
	if c, _ = New("k", WithHTTPClient(&http.Client{})); c.pageTimeout(ListPageSize) != 0 {
		t.Error("a client without a timeout bounds a page")
	}
}
