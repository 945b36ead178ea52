package runpod_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/overbrainer/overbrainer-go/runpod"
)

// Runpod lists pods newest first (its document says so), and createdAt
// has whole seconds: ListPods returns them oldest first, those created in
// the same second too, in the order they were made.
func TestListPodsOldestFirstWithinASecond(t *testing.T) {
	// p0 is the oldest, p1..p3 were made in one second, p4 last.
	pages := []string{
		`{"pods":[{"id":"p4","createdAt":"2026-12-06T03:00:02Z"},{"id":"p3","createdAt":"2026-12-06T03:00:01Z"}],"pagination":{"nextCursor":"c1","hasNextPage":true}}`,
		`{"pods":[{"id":"p2","createdAt":"2026-12-06T03:00:01Z"},{"id":"p1","createdAt":"2026-12-06T03:00:01Z"}],"pagination":{"nextCursor":"c2","hasNextPage":true}}`,
		`{"pods":[{"id":"p0","createdAt":"2026-12-06T03:00:00Z"}],"pagination":{"nextCursor":null,"hasNextPage":false}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page := map[string]int{"": 0, "c1": 1, "c2": 2}[r.URL.Query().Get("cursor")]
		_, _ = w.Write([]byte(pages[page]))
	}))
	defer srv.Close()
	pods, err := pagedClient(t, srv.URL).ListPods(context.Background(), runpod.ListPodsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pods {
		got = append(got, p.ID)
	}
	if want := []string{"p0", "p1", "p2", "p3", "p4"}; !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}
