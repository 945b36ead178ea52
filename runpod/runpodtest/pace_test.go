package runpodtest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// burst sends n ListPods at once through clients (round robin) and returns
// how many requests the fake saw and how many of them it refused.
func burst(t *testing.T, srv *runpodtest.Server, clients []*runpod.Client, n int) (sent, refused int) {
	t.Helper()
	var g errgroup.Group
	for i := range n {
		c := clients[i%len(clients)]
		g.Go(func() error {
			_, err := c.ListPods(context.Background(), runpod.ListPodsOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("a list failed: %v", err)
	}
	for _, r := range srv.Requests() {
		sent++
		if r.Status == http.StatusTooManyRequests {
			refused++
		}
	}
	return sent, refused
}

// A burst larger than the quota window waits its turn: no request is spent
// on a 429, whether the calls share one client or several of the same key.
// Without pacing the same burst meets 429s, so the figure is the pacer's.
func TestClientPacesABurstWithinTheQuota(t *testing.T) {
	quota := runpodtest.QuotaWindow{Name: "second", Limit: 8, Window: time.Second}
	for _, tc := range []struct {
		name    string
		clients int
		pacing  bool
	}{
		{"one client", 1, true},
		{"clients of one key", 4, true},
		{"no pacing", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := checkedfake.NewTestServer(t, runpodtest.WithQuota(quota))
			var clients []*runpod.Client
			for range tc.clients {
				clients = append(clients, newClient(t, srv, runpod.WithRetry(10, 2*time.Second), runpod.WithPacing(tc.pacing)))
			}
			// The first answer teaches the pacer the quota.
			if _, err := clients[0].ListPods(context.Background(), runpod.ListPodsOptions{}); err != nil {
				t.Fatal(err)
			}
			const n = 24
			sent, refused := burst(t, srv, clients, n)
			t.Logf("%d calls: %d requests, %d refused", n+1, sent, refused)
			switch {
			case tc.pacing && (refused != 0 || sent != n+1):
				t.Errorf("paced: %d requests, %d of them refused; want %d, none refused", sent, refused, n+1)
			case !tc.pacing && refused == 0:
				t.Errorf("unpaced, the burst met no 429: the test does not exercise the quota")
			}
		})
	}
}

// A call waiting for its turn ends with its context, without sending.
func TestClientPacingHonoursCancel(t *testing.T) {
	srv := checkedfake.NewTestServer(t, runpodtest.WithQuota(runpodtest.QuotaWindow{Name: "slow", Limit: 1, Window: 20 * time.Second}))
	c := newClient(t, srv, runpod.WithRetry(4, time.Minute))
	if _, err := c.ListPods(context.Background(), runpod.ListPodsOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.ListPods(ctx, runpod.ListPodsOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the context's deadline", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1: the waiting call was sent", n)
	}
}
