package runpodtest

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// GET /v2/pods lists newest first, as the document says, across pages:
// by creation time, and pods created in the same second last made first.
func TestListPodsNewestFirst(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC))
	srv := newTestServer(t, WithClock(clock.Now))
	var want []string
	for _, name := range []string{"a", "b", "c"} {
		want = append(want, createPod(t, srv, gpuPodBody(name)).ID)
	}
	clock.Advance(time.Minute)
	want = append(want, createPod(t, srv, gpuPodBody("d")).ID)
	// Pods the account had before, added after: older, so listed last.
	want = append(want, srv.AddPods(SeedPod{Name: "old", CreatedAt: clock.Now().Add(-time.Hour)})...)
	want = []string{want[3], want[2], want[1], want[0], want[4]}

	for _, limit := range []string{"1000", "2"} {
		var got []string
		path := "/v2/pods?limit=" + limit
		for page := 0; page < 10; page++ {
			raw := mustCall(t, srv, srv.APIKey(), "GET", path, nil, http.StatusOK)
			list := decode[wireListPods](t, raw)
			for _, p := range list.Pods {
				got = append(got, p.ID)
			}
			if !list.Pagination.HasNextPage {
				break
			}
			path = "/v2/pods?limit=" + limit + "&cursor=" + *list.Pagination.NextCursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %s: listed %v, want newest first %v", limit, got, want)
		}
	}
	for _, id := range want {
		mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+id, nil, http.StatusNoContent)
	}
}
