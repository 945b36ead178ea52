package runpodtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/openapicheck"
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

// A path the document does not have is a 404 with a problem body, for
// every key and method: 501 is only for the document's operations the
// fake does not serve. runpodctl's v1 paths are among them.
func TestUnknownPathIs404(t *testing.T) {
	srv := newTestServer(t)
	p := createPod(t, srv, gpuPodBody("p"))
	t.Cleanup(func() { mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent) })
	podKey := srv.PodKey(p.ID)
	for _, c := range []struct{ key, method, path string }{
		{srv.APIKey(), "GET", "/v2/nonexistent"},
		{srv.APIKey(), "GET", "/v2"},
		{srv.APIKey(), "POST", "/v2/pods/" + p.ID + "/stop"},
		{srv.APIKey(), "POST", "/v2/pods/" + p.ID + "/reset"},
		{srv.APIKey(), "GET", "/v2/networkvolumes"},
		{srv.APIKey(), "POST", "/v2/networkvolumes"},
		{srv.APIKey(), "GET", "/v2/containerregistryauth"},
		{srv.APIKey(), "GET", "/v2/endpoints"},
		{srv.APIKey(), "GET", "/v2/billing/networkvolumes"},
		{srv.APIKey(), "GET", "/v2/catalog/gpus/a/b"},
		{podKey, "POST", "/v2/pods/" + p.ID + "/stop"},
		{podKey, "GET", "/v2/nonexistent"},
		{srv.APIKey(), "POST", "/graphql"},
	} {
		if pr := checkProblem(t, srv, c.key, c.method, c.path, nil, http.StatusNotFound); !strings.HasPrefix(pr.Detail, "no such path") {
			t.Errorf("%s %s: detail %q", c.method, c.path, pr.Detail)
		}
	}
	// A method the document's path lacks is a 405 that names its methods.
	status, header, _ := call(t, srv, srv.APIKey(), "PUT", "/v2/pods", nil)
	if status != http.StatusMethodNotAllowed || header.Get("Allow") != "GET, POST" {
		t.Errorf("PUT /v2/pods: %d, Allow %q", status, header.Get("Allow"))
	}
}

// unservedInDoc is the package doc's list of the document's operations the
// fake answers 501: "METHOD[, METHOD] /v2/path" lines under its heading.
func unservedInDoc(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "// # What answers 501\n")
	if !ok {
		t.Fatal(`doc.go has no "# What answers 501" section`)
	}
	rest, _, _ = strings.Cut(rest, "\n// #")
	line := regexp.MustCompile(`(?m)^//\t+([A-Z, ]+?)\s+(/v2/\S+)$`)
	out := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(rest, -1) {
		for _, method := range strings.Split(m[1], ",") {
			out[strings.TrimSpace(method)+" "+m[2]] = true
		}
	}
	if len(out) == 0 {
		t.Fatal("doc.go lists no operation under # What answers 501")
	}
	return out
}

