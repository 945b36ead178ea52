package runpod

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// volumeServer serves one network volume that PATCH can grow.
func volumeServer(t *testing.T, fs *fakeServer, size int, patchFailures int) *sync.Mutex {
	var mu sync.Mutex
	vol := func() map[string]any {
		return map[string]any{"id": "vol1", "name": "runs", "size": size, "dataCenter": "EU-RO-1", "type": "STANDARD"}
	}
	fs.handle("GET /network-volumes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "vol1" {
			writeProblem(w, http.StatusNotFound, "network volume not found")
			return
		}
		mu.Lock()
		defer mu.Unlock()
		writeJSON(w, http.StatusOK, vol())
	})
	fs.handle("PATCH /network-volumes/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if patchFailures > 0 {
			patchFailures--
			writeProblem(w, http.StatusServiceUnavailable, "busy")
			return
		}
		var body struct{ Size int }
		if err := jsonDecode(r, &body); err != nil || body.Size < size {
			writeProblem(w, http.StatusBadRequest, "size decrease attempted")
			return
		}
		size = body.Size
		writeJSON(w, http.StatusOK, vol())
	})
	return &mu
}

func TestGetNetworkVolume(t *testing.T) {
	c, fs := setup(t)
	volumeServer(t, fs, 50, 0)
	v, err := c.GetNetworkVolume(context.Background(), "vol1")
	if err != nil {
		t.Fatal(err)
	}
	want := &NetworkVolume{ID: "vol1", Name: "runs", SizeGB: 50, DataCenterID: "EU-RO-1", Type: "STANDARD"}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("volume (-want +got):\n%s", diff)
	}
	if _, err := c.GetNetworkVolume(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing volume: %v", err)
	}
}

func TestGrowNetworkVolume(t *testing.T) {
	c, fs := setup(t)
	volumeServer(t, fs, 50, 1) // the first PATCH meets a 503 and is retried
	v, err := c.GrowNetworkVolume(context.Background(), "vol1", 120)
	if err != nil {
		t.Fatal(err)
	}
	if v.SizeGB != 120 {
		t.Errorf("size %d", v.SizeGB)
	}
	want := []string{"GET /network-volumes/vol1", "PATCH /network-volumes/vol1", "PATCH /network-volumes/vol1"}
	if diff := cmp.Diff(want, fs.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if got := string(fs.last().body); got != `{"size":120}` {
		t.Errorf("PATCH body %s", got)
	}
}

func TestGrowNetworkVolumeNeverShrinks(t *testing.T) {
	c, fs := setup(t)
	volumeServer(t, fs, 200, 0)
	ctx := context.Background()
	if _, err := c.GrowNetworkVolume(ctx, "vol1", 100); !errors.Is(err, ErrInvalid) {
		t.Errorf("shrink: err %v, want ErrInvalid", err)
	}
	v, err := c.GrowNetworkVolume(ctx, "vol1", 200) // same size: nothing to do
	if err != nil || v.SizeGB != 200 {
		t.Errorf("same size: %+v %v", v, err)
	}
	for _, bad := range []int{0, 9, 4097, -1} {
		if _, err := c.GrowNetworkVolume(ctx, "vol1", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("size %d: err %v", bad, err)
		}
	}
	want := []string{"GET /network-volumes/vol1", "GET /network-volumes/vol1"}
	if diff := cmp.Diff(want, fs.requests()); diff != "" {
		t.Errorf("requests (-want +got): no PATCH may be sent\n%s", diff)
	}
}
