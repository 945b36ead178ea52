package runpod

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/testkit/openapicheck"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// script stands for the bootstrap: quotes, newlines, $ and a heredoc.
const script = `set -eu
cat >"$HOME/x" <<'EOF'
it's "quoted" $NOT_EXPANDED \back\slash
EOF
exec /usr/local/bin/watchdog`

func fullCreateRequest() CreatePodRequest {
	return CreatePodRequest{
		Name:            "overbrainer-run42",
		Image:           "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404",
		GPUTypeID:       "NVIDIA GeForce RTX 4090",
		GPUCount:        2,
		Cloud:           CommunityCloud,
		ContainerDiskGB: 50,
		NetworkVolume:   &NetworkMount{VolumeID: "vol123", Path: "/workspace"},
		Ports:           []string{"22/tcp", "8888/http"},
		Env:             map[string]string{podenv.HostKeyEnv: "{{ RUNPOD_SECRET_overbrainer_host_key_run42 }}", "A": "1"},
		Command:         []string{"bash", "-c", script},
		DataCenterIDs:   []string{"EU-RO-1"},
	}
}

func TestCreatePod(t *testing.T) {
	c, fs := setup(t)
	req := fullCreateRequest()
	wantBody := mustJSON(map[string]any{
		"name":          req.Name,
		"image":         req.Image,
		"gpu":           map[string]any{"id": "NVIDIA GeForce RTX 4090", "count": 2},
		"cloud":         "COMMUNITY",
		"disk":          50,
		"mounts":        map[string]any{"network": []any{map[string]any{"volumeId": "vol123", "path": "/workspace"}}},
		"ports":         []string{"22/tcp", "8888/http"},
		"env":           req.Env,
		"args":          QuoteArgs(req.Command),
		"dataCenterIds": []string{"EU-RO-1"},
	})
	created := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	fs.handle("POST /pods", func(w http.ResponseWriter, r *http.Request) {
		testMethod(t, r, "POST")
		testJSONBody(t, r, wantBody)
		writeJSON(w, http.StatusCreated, wirePod(Pod{
			ID: "p1", Name: req.Name, Status: StatusProvisioning, Image: req.Image, Args: QuoteArgs(req.Command),
			GPU: &GPUConfig{ID: req.GPUTypeID, Count: 2}, CostPerHr: 0.62, CreatedAt: created, Env: req.Env,
			Mounts: Mounts{Network: []NetworkMount{{VolumeID: "vol123", Path: "/workspace"}}},
		}))
	})
	p, err := c.CreatePod(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "p1" || p.Status != StatusProvisioning || p.CostPerHr != 0.62 || !p.CreatedAt.Equal(created) {
		t.Errorf("pod %+v", p)
	}
	cmd, err := p.Command()
	if err != nil || !cmp.Equal(cmd, req.Command) {
		t.Errorf("Command() = %q, %v; want %q", cmd, err, req.Command)
	}
	if fs.count("POST /pods") != 1 {
		t.Errorf("requests %v", fs.requests())
	}
}

func TestCreatePodPersistentVolumeAndDefaults(t *testing.T) {
	c, fs := setup(t)
	fs.handle("POST /pods", func(w http.ResponseWriter, r *http.Request) {
		testJSONBody(t, r, `{"name":"n","image":"img","gpu":{"id":"g","count":1},"mounts":{"persistent":{"size":20,"path":"/workspace"}}}`)
		writeJSON(w, http.StatusCreated, wirePod(Pod{ID: "p2", Name: "n"}))
	})
	_, err := c.CreatePod(context.Background(), CreatePodRequest{
		Name: "n", Image: "img", GPUTypeID: "g",
		PersistentVolume: &PersistentMount{SizeGB: 20, Path: "/workspace"},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCreatePodValidation(t *testing.T) {
	c, fs := setup(t)
	ok := func() CreatePodRequest { return CreatePodRequest{Name: "n", Image: "i", GPUTypeID: "g"} }
	for name, mod := range map[string]func(*CreatePodRequest){
		"no name":       func(r *CreatePodRequest) { r.Name = " " },
		"no image":      func(r *CreatePodRequest) { r.Image = "" },
		"no gpu":        func(r *CreatePodRequest) { r.GPUTypeID = "" },
		"negative gpus": func(r *CreatePodRequest) { r.GPUCount = -1 },
		"bad cloud":     func(r *CreatePodRequest) { r.Cloud = "secure" },
		"negative disk": func(r *CreatePodRequest) { r.ContainerDiskGB = -5 },
		"two volumes": func(r *CreatePodRequest) {
			r.PersistentVolume = &PersistentMount{20, "/w"}
			r.NetworkVolume = &NetworkMount{"v", "/n"}
		},
		"small volume":     func(r *CreatePodRequest) { r.PersistentVolume = &PersistentMount{5, "/w"} },
		"relative path":    func(r *CreatePodRequest) { r.NetworkVolume = &NetworkMount{"v", "w"} },
		"no volume id":     func(r *CreatePodRequest) { r.NetworkVolume = &NetworkMount{"", "/w"} },
		"bad port":         func(r *CreatePodRequest) { r.Ports = []string{"22"} },
		"bad proto":        func(r *CreatePodRequest) { r.Ports = []string{"22/udp"} },
		"port range":       func(r *CreatePodRequest) { r.Ports = []string{"70000/tcp"} },
		"bad env name":     func(r *CreatePodRequest) { r.Env = map[string]string{"A=B": "x"} },
		"NUL in env":       func(r *CreatePodRequest) { r.Env = map[string]string{"A": "x\x00"} },
		"NUL in a command": func(r *CreatePodRequest) { r.Command = []string{"a\x00b"} },
	} {
		r := ok()
		mod(&r)
		if _, err := c.CreatePod(context.Background(), r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
	if n := len(fs.requests()); n != 0 {
		t.Errorf("invalid requests reached the server: %v", fs.requests())
	}
}

func TestGetPod(t *testing.T) {
	c, fs := setup(t)
	started := time.Date(2026, 6, 1, 12, 2, 0, 0, time.UTC)
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "abc123" {
			t.Errorf("id %q", r.PathValue("id"))
		}
		writeJSON(w, http.StatusOK, wirePod(Pod{
			ID: "abc123", Name: "n", Status: StatusRunning, CostPerHr: 0.44, StartedAt: &started,
			Runtime: &PodRuntime{Uptime: 60, Ports: []PortMapping{
				{Private: 8888, Public: 40000, Type: "http", IP: "100.64.0.1"},
				{Private: 22, Public: 34446, Type: "tcp", IP: "195.26.233.3"},
			}},
		}))
	})
	p, err := c.GetPod(context.Background(), "abc123")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != StatusRunning || p.StartedAt == nil || !p.StartedAt.Equal(started) {
		t.Errorf("pod %+v", p)
	}
	if ip, port, ok := p.PublicPort(22); !ok || ip != "195.26.233.3" || port != 34446 {
		t.Errorf("PublicPort(22) = %s %d %v", ip, port, ok)
	}
	if _, _, ok := p.PublicPort(9999); ok {
		t.Error("PublicPort(9999) found a port that is not mapped")
	}
}

func TestPublicPortFallsBackToDirectSSH(t *testing.T) {
	p := Pod{SSH: &PodSSH{Direct: &SSHEndpoint{Host: "1.2.3.4", Port: 2222, Username: "root"}}}
	if ip, port, ok := p.PublicPort(22); !ok || ip != "1.2.3.4" || port != 2222 {
		t.Errorf("PublicPort(22) = %s %d %v", ip, port, ok)
	}
	if _, _, ok := p.PublicPort(8888); ok {
		t.Error("the SSH fallback answered for port 8888")
	}
	// A mapping without a public port yet (provisioning) does not count.
	p = Pod{Runtime: &PodRuntime{Ports: []PortMapping{{Private: 22, Type: "tcp"}}}}
	if _, _, ok := p.PublicPort(22); ok {
		t.Error("an unassigned mapping counted")
	}
}

func TestGetPodNotFound(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-77")
		writeProblem(w, http.StatusNotFound, "pod not found")
	})
	_, err := c.GetPod(context.Background(), "gone")
	var ae *APIError
	if !errors.As(err, &ae) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v, want an *APIError matching ErrNotFound", err)
	}
	want := &APIError{Method: "GET", Path: "/pods/gone", StatusCode: 404, Title: "Not Found", Detail: "pod not found", RequestID: "req-77", Attempts: 1}
	if diff := cmp.Diff(want, ae); diff != "" {
		t.Errorf("APIError (-want +got):\n%s", diff)
	}
	if fs.count("GET /pods/gone") != 1 {
		t.Errorf("a 404 was retried: %v", fs.requests())
	}
}

// TestPathEscaping: an ID that may hold spaces (a GPU type's) still goes
// as one escaped segment. Pod IDs that would need escaping are refused
// (TestBadIDsAreRefused).
func TestPathEscaping(t *testing.T) {
	c, fs := setup(t)
	fs.handle("GET /catalog/gpus/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, "gpu type not found")
	})
	_, err := c.GetGPUType(context.Background(), "NVIDIA GeForce RTX 4090")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if got := fs.last().path; got != apiBase+"/catalog/gpus/NVIDIA%20GeForce%20RTX%204090" {
		t.Errorf("path %q: the ID was not escaped into one segment", got)
	}
}

