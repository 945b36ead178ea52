package runpod

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func simpleCreate(name string) CreatePodRequest {
	return CreatePodRequest{Name: name, Image: "img", GPUTypeID: "NVIDIA GeForce RTX 4090", Ports: []string{"22/tcp"}}
}

// TestCreatePodTimeoutAfterServerMadePod: Runpod makes the pod but the
// answer never arrives in time. CreatePod must find that pod rather than
// make a second one.
func TestCreatePodTimeoutAfterServerMadePod(t *testing.T) {
	c, fs := setup(t, WithHTTPClient(&http.Client{Timeout: 500 * time.Millisecond}))
	store := &podStore{}
	store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
		make()
		<-r.Context().Done() // slower than the client's timeout
	}
	store.serve(fs)
	p, err := c.CreatePod(context.Background(), simpleCreate("overbrainer-r1"))
	if err != nil {
		t.Fatal(err)
	}
	if store.len() != 1 || store.posts.Load() != 1 {
		t.Fatalf("%d pods after %d creates, want 1 after 1", store.len(), store.posts.Load())
	}
	if p.ID != store.all()[0].ID || p.Name != "overbrainer-r1" {
		t.Errorf("returned %+v, want the pod the server made", p)
	}
	if diff := cmp.Diff([]string{"POST /pods", "GET /pods"}, fs.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestCreatePodDroppedAfterServerMadePod(t *testing.T) {
	c, fs := setup(t)
	store := &podStore{}
	store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
		make()
		dropConnection(t, w)
	}
	store.serve(fs)
	p, err := c.CreatePod(context.Background(), simpleCreate("overbrainer-r2"))
	if err != nil {
		t.Fatal(err)
	}
	if store.len() != 1 || store.posts.Load() != 1 || p.ID != store.all()[0].ID {
		t.Errorf("%d pods, %d creates, returned %s", store.len(), store.posts.Load(), p.ID)
	}
}

// Runpod answered 5xx and made nothing: the listing proves it, and the
// create is sent again.
func TestCreatePodRetriesWhenNothingWasMade(t *testing.T) {
	c, fs := setup(t)
	store := &podStore{}
	var n atomic.Int32
	store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "4")
			writeProblem(w, http.StatusServiceUnavailable, "upstream unavailable")
		case 2:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>"))
		default:
			writeJSON(w, http.StatusCreated, wirePod(make()))
		}
	}
	store.serve(fs)
	p, err := c.CreatePod(context.Background(), simpleCreate("overbrainer-r3"))
	if err != nil {
		t.Fatal(err)
	}
	if store.len() != 1 || p.ID != store.all()[0].ID {
		t.Errorf("%d pods, returned %+v", store.len(), p)
	}
	// A 503 is a refusal: one look. A 502 may hide a made pod: createLooks.
	want := []string{"POST /pods", "GET /pods", "POST /pods", "GET /pods", "GET /pods", "GET /pods", "GET /pods", "POST /pods"}
	if diff := cmp.Diff(want, fs.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if w := fs.recordedWaits(); len(w) != 1+len(DefaultCreateLooks) || w[0] != 4*time.Second {
		t.Errorf("waits %v: the first must honour Retry-After", w)
	}
}

// An older pod with the same name (from a previous run that reused it) is
// not taken for the one this call made.
func TestCreatePodIgnoresOlderNamesake(t *testing.T) {
	c, fs := setup(t)
	store := &podStore{}
	old := store.add(Pod{Name: "overbrainer-r4", CreatedAt: time.Now().UTC().Add(-24 * time.Hour)})
	var n atomic.Int32
	store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
		if n.Add(1) == 1 {
			writeProblem(w, http.StatusGatewayTimeout, "timeout")
			return
		}
		writeJSON(w, http.StatusCreated, wirePod(make()))
	}
	store.serve(fs)
	p, err := c.CreatePod(context.Background(), simpleCreate("overbrainer-r4"))
	if err != nil {
		t.Fatal(err)
	}
	if p.ID == old.ID || store.len() != 2 || store.posts.Load() != 2 {
		t.Errorf("returned %s (old %s), %d pods, %d creates", p.ID, old.ID, store.len(), store.posts.Load())
	}
}