// Every operation of the document either answers (anything but a 501 or
// a 404 for an unknown path) or is in doc.go's list of what answers 501,
// and everything in that list does answer 501: the doc lists exactly what
// the fake does not serve. The fake's own table of the document's paths
// is the document's.
func TestEveryDocumentedOperationAnswersOrIsListed(t *testing.T) {
	raw, err := os.ReadFile("testdata/openapi_v2.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	listed := unservedInDoc(t)
	// Each call is bodiless: its answers are held to the document, its
	// requests are not.
	srv := NewTestServer(t, WithMiddleware(openapicheck.Middleware(answersOnly{t})))
	param := regexp.MustCompile(`\{[^}]+\}`)
	var table []string
	for _, p := range apiPaths {
		table = append(table, p.path+" "+strings.Join(p.methods, ","))
	}
	var inDoc []string
	for path, ops := range doc.Paths {
		var methods []string
		for _, m := range []string{"get", "put", "post", "patch", "delete"} {
			if _, ok := ops[m]; !ok {
				continue
			}
			method := strings.ToUpper(m)
			methods = append(methods, method)
			op := method + " " + path
			status, _, body := call(t, srv, srv.APIKey(), method, param.ReplaceAllString(path, "nosuchid"), nil)
			switch {
			case listed[op] && status != http.StatusNotImplemented:
				t.Errorf("%s: doc.go lists it as 501, it answers %d: %s", op, status, body)
			case !listed[op] && status == http.StatusNotImplemented:
				t.Errorf("%s answers 501, and doc.go does not list it", op)
			case status == http.StatusNotFound && strings.Contains(string(body), "no such path"):
				t.Errorf("%s: 404 as an unknown path", op)
			}
			delete(listed, op)
		}
		inDoc = append(inDoc, path+" "+strings.Join(sortedMethods(methods), ","))
	}
	for op := range listed {
		t.Errorf("doc.go lists %s, which the document does not have", op)
	}
	for i := range table {
		p := apiPaths[i]
		table[i] = p.path + " " + strings.Join(sortedMethods(slices.Clone(p.methods)), ",")
	}
	slices.Sort(table)
	slices.Sort(inDoc)
	if !slices.Equal(table, inDoc) {
		t.Errorf("apiPaths:\n%s\nthe document:\n%s", strings.Join(table, "\n"), strings.Join(inDoc, "\n"))
	}
}

// answersOnly reports what the document check finds in answers, not in
// requests.
type answersOnly struct{ t *testing.T }

func (a answersOnly) Errorf(format string, args ...any) {
	if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, ": request: ") {
		a.t.Error(msg)
	}
}

func sortedMethods(m []string) []string {
	slices.Sort(m)
	return m
}

// A running pod's runtime.ports lists its http ports next to its port 22
// mapping, in the document's PodRuntimePort shape: an http port has no
// public port (Runpod's proxy serves it).
func TestRuntimePortsListHTTPPorts(t *testing.T) {
	srv := newTestServer(t)
	body := gpuPodBody("web")
	body["ports"] = []string{"22/tcp", "8888/http", "6006/http", "9000/udp"}
	p := createPod(t, srv, body)
	t.Cleanup(func() { mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+p.ID, nil, http.StatusNoContent) })
	raw := mustCall(t, srv, srv.APIKey(), "GET", "/v2/pods/"+p.ID, nil, http.StatusOK)
	checkSchema(t, "Pod", raw)
	got := decode[wirePod](t, raw)
	if got.Runtime == nil || len(got.Runtime.Ports) != 3 {
		t.Fatalf("runtime %+v, want port 22 and the two http ports", got.Runtime)
	}
	if p22 := got.Runtime.Ports[0]; p22.Private != 22 || p22.Public == nil || p22.Type != "tcp" {
		t.Errorf("port 22: %+v", p22)
	}
	for i, want := range []int{8888, 6006} {
		if port := got.Runtime.Ports[i+1]; port.Private != want || port.Public != nil || port.Type != "http" || port.IP != "127.0.0.1" {
			t.Errorf("http port %d: %+v", want, port)
		}
	}
	// The wire shape itself: public is there, as null.
	if !strings.Contains(string(raw), `{"private":8888,"public":null,"type":"http","ip":"127.0.0.1"}`) {
		t.Errorf("runtime.ports in %s", raw)
	}
}