func TestListPodsFilters(t *testing.T) {
	c, fs := setup(t)
	store := &podStore{}
	store.serve(fs)
	t0 := time.Now().UTC().Add(-time.Hour)
	for i, n := range []string{"overbrainer-b", "other", "overbrainer-a", "overbrainer-b2"} {
		store.add(Pod{Name: n, CreatedAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	names := func(pods []Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	for _, tc := range []struct {
		opts ListPodsOptions
		want []string
	}{
		{ListPodsOptions{}, []string{"overbrainer-b", "other", "overbrainer-a", "overbrainer-b2"}},
		{ListPodsOptions{Name: "overbrainer-b"}, []string{"overbrainer-b"}},
		{ListPodsOptions{NamePrefix: "overbrainer-"}, []string{"overbrainer-b", "overbrainer-a", "overbrainer-b2"}},
		{ListPodsOptions{Name: "missing"}, nil},
	} {
		pods, err := c.ListPods(context.Background(), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, names(pods)); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.opts, diff)
		}
	}
	if _, err := c.ListPods(context.Background(), ListPodsOptions{IncludeClusterPods: true}); err != nil {
		t.Fatal(err)
	}
	if q := fs.last().query; q != "includeClusterPods=true&limit="+strconv.Itoa(ListPageSize) {
		t.Errorf("query %q", q)
	}
}

func TestPodAction(t *testing.T) {
	for _, a := range []Action{ActionStart, ActionStop, ActionRestart, ActionTerminate} {
		t.Run(string(a), func(t *testing.T) {
			c, fs := setup(t)
			fs.handle("POST /pods/{id}/action", func(w http.ResponseWriter, r *http.Request) {
				testJSONBody(t, r, `{"action":"`+string(a)+`"}`)
				if a == ActionTerminate {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				writeJSON(w, http.StatusOK, wirePod(Pod{ID: "p1", Name: "n", Status: StatusExited}))
			})
			p, err := c.PodAction(context.Background(), "p1", a)
			if err != nil {
				t.Fatal(err)
			}
			if (p == nil) != (a == ActionTerminate) {
				t.Errorf("pod %+v", p)
			}
		})
	}
	c, fs := setup(t)
	if _, err := c.PodAction(context.Background(), "p1", "explode"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown action: err %v", err)
	}
	fs.handle("POST /pods/{id}/action", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusConflict, "action not valid for current pod status")
	})
	if _, err := c.PodAction(context.Background(), "p1", ActionRestart); !errors.Is(err, ErrConflict) {
		t.Errorf("409: err %v, want ErrConflict", err)
	}
}

func TestPodCostPerHour(t *testing.T) {
	c, fs := setup(t)
	store := &podStore{}
	store.serve(fs)
	p := store.add(Pod{Name: "n", CostPerHr: 1.38, GPU: &GPUConfig{ID: "NVIDIA A100 80GB PCIe", Count: 1}})
	cost, err := c.PodCostPerHour(context.Background(), p.ID)
	if err != nil || cost != 1.38 {
		t.Errorf("cost %v, %v", cost, err)
	}
}

func TestEmptyIDs(t *testing.T) {
	c, fs := setup(t)
	ctx := context.Background()
	errs := []error{}
	_, err := c.GetPod(ctx, "")
	errs = append(errs, err)
	_, err = c.PodAction(ctx, "", ActionStop)
	errs = append(errs, err)
	_, err = c.DeletePod(ctx, "")
	errs = append(errs, err)
	_, err = c.GetNetworkVolume(ctx, "")
	errs = append(errs, err)
	_, err = c.GrowNetworkVolume(ctx, "", 100)
	errs = append(errs, err)
	_, err = c.GetGPUType(ctx, "")
	errs = append(errs, err)
	errs = append(errs, c.DeleteSecret(ctx, ""))
	_, err = c.CreateSecret(ctx, "", "v")
	errs = append(errs, err)
	_, err = c.CreateSecret(ctx, "n", "")
	errs = append(errs, err)
	for i, err := range errs {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%d: err %v, want ErrInvalid", i, err)
		}
	}
	if len(fs.requests()) != 0 {
		t.Errorf("requests %v", fs.requests())
	}
}