func TestCreatePodGivesUpAfterMaxAttempts(t *testing.T) {
	c, fs := setup(t, WithRetry(3, time.Second))
	store := &podStore{}
	store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
		writeProblem(w, http.StatusServiceUnavailable, "no capacity upstream")
	}
	store.serve(fs)
	_, err := c.CreatePod(context.Background(), simpleCreate("overbrainer-r5"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 || ae.Attempts != 3 {
		t.Fatalf("err %v", err)
	}
	if errors.Is(err, ErrPodMayExist) {
		t.Error("the listing showed no pod, yet the error says it may exist")
	}
	if store.posts.Load() != 3 || store.len() != 0 {
		t.Errorf("%d creates, %d pods", store.posts.Load(), store.len())
	}
	// Every failed create is followed by a listing, the last one too.
	if n := fs.count("GET /pods"); n != 3 {
		t.Errorf("%d listings, want 3", n)
	}
}

func TestCreatePodNotRetriedOnRejection(t *testing.T) {
	for _, status := range []int{400, 402, 403, 422} {
		c, fs := setup(t)
		store := &podStore{}
		store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
			writeProblem(w, status, "rejected")
		}
		store.serve(fs)
		_, err := c.CreatePod(context.Background(), simpleCreate("n"))
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != status {
			t.Errorf("%d: err %v", status, err)
		}
		if diff := cmp.Diff([]string{"POST /pods"}, fs.requests()); diff != "" {
			t.Errorf("%d: requests (-want +got):\n%s", status, diff)
		}
	}
}

// When the create's outcome is unknown and the listing fails too, the
// client must not guess: no second create, and an error that says the pod
// may exist.
func TestCreatePodUnknownOutcome(t *testing.T) {
	c, fs := setup(t)
	store := &podStore{}
	store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
		make()
		dropConnection(t, w)
	}
	store.onList = func(w http.ResponseWriter, r *http.Request) bool {
		writeProblem(w, http.StatusInternalServerError, "database down")
		return true
	}
	store.serve(fs)
	_, err := c.CreatePod(context.Background(), simpleCreate("overbrainer-r6"))
	if !errors.Is(err, ErrPodMayExist) {
		t.Fatalf("err %v, want ErrPodMayExist", err)
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 500 {
		t.Errorf("the listing's failure is not in the error: %v", err)
	}
	if store.posts.Load() != 1 {
		t.Errorf("%d creates, want 1", store.posts.Load())
	}
	fs.checkNoLeak("error", err.Error())
}

func TestCreatePodCancelledWhileReconciling(t *testing.T) {
	c, fs := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &podStore{}
	store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
		cancel()
		writeProblem(w, http.StatusBadGateway, "bad gateway")
	}
	store.serve(fs)
	if _, err := c.CreatePod(ctx, simpleCreate("n")); err != context.Canceled {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if n := fs.count("POST /pods"); n != 1 {
		t.Errorf("%d creates", n)
	}
}

// TestCreatePod500IsAnUnknownOutcome: a 500 may come after the pod was
// made. CreatePod looks for it and adopts it, or, finding none, says the
// pod may exist rather than resending into the same fault.
func TestCreatePod500IsAnUnknownOutcome(t *testing.T) {
	for _, made := range []bool{true, false} {
		c, fs := setup(t)
		store := &podStore{}
		store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
			if made {
				make()
			}
			writeProblem(w, http.StatusInternalServerError, "internal error")
		}
		store.serve(fs)
		p, err := c.CreatePod(context.Background(), simpleCreate("overbrainer-r500"))
		if made {
			if err != nil || store.len() != 1 || p.ID != store.all()[0].ID {
				t.Errorf("made: %+v, %v", p, err)
			}
			if diff := cmp.Diff([]string{"POST /pods", "GET /pods"}, fs.requests()); diff != "" {
				t.Errorf("made: requests (-want +got):\n%s", diff)
			}
			continue
		}
		var ae *APIError
		if !errors.Is(err, ErrPodMayExist) || !errors.As(err, &ae) || ae.StatusCode != 500 {
			t.Errorf("not made: %v, want ErrPodMayExist with the 500", err)
		}
		if n := store.posts.Load(); n != 1 {
			t.Errorf("not made: %d creates, want 1", n)
		}
		if n := fs.count("GET /pods"); n != len(DefaultCreateLooks) {
			t.Errorf("not made: %d listings, want %d", n, len(DefaultCreateLooks))
		}
	}
}