// The catalog applies the document's filters: the data centers' regions,
// compliance, globalNetwork and networkVolumeTypes (and a list include),
// the GPU types' countryCodes, cudaVersions and product lists, on the
// list and on one type; and refuses them as the document says.
func TestCatalogFilters(t *testing.T) {
	srv := newTestServer(t,
		WithGPUTypes(
			GPUType{ID: "A", Name: "A", MemoryGB: 24, SecurePrice: 0.5, MaxCount: 8, Stock: map[string]int{"EU-FR-1": 2, "US-TX-1": 5}, CUDA: "12.8"},
			GPUType{ID: "B", Name: "B", MemoryGB: 48, SecurePrice: 0.9, MaxCount: 8, Stock: map[string]int{"US-TX-1": 1}, CUDA: "12.4"},
		),
		WithDataCenters(
			DataCenter{ID: "EU-FR-1", Region: "EUROPE", Country: "FR", Compliance: []string{"GDPR", "ISO_IEC_27001"},
				GlobalNetwork: true, NetworkVolumeTypes: []string{"STANDARD", "HIGH_PERFORMANCE"}},
			DataCenter{ID: "US-TX-1", Country: "US", Compliance: []string{"SOC_2_TYPE_2"}},
		))
	// dcs is a data-center list as its ids; gpus a GPU list as
	// id:availability[dc:availability ...].
	dcs := func(t *testing.T, raw []byte) string {
		checkSchema(t, "ListDataCentersResponse", raw)
		var ids []string
		for _, d := range decode[wireListDataCenters](t, raw).DataCenters {
			ids = append(ids, d.ID)
		}
		return strings.Join(ids, ",")
	}
	gpu := func(g wireGPUType) string {
		if g.Availability == nil {
			return g.ID
		}
		var per []string
		for _, d := range g.DataCenters {
			per = append(per, d.ID+":"+d.Availability)
		}
		return g.ID + ":" + *g.Availability + "[" + strings.Join(per, " ") + "]"
	}
	gpus := func(t *testing.T, raw []byte) string {
		checkSchema(t, "ListGpuTypesResponse", raw)
		var out []string
		for _, g := range decode[wireListGPUTypes](t, raw).GPUs {
			out = append(out, gpu(g))
		}
		return strings.Join(out, ",")
	}
	one := func(t *testing.T, raw []byte) string {
		checkSchema(t, "GpuType", raw)
		return gpu(decode[wireGPUType](t, raw))
	}
	const dc, list, stock = "/v2/catalog/datacenters", "/v2/catalog/gpus", "?include=AVAILABILITY&product=POD"
	for _, c := range []struct {
		path   string
		status int
		read   func(*testing.T, []byte) string
		want   string
	}{
		{dc, 200, dcs, "EU-FR-1,FAKE-LOCAL-1,US-TX-1"},
		{dc + "?regions=EUROPE", 200, dcs, "EU-FR-1"},
		{dc + "?regions=EUROPE,NORTH_AMERICA", 200, dcs, "EU-FR-1,FAKE-LOCAL-1,US-TX-1"},
		{dc + "?regions=ASIA", 200, dcs, ""},
		{dc + "?compliance=GDPR", 200, dcs, "EU-FR-1"},
		{dc + "?compliance=GDPR,ISO_IEC_27001", 200, dcs, "EU-FR-1"},
		{dc + "?compliance=GDPR,SOC_2_TYPE_2", 200, dcs, ""},
		{dc + "?compliance=HIPAA", 200, dcs, ""},
		{dc + "?globalNetwork=true", 200, dcs, "EU-FR-1"},
		{dc + "?globalNetwork=false", 200, dcs, "FAKE-LOCAL-1,US-TX-1"},
		{dc + "?networkVolumeTypes=HIGH_PERFORMANCE", 200, dcs, "EU-FR-1"},
		{dc + "?networkVolumeTypes=STANDARD,HIGH_PERFORMANCE", 200, dcs, "EU-FR-1"},
		{dc + "?networkVolumeTypes=STANDARD", 200, dcs, "EU-FR-1,FAKE-LOCAL-1,US-TX-1"},
		{dc + "?regions=NORTH_AMERICA&compliance=SOC_2_TYPE_2", 200, dcs, "US-TX-1"},
		{dc + "?include=GPU_AVAILABILITY,CPU_AVAILABILITY&regions=EUROPE", 200, dcs, "EU-FR-1"},
		{dc + "?regions=MARS", 422, nil, ""},
		{dc + "?compliance=gdpr", 422, nil, ""},
		{dc + "?globalNetwork=yes", 422, nil, ""},
		{dc + "?networkVolumeTypes=FAST", 422, nil, ""},
		{dc + "?include=GPU", 422, nil, ""},

		{list, 200, gpus, "A,B"},
		{list + stock, 200, gpus, "A:MEDIUM[EU-FR-1:LOW US-TX-1:MEDIUM],B:LOW[US-TX-1:LOW]"},
		{list + stock + "&countryCodes=FR", 200, gpus, "A:LOW[EU-FR-1:LOW]"},
		{list + stock + "&countryCodes=US", 200, gpus, "A:MEDIUM[US-TX-1:MEDIUM],B:LOW[US-TX-1:LOW]"},
		{list + stock + "&countryCodes=FR,US", 200, gpus, "A:MEDIUM[EU-FR-1:LOW US-TX-1:MEDIUM],B:LOW[US-TX-1:LOW]"},
		{list + stock + "&countryCodes=DE", 200, gpus, ""},
		{list + stock + "&cudaVersions=12.4", 200, gpus, "A:NONE[],B:LOW[US-TX-1:LOW]"},
		{list + stock + "&cudaVersions=12.4,12.8", 200, gpus, "A:MEDIUM[EU-FR-1:LOW US-TX-1:MEDIUM],B:LOW[US-TX-1:LOW]"},
		{list + "?include=AVAILABILITY&product=POD,SERVERLESS&countryCodes=FR", 200, gpus, "A:LOW[EU-FR-1:LOW]"},
		{list + "?countryCodes=FR", 400, nil, ""},
		{list + "?cudaVersions=12.4", 400, nil, ""},
		{list + stock + "&cudaVersions=12.4&minCudaVersion=12", 400, nil, ""},
		{list + stock + "&countryCodes=fr", 422, nil, ""},
		{list + stock + "&countryCodes=FRA", 422, nil, ""},
		{list + stock + "&cudaVersions=12", 422, nil, ""},
		{list + "?include=AVAILABILITY&product=GPU", 422, nil, ""},

		{list + "/B", 200, one, "B"},
		{list + "/B" + stock, 200, one, "B:LOW[US-TX-1:LOW]"},
		{list + "/A" + stock + "&countryCodes=FR", 200, one, "A:LOW[EU-FR-1:LOW]"},
		{list + "/A" + stock + "&countryCodes=DE", 200, one, "A:NONE[]"},
		{list + "/A" + stock + "&cudaVersions=12.4", 200, one, "A:NONE[]"},
		{list + "/A?countryCodes=FR", 400, nil, ""},
		{list + "/A" + stock + "&countryCodes=F", 422, nil, ""},
	} {
		t.Run(c.path, func(t *testing.T) {
			if c.status != 200 {
				checkProblem(t, srv, srv.APIKey(), "GET", c.path, nil, c.status)
				return
			}
			if got := c.read(t, mustCall(t, srv, srv.APIKey(), "GET", c.path, nil, 200)); got != c.want {
				t.Errorf("GET %s: %q, want %q", c.path, got, c.want)
			}
		})
	}
}