// TestDecodeSpecExamples decodes the OpenAPI document's own example answers,
// so the types read what Runpod really sends.
func TestDecodeSpecExamples(t *testing.T) {
	d := loadSpec(t)
	ex := func(method, tmpl string, status int) []byte {
		t.Helper()
		b, err := d.example(method, tmpl, status)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var pod Pod
	if err := json.Unmarshal(ex("get", "/v2/pods/{id}", 200), &pod); err != nil {
		t.Fatal(err)
	}
	if pod.ID == "" || pod.Status == "" || pod.GPU == nil || pod.GPU.ID == "" || pod.CreatedAt.IsZero() || pod.CostPerHr <= 0 {
		t.Errorf("example pod decoded as %+v", pod)
	}
	if ip, port, ok := pod.PublicPort(22); !ok || ip == "" || port == 0 {
		t.Errorf("example pod: PublicPort(22) = %q %d %v", ip, port, ok)
	}
	if pod.Mounts.Persistent == nil || pod.Mounts.Persistent.SizeGB == 0 {
		t.Errorf("example pod mounts %+v", pod.Mounts)
	}
	var list struct{ Pods []Pod }
	if err := json.Unmarshal(ex("get", "/v2/pods", 200), &list); err != nil || len(list.Pods) == 0 {
		t.Errorf("example list: %v %+v", err, list)
	}
	var vol NetworkVolume
	if err := json.Unmarshal(ex("get", "/v2/network-volumes/{id}", 200), &vol); err != nil || vol.ID == "" || vol.SizeGB == 0 || vol.DataCenterID == "" {
		t.Errorf("example volume %+v, %v", vol, err)
	}
	var gpus struct{ GPUs []GPUType }
	if err := json.Unmarshal(ex("get", "/v2/catalog/gpus", 200), &gpus); err != nil || len(gpus.GPUs) == 0 {
		t.Fatalf("example gpus: %v %+v", err, gpus)
	}
	g := gpus.GPUs[0]
	if g.ID == "" || g.MemoryGB == 0 || g.SecurePrice <= 0 || (g.Secure && g.MaxSecureCount == 0) {
		t.Errorf("example gpu %+v", g)
	}
	// What we write back (a fake's answer) must satisfy the schema too.
	if errs := openapicheck.Schema("GpuType", []byte(mustJSON(g))); len(errs) > 0 {
		t.Errorf("GPUType.MarshalJSON violates GpuType: %v", errs)
	}
	if !strings.Contains(mustJSON(g), `"price":{"secure"`) {
		t.Errorf("GPUType JSON %s", mustJSON(g))
	}
}

// A page of ListPageSize guarded pods fits the client's bound on a body:
// the guarded command's bound here is the bootstrap's.
func TestListPageFitsGuardedPods(t *testing.T) {
	if listedPodCommand != bootstrap.MaxCommandBytes {
		t.Fatalf("listedPodCommand %d, bootstrap.MaxCommandBytes %d", listedPodCommand, bootstrap.MaxCommandBytes)
	}
	if ListPageSize*(2*listedPodCommand+listedPodFields) > maxSuccessBody || ListPageSize > restMaxLimit {
		t.Fatalf("a page of %d pods may be over the bound", ListPageSize)
	}
	if largestPodsPage*(2*MaxCreatePodBody+listedPodFields) > maxSuccessBody || largestPodsPage >= ListPageSize {
		t.Fatalf("a page of %d of the largest pods may be over the bound", largestPodsPage)
	}
}