// TestCreatePodTimeoutLooksLonger: the pod a timed-out create made shows in
// the list only after a while. One look after one backoff step would miss
// it and create a second pod.
func TestCreatePodTimeoutLooksLonger(t *testing.T) {
	c, fs := setup(t, WithHTTPClient(&http.Client{Timeout: 300 * time.Millisecond}))
	store := &podStore{}
	store.onCreate = func(w http.ResponseWriter, r *http.Request, make func() Pod) {
		make()
		<-r.Context().Done()
	}
	var lists atomic.Int32
	store.onList = func(w http.ResponseWriter, r *http.Request) bool {
		if lists.Add(1) > 2 {
			return false
		}
		writeJSON(w, http.StatusOK, map[string]any{"pods": []any{}, "pagination": lastPage})
		return true
	}
	store.serve(fs)
	p, err := c.CreatePod(context.Background(), simpleCreate("overbrainer-late"))
	if err != nil {
		t.Fatal(err)
	}
	if store.posts.Load() != 1 || store.len() != 1 || p.ID != store.all()[0].ID {
		t.Errorf("%d creates, %d pods, returned %s", store.posts.Load(), store.len(), p.ID)
	}
	if diff := cmp.Diff([]string{"POST /pods", "GET /pods", "GET /pods", "GET /pods"}, fs.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// CreatePodBodySize is the size of the body CreatePod sends, and of one it
// refuses.
func TestCreatePodBodySize(t *testing.T) {
	c, fs := setup(t)
	(&podStore{}).serve(fs)
	req := simpleCreate("sized")
	req.Entrypoint, req.Cmd = []string{"bash", "-c"}, []string{"echo \"hi\"\n<&>"}
	req.Env = map[string]string{"A": "1"}
	n, err := CreatePodBodySize(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePod(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	fs.mu.Lock()
	sent := len(fs.exchanges[0].body)
	fs.mu.Unlock()
	if n != sent {
		t.Errorf("CreatePodBodySize = %d, CreatePod sent %d bytes", n, sent)
	}
	req.Env["BIG"] = strings.Repeat("Z", MaxCreatePodBody)
	var te *BodyTooLargeError
	if n, err := CreatePodBodySize(req); !errors.As(err, &te) || n != te.Size || n <= MaxCreatePodBody {
		t.Errorf("over the limit: %d, %v", n, err)
	}
}

// TestCreatePodBodyTooLarge: a body over Runpod's 102,400 bytes is refused
// before it is sent, with its size and what to cut, and no env value.
func TestCreatePodBodyTooLarge(t *testing.T) {
	c, fs := setup(t)
	big := strings.Repeat("Z", 90_000)
	fs.secrets = []string{big}
	req := simpleCreate("n")
	req.Env = map[string]string{"BIG_BLOB": big, "SMALL": "1"}
	req.Command = []string{"bash", "-c", strings.Repeat("echo hi; ", 2000)}
	_, err := c.CreatePod(context.Background(), req)
	var te *BodyTooLargeError
	if !errors.As(err, &te) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v, want a *BodyTooLargeError", err)
	}
	if te.Size <= MaxCreatePodBody || te.Limit != MaxCreatePodBody || len(te.Parts) < 2 ||
		te.Parts[0].Field != "env.BIG_BLOB" || te.Parts[0].Size < 90_000 || te.Parts[1].Field != "args" {
		t.Errorf("error %+v", te)
	}
	for _, want := range []string{strconv.Itoa(te.Size), "102400", "env.BIG_BLOB", "args"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	fs.checkNoLeak("error", err.Error())
	if n := len(fs.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	// The bootstrap's form: the command is named by its members.
	req.Command = nil
	req.Entrypoint, req.Cmd = []string{"bash", "-c"}, []string{strings.Repeat("echo hi; ", 4000)}
	_, err = c.CreatePod(context.Background(), req)
	if !errors.As(err, &te) || len(te.Parts) < 3 || te.Parts[0].Field != "env.BIG_BLOB" || te.Parts[1].Field != "cmd" ||
		te.Parts[1].Size < 36_000 || !strings.Contains(err.Error(), " cmd ") {
		t.Errorf("with entrypoint and cmd: %v", err)
	}
	// Under the limit, it goes out.
	(&podStore{}).serve(fs)
	req.Env = map[string]string{"BIG_BLOB": big[:60_000]}
	if _, err := c.CreatePod(context.Background(), req); err != nil {
		t.Fatalf("a body under the limit: %v", err)
	}
}