// The CPU catalog and one data center are served (runpodctl's CPU pod
// create reads the CPU stock first), in the document's shapes, with
// their queries refused as the document says.
func TestCatalogCPUsAndOneDataCenter(t *testing.T) {
	srv := newTestServer(t, WithCPURate(0.05), WithDataCenters(DataCenter{ID: "EU-FR-1", Region: "EUROPE", Country: "FR"}))
	raw := mustCall(t, srv, srv.APIKey(), "GET", "/v2/catalog/cpus?include=AVAILABILITY&product=POD&vcpuCount=2", nil, http.StatusOK)
	checkSchema(t, "ListCpuTypesResponse", raw)
	cpus := decode[wireListCPUTypes](t, raw).CPUs
	if len(cpus) == 0 {
		t.Fatalf("no CPU flavors: %s", raw)
	}
	for _, c := range cpus {
		if c.Price.SecurePerVCPU != 0.05 || c.Availability == nil || *c.Availability != "HIGH" ||
			len(c.DataCenters) != 1 || c.DataCenters[0].ID != "FAKE-LOCAL-1" {
			t.Errorf("flavor %+v", c)
		}
	}
	raw = mustCall(t, srv, srv.APIKey(), "GET", "/v2/catalog/cpus/"+cpus[0].ID+"?include=AVAILABILITY&product=POD&vcpuCount=64", nil, http.StatusOK)
	checkSchema(t, "CpuType", raw)
	if c := decode[wireCPUType](t, raw); c.Availability == nil || *c.Availability != "NONE" || c.DataCenters != nil {
		t.Errorf("64 vCPUs of %s: %s", cpus[0].ID, raw)
	}
	raw = mustCall(t, srv, srv.APIKey(), "GET", "/v2/catalog/cpus/"+cpus[0].ID, nil, http.StatusOK)
	if c := decode[wireCPUType](t, raw); c.Availability != nil {
		t.Errorf("stock unasked: %s", raw)
	}
	raw = mustCall(t, srv, srv.APIKey(), "GET", "/v2/catalog/datacenters/FAKE-LOCAL-1?include=CPU_AVAILABILITY", nil, http.StatusOK)
	checkSchema(t, "DataCenter", raw)
	if d := decode[wireDataCenter](t, raw); d.ID != "FAKE-LOCAL-1" || len(d.CPUAvailability) != len(cpus) || d.GPUAvailability != nil {
		t.Errorf("FAKE-LOCAL-1: %s", raw)
	}
	raw = mustCall(t, srv, srv.APIKey(), "GET", "/v2/catalog/datacenters/EU-FR-1", nil, http.StatusOK)
	if d := decode[wireDataCenter](t, raw); d.Region != "EUROPE" || d.CPUAvailability != nil {
		t.Errorf("EU-FR-1: %s", raw)
	}
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/v2/catalog/cpus/nope", 404},
		{"/v2/catalog/datacenters/NOPE-1", 404},
		{"/v2/catalog/cpus?vcpuCount=2", 400},
		{"/v2/catalog/cpus?include=AVAILABILITY", 400},
		{"/v2/catalog/cpus?include=AVAILABILITY&product=POD&vcpuCount=6", 400},
		{"/v2/catalog/cpus?include=AVAILABILITY&product=CLUSTER", 422},
		{"/v2/catalog/cpus?include=AVAILABILITY&product=POD&vcpuCount=1", 422},
		{"/v2/catalog/datacenters/FAKE-LOCAL-1?include=ALL", 422},
	} {
		checkProblem(t, srv, srv.APIKey(), "GET", c.path, nil, c.status)
	}
}

