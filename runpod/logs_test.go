package runpod

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/termtext"
)

// The event reader: fields split on the first colon, several data lines
// joined, CRLF ends, comments and other fields skipped, a line past the
// bound cut and marked without losing the events after it.
func TestReadEvents(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+100)
	stream := ": a comment\r\nid: 1\r\ndata: a:b\r\n\r\nevent: x\nretry: 5\nid: 2\ndata: one\ndata: two\n\n\n" +
		"id: 3\ndata: " + long + "\n\nid: 4\ndata: last"
	type ev struct{ id, data string }
	var got []ev
	err := readEvents(strings.NewReader(stream+"\n\n"), func(id string, data []byte) error {
		got = append(got, ev{id, string(data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []ev{{"1", "a:b"}, {"2", "one\ntwo"}, {"3", long[:maxLogLine-len("data: ")] + termtext.CutMark}, {"4", "last"}}
	if !slices.Equal(got, want) {
		for i := range got {
			if len(got[i].data) > 40 {
				got[i].data = fmt.Sprintf("%.20s... (%d bytes)", got[i].data, len(got[i].data))
			}
		}
		t.Errorf("events %q", got)
	}
}

// A stream that breaks is opened again after the last line seen, so every
// line arrives once, in order.
func TestStreamPodLogsResumesAfterABreak(t *testing.T) {
	var mu sync.Mutex
	var lastIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		n := len(lastIDs)
		mu.Unlock()
		if r.URL.Path != "/v2/pods/pod1/logs" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		from := 1
		if n > 1 {
			fmt.Sscanf(r.Header.Get("Last-Event-ID"), "%d", &from)
			from++
		}
		for i := from; i < from+2 && i <= 5; i++ {
			fmt.Fprintf(w, "id: %d\ndata: {\"source\":\"container\",\"line\":\"l%d\",\"ts\":\"2026-06-01T12:00:00Z\"}\n\n", i, i)
		}
		http.NewResponseController(w).Flush()
		if from+2 > 5 {
			return // the end: the next connection finds no pod
		}
		panic(http.ErrAbortHandler) // the connection drops mid-stream
	}))
	defer srv.Close()
	c, err := New("k", WithBaseURL(srv.URL+"/v2"), WithPacing(false))
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	var lines []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = c.StreamPodLogs(ctx, "pod1", LogOptions{}, func(l LogLine) error {
		lines = append(lines, l.Line)
		if len(lines) == 5 {
			cancel()
		}
		return nil
	})
	if err != context.Canceled {
		t.Fatalf("stream: %v, want the cancel", err)
	}
	if want := []string{"l1", "l2", "l3", "l4", "l5"}; !slices.Equal(lines, want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"", "2", "4"}; !slices.Equal(lastIDs[:min(3, len(lastIDs))], want) {
		t.Errorf("Last-Event-ID of each connection %q, want %q", lastIDs, want)
	}
}

// A log stream refused for a while waits as long as the server asked
// (an exhausted RateLimit window, a Retry-After) before it connects
// again, rather than spend its backoff's shorter steps on refusals.
func TestStreamPodLogsWaitsAsAsked(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		call := n
		mu.Unlock()
		switch call {
		case 1:
			w.Header().Set("RateLimit", `"default";r=0;t=45`)
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: 1\ndata: {\"source\":\"container\",\"line\":\"up\"}\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New("k", WithBaseURL(srv.URL+"/v2"), WithPacing(false), WithRetry(3, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	var lines []string
	err = c.StreamPodLogs(context.Background(), "pod1", LogOptions{}, func(l LogLine) error {
		lines = append(lines, l.Line)
		return nil
	})
	if err != nil || !slices.Equal(lines, []string{"up"}) {
		t.Fatalf("stream: %v, lines %q", err, lines)
	}
	if want := []time.Duration{45 * time.Second, 7 * time.Second}; !slices.Equal(waits[:min(2, len(waits))], want) {
		t.Errorf("waits %v, want first %v", waits, want)
	}
}
