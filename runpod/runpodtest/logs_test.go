package runpodtest

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod"
)

// podOutput writes lines to a pod's output as its command would.
func podOutput(t *testing.T, srv *Server, id string, lines ...string) {
	t.Helper()
	srv.mu.Lock()
	p := srv.pods[id]
	srv.mu.Unlock()
	for _, l := range lines {
		if _, err := p.log.Write([]byte(l + "\n")); err != nil {
			t.Fatal(err)
		}
	}
}

// The client follows a pod's log through the fake: the backfill, the lines
// that come while it streams, a resume after the last line seen, and the
// end of the stream when the pod is deleted.
func TestStreamPodLogs(t *testing.T) {
	srv := newTestServer(t)
	c, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		t.Fatal(err)
	}
	p := createPod(t, srv, gpuPodBody("logs"))
	podOutput(t, srv, p.ID, "one", "two", "three")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var got []runpod.LogLine
	done := make(chan error, 1)
	go func() {
		done <- c.StreamPodLogs(ctx, p.ID, runpod.LogOptions{Tail: 2}, func(l runpod.LogLine) error {
			got = append(got, l)
			if len(got) == 2 {
				podOutput(t, srv, p.ID, "four")
			}
			if len(got) == 3 {
				return errors.New("enough")
			}
			return nil
		})
	}()
	if err := <-done; err == nil || err.Error() != "enough" {
		t.Fatalf("stream: %v, want the callback's error", err)
	}
	var text []string
	for _, l := range got {
		text = append(text, l.Line)
		if l.Source != runpod.LogsContainer || l.Time.IsZero() || l.ID == "" {
			t.Errorf("line %+v lacks its source, time or id", l)
		}
	}
	if want := []string{"two", "three", "four"}; !slices.Equal(text, want) {
		t.Fatalf("lines %q, want %q", text, want)
	}

	// Resumed after "three": "four" and what came since, then the
	// stream ends with the pod.
	podOutput(t, srv, p.ID, "five")
	var resumed []string
	go func() {
		done <- c.StreamPodLogs(ctx, p.ID, runpod.LogOptions{LastEventID: got[1].ID}, func(l runpod.LogLine) error {
			resumed = append(resumed, l.Line)
			if len(resumed) == 2 {
				mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent)
			}
			return nil
		})
	}()
	if err := <-done; err != nil {
		t.Fatalf("stream of a deleted pod: %v, want nil", err)
	}
	if want := []string{"four", "five"}; !slices.Equal(resumed, want) {
		t.Errorf("resumed lines %q, want %q", resumed, want)
	}

	// No pod: the first answer's error.
	err = c.StreamPodLogs(ctx, "nosuchpod", runpod.LogOptions{}, func(runpod.LogLine) error { return nil })
	if !errors.Is(err, runpod.ErrNotFound) {
		t.Errorf("no pod: %v, want ErrNotFound", err)
	}
}

// Bad options fail before any request, naming the option.
func TestStreamPodLogsOptions(t *testing.T) {
	srv := newTestServer(t)
	c, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []runpod.LogOptions{{Tail: 5001}, {Tail: -1}, {Source: "kernel"}, {Tail: 3, NoBackfill: true}} {
		err := c.StreamPodLogs(context.Background(), "pod1", o, func(runpod.LogLine) error { return nil })
		if !errors.Is(err, runpod.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", o, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for bad options", n)
	}
}