// A body with members its schema lacks is a 422 naming every one of
// them, at each level, in the document's words ("$: additional properties
// 'bogus' not allowed"), not only the first that Go's decoder meets.
func TestUnknownMembersNamedAsTheDocument(t *testing.T) {
	srv := newTestServer(t, AllowPodsLeft())
	nested := gpuPodBody("x")
	nested["gpu"] = map[string]any{"id": gpu4090, "colour": "red"}
	nested["mounts"] = map[string]any{"network": []any{map[string]any{"volumeId": "v", "path": "/data", "readOnly": true}}}
	nested["Name"] = "x"
	for _, c := range []struct {
		path string
		body any
		want []string
	}{
		// runpodctl 2.7's v1 create body.
		{"/v2/pods", `{"name":"rc-cpu","imageName":"busybox","computeType":"CPU","containerDiskInGb":20,"volumeMountPath":"/workspace","cloudType":"SECURE","dockerArgs":"sleep 600"}`,
			[]string{"$: additional properties 'cloudType', 'computeType', 'containerDiskInGb', 'dockerArgs', 'imageName', 'volumeMountPath' not allowed"}},
		{"/v2/pods", nested, []string{
			"$: additional properties 'Name' not allowed",
			"$.gpu: additional properties 'colour' not allowed",
			"$.mounts.network[0]: additional properties 'readOnly' not allowed",
		}},
		{"/v2/network-volumes", `{"name":"v","size":10,"dataCenterId":"FAKE-LOCAL-1"}`,
			[]string{"$: additional properties 'dataCenterId' not allowed"}},
	} {
		pr := checkProblem(t, srv, srv.APIKey(), "POST", c.path, c.body, http.StatusUnprocessableEntity)
		if !slices.Equal(pr.Errors, c.want) {
			t.Errorf("POST %s: errors %q, want %q", c.path, pr.Errors, c.want)
		}
	}
}
