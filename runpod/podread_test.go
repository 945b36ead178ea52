package runpod_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod"
)

// rawPods serves GET /v2/pods as one page of the given pod objects, and
// GET /v2/pods/{id} as the object of that id ("p" + its index).
func rawPods(t *testing.T, pods ...string) *runpod.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v2/pods" {
			_, _ = w.Write([]byte(`{"pods": [` + strings.Join(pods, ",") + `], "pagination": {"nextCursor": null, "hasNextPage": false}}`))
			return
		}
		for _, p := range pods {
			if strings.Contains(p, `"id": "`+strings.TrimPrefix(r.URL.Path, "/v2/pods/")+`"`) {
				_, _ = w.Write([]byte(p))
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	return pagedClient(t, srv.URL+"/v2")
}

// TestListPodsOddPods: each pod of a page is read on its own. Whole
// numbers written with a fraction are read; a pod that cannot be read
// is kept with its id, name and status and why, and fails nothing; one
// whose name cannot be read passes the name filters.
func TestListPodsOddPods(t *testing.T) {
	t.Parallel()
	c := rawPods(t,
		`{"id": "p1", "name": "overbrainer-a", "status": "RUNNING", "disk": 50.0, "gpu": {"id": "g", "count": 1e0}, "env": {"V": "2.0"}, "cost": 1.0, "createdAt": "2026-01-01T00:00:01Z"}`,
		`{"id": "p2", "name": "overbrainer-b", "status": "EXITED", "createdAt": "2020-01-01 00:00:00", "disk": 50.0}`,
		`{"id": "p3", "name": 7, "env": {"X": 1}}`,
		`{"id": "p4", "name": "notebook", "cost": "0.5"}`,
		`17`,
		`{"name": "overbrainer-d", "status": "RUNNING"}`,
		`{"id": "p5", "name": "overbrainer-c", "status": "RUNNING", "createdAt": "2026-01-01T00:00:00Z"}`,
	)
	pods, err := c.ListPods(context.Background(), runpod.ListPodsOptions{NamePrefix: "overbrainer-"})
	if err != nil {
		t.Fatalf("ListPods: %v", err)
	}
	var got []string
	for _, p := range pods {
		s := p.ID + ":" + p.Name + ":" + string(p.Status)
		if p.Unreadable != nil {
			s += ":unreadable"
			if p.Unreadable.ID != p.ID {
				t.Errorf("%s: the error's id is %q", p.ID, p.Unreadable.ID)
			}
		}
		got = append(got, s)
	}
	// Unreadable pods first, in the reverse of the API's order (which
	// lists newest first), then oldest first by createdAt.
	want := ":overbrainer-d:RUNNING:unreadable :::unreadable p3:::unreadable p2:overbrainer-b:EXITED:unreadable p5:overbrainer-c:RUNNING p1:overbrainer-a:RUNNING"
	if strings.Join(got, " ") != want {
		t.Errorf("listed %q\nwant   %q", strings.Join(got, " "), want)
	}
	p1 := pods[len(pods)-1]
	if p1.ContainerDiskGB != 50 || p1.GPU == nil || p1.GPU.Count != 1 || p1.Env["V"] != "2.0" || p1.CostPerHr != 1 {
		t.Errorf("p1 read as %+v", p1)
	}
	var re *runpod.PodReadError
	p2 := pods[3]
	if !errors.As(p2.Unreadable, &re) || !strings.Contains(re.Error(), "pod p2 could not be read") {
		t.Errorf("p2's error: %v", p2.Unreadable)
	}

	byName, err := c.ListPods(context.Background(), runpod.ListPodsOptions{Name: "overbrainer-b"})
	if err != nil || len(byName) != 3 {
		t.Errorf("by name: %d pods, %v; want p2 and the two whose name is unknown", len(byName), err)
	}

	// GetPod: whole numbers are read, an unreadable pod is an error.
	if p, err := c.GetPod(context.Background(), "p1"); err != nil || p.ContainerDiskGB != 50 {
		t.Errorf("GetPod p1: %+v, %v", p, err)
	}
	if _, err := c.GetPod(context.Background(), "p2"); !errors.As(err, &re) || re.ID != "p2" {
		t.Errorf("GetPod p2: %v, want a *PodReadError", err)
	}
}

// A create whose outcome is lost, then a pod of its name listed that
// cannot be read: neither adopted nor taken for none (no second create),
// the error wraps ErrPodMayExist.
func TestCreatePodUnreadableNamesake(t *testing.T) {
	t.Parallel()
	var creates int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case http.MethodPost:
			creates++
			w.WriteHeader(http.StatusBadGateway)
		default:
			_, _ = w.Write([]byte(`{"pods": [{"id": "p1", "name": "overbrainer-x", "status": "PROVISIONING", "createdAt": ""}]}`))
		}
	}))
	t.Cleanup(srv.Close)
	c, err := runpod.New("k", runpod.WithBaseURL(srv.URL+"/v2"), runpod.WithRetry(3, time.Millisecond), runpod.WithCreateLooks(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreatePod(context.Background(), runpod.CreatePodRequest{Name: "overbrainer-x", Image: "i", GPUTypeID: "g"})
	var re *runpod.PodReadError
	if !errors.Is(err, runpod.ErrPodMayExist) || !errors.As(err, &re) || creates != 1 {
		t.Errorf("CreatePod: %v after %d creates; want ErrPodMayExist, the pod unreadable, one create", err, creates)
	}
}
