package runpodtest

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CapacityDetail is Runpod's answer (400) to a create for which no machine
// of the type is free.
const CapacityDetail = "There are no longer any instances available with the requested specifications. Please refresh and try again."

// InsufficientFundsDetail is the fake's 402 detail.
const InsufficientFundsDetail = "Insufficient balance: add credits to your account to deploy."

// plenty is the stock of a type without a Stock map: more than any test
// takes.
const plenty = 1000

// DefaultCUDA is the CUDA version of the fake's machines when a GPUType
// names none.
const DefaultCUDA = "12.8"

// stockState is the fake's refusals, set by RefuseGPU.
type stockState struct {
	refuse  map[string]int // GPU type id -> status a create answers
	balance *float64       // SetBalance's; nil: unlimited
	// out is OutOfStock's: GPU type id -> when its stock returns on the
	// fake's clock (zero: when Restock says).
	out map[string]time.Time
}

// SetBalance gives the account usd of credit: once its pods have been
// billed that much, every create answers 402.
func (s *Server) SetBalance(usd float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stock.balance = &usd
}

// spentLocked reports whether the balance is spent.
func (s *Server) spentLocked() bool {
	if s.stock.balance == nil {
		return false
	}
	now, total := s.cfg.now(), 0.0
	for _, id := range s.order {
		total += s.pods[id].snapshot(s, now).Bill.USD
	}
	return total >= *s.stock.balance
}

// RefuseGPU makes every create of GPU type id answer status: 400 with
// Runpod's capacity text, 402 (no credits) or 403 (no access to the type's
// pool). A status of 0 ends the refusal.
func (s *Server) RefuseGPU(id string, status int) {
	switch status {
	case 0, http.StatusBadRequest, http.StatusPaymentRequired, http.StatusForbidden:
	default:
		panic("runpodtest: RefuseGPU takes 0, 400, 402 or 403")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stock.refuse == nil {
		s.stock.refuse = map[string]int{}
	}
	if status == 0 {
		delete(s.stock.refuse, id)
		return
	}
	s.stock.refuse[id] = status
}

// dataCentersLocked lists the fake's data centers: its own, those of
// WithDataCenters, and every one a GPU type's Stock or a volume names,
// sorted.
func (s *Server) dataCentersLocked() []string {
	dcs := []string{fakeDataCenter}
	for _, d := range s.cfg.dataCenters {
		if !slices.Contains(dcs, d.ID) {
			dcs = append(dcs, d.ID)
		}
	}
	for _, g := range s.cfg.gpus {
		for dc := range g.Stock {
			if !slices.Contains(dcs, dc) {
				dcs = append(dcs, dc)
			}
		}
	}
	for _, v := range s.volumes {
		if !slices.Contains(dcs, v.DataCenter) {
			dcs = append(dcs, v.DataCenter)
		}
	}
	slices.Sort(dcs)
	return dcs
}

// freeLocked is how many GPUs of type g are free in data center dc: its
// stock less what live pods hold there.
func (s *Server) freeLocked(g GPUType, dc string) int {
	if s.outOfStockLocked(g.ID) {
		return 0
	}
	total := plenty
	if g.Stock != nil {
		total = g.Stock[dc]
	} else if dc != fakeDataCenter {
		total = 0
	}
	for _, p := range s.pods {
		if p.gpuID == g.ID && p.dataCenter == dc && holdsGPU(p.status) {
			total -= p.gpuCount
		}
	}
	return max(total, 0)
}

func holdsGPU(status string) bool {
	return status == StatusProvisioning || status == StatusStarting || status == StatusRunning
}

func level(free, count int) string {
	switch {
	case free < max(count, 1):
		return "NONE"
	case free < 3:
		return "LOW"
	case free < 8:
		return "MEDIUM"
	}
	return "HIGH"
}

func cudaAtLeast(have, floor string) bool {
	hm, hn, _ := strings.Cut(have, ".")
	fm, fn, _ := strings.Cut(floor, ".")
	a, _ := strconv.Atoi(hm)
	b, _ := strconv.Atoi(fm)
	if a != b {
		return a > b
	}
	c, _ := strconv.Atoi(hn)
	d, _ := strconv.Atoi(fn)
	return c >= d
}

func (g GPUType) cuda() string {
	if g.CUDA == "" {
		return DefaultCUDA
	}
	return g.CUDA
}

// placeLocked chooses the data center of a create of count GPUs of g, from
// the requested ones (any when empty), or answers why it cannot: the
// status and detail of Runpod's refusal.
func (s *Server) placeLocked(g GPUType, count int, want []string, minCUDA string) (dc string, status int, detail string) {
	if st := s.stock.refuse[g.ID]; st != 0 {
		switch st {
		case http.StatusPaymentRequired:
			return "", st, InsufficientFundsDetail
		case http.StatusForbidden:
			return "", st, fmt.Sprintf("your account cannot access the pool of %s", g.ID)
		}
		return "", st, CapacityDetail
	}
	if s.spentLocked() {
		return "", http.StatusPaymentRequired, InsufficientFundsDetail
	}
	if minCUDA != "" && !cudaAtLeast(g.cuda(), minCUDA) {
		return "", http.StatusBadRequest, CapacityDetail
	}
	if len(want) == 0 {
		want = s.dataCentersLocked()
	}
	for _, dc := range want {
		if s.freeLocked(g, dc) >= count {
			return dc, 0, ""
		}
	}
	return "", http.StatusBadRequest, CapacityDetail
}

// gpuQuery is a GPU catalog read's availability query (include=
// AVAILABILITY and the parameters valid only with it).
type gpuQuery struct {
	stock     bool
	cloud     string
	count     int
	minCUDA   string
	cudas     []string // cudaVersions: exact versions
	countries []string // countryCodes
}

// parseGPUQuery reads the query of GET /v2/catalog/gpus[/{id}], or
// answers its refusal (422 off the schema, 400 off a rule) and returns
// false.
func parseGPUQuery(w http.ResponseWriter, r *http.Request) (gpuQuery, bool) {
	q := r.URL.Query()
	var errs []string
	include := enumParam(q, "include", []string{"AVAILABILITY"}, &errs)
	if len(include) > 1 {
		errs = append(errs, "$.include: maxItems 1")
	}
	product := enumParam(q, "product", []string{"POD", "CLUSTER", "SERVERLESS"}, &errs)
	cloud := cmpOr(q.Get("cloud"), "SECURE")
	if cloud != "SECURE" && cloud != "COMMUNITY" {
		errs = append(errs, "$.cloud: must be SECURE or COMMUNITY")
	}
	count := 1
	if v := q.Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, "$.count: minimum 1")
		}
		count = n
	}
	minCUDA := q.Get("minCudaVersion")
	if minCUDA != "" && !cudaRE.MatchString(minCUDA) && !digitsOnly(minCUDA) {
		errs = append(errs, "$.minCudaVersion: not major or major.minor")
	}
	cudas, _ := listParam(q, "cudaVersions")
	for _, v := range cudas {
		if !cudaRE.MatchString(v) {
			errs = append(errs, fmt.Sprintf("$.cudaVersions: %q is not major.minor", v))
		}
	}
	countries, _ := listParam(q, "countryCodes")
	for _, v := range countries {
		if !countryRE.MatchString(v) {
			errs = append(errs, fmt.Sprintf("$.countryCodes: %q is not an uppercase ISO 3166-1 alpha-2 code", v))
		}
	}
	if len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return gpuQuery{}, false
	}
	stock := len(include) > 0
	switch {
	case stock != (len(product) > 0):
		writeProblem(w, http.StatusBadRequest, "product is required with include=AVAILABILITY, and valid only with it")
		return gpuQuery{}, false
	case !stock && (q.Has("cloud") || q.Has("count") || q.Has("minCudaVersion") || q.Has("cudaVersions") || q.Has("countryCodes")):
		writeProblem(w, http.StatusBadRequest, "cloud, count, minCudaVersion, cudaVersions and countryCodes are valid only with include=AVAILABILITY")
		return gpuQuery{}, false
	case minCUDA != "" && len(cudas) > 0:
		writeProblem(w, http.StatusBadRequest, "cudaVersions and minCudaVersion are mutually exclusive")
		return gpuQuery{}, false
	}
	if digitsOnly(minCUDA) {
		minCUDA += ".0"
	}
	return gpuQuery{stock: stock, cloud: cloud, count: count, minCUDA: minCUDA, cudas: cudas, countries: countries}, true
}

var countryRE = regexp.MustCompile(`^[A-Z]{2}$`)

// listParam is a comma-separated query parameter's values (the
// document's style form, explode false), repeats included: nil and false
// when it is absent.
func listParam(q url.Values, name string) ([]string, bool) {
	raw, ok := q[name]
	var out []string
	for _, v := range raw {
		out = append(out, strings.Split(v, ",")...)
	}
	return out, ok
}

// enumParam is listParam for a parameter whose values are one of allowed:
// each other value adds a 422 error to errs.
func enumParam(q url.Values, name string, allowed []string, errs *[]string) []string {
	vals, _ := listParam(q, name)
	for _, v := range vals {
		if !slices.Contains(allowed, v) {
			*errs = append(*errs, fmt.Sprintf("$.%s: %q is not one of %s", name, v, strings.Join(allowed, ", ")))
		}
	}
	return vals
}

func (s *Server) listGPUTypesQuery(w http.ResponseWriter, r *http.Request) {
	gq, ok := parseGPUQuery(w, r)
	if !ok {
		return
	}
	out := wireListGPUTypes{GPUs: []wireGPUType{}}
	s.mu.Lock()
	dcs := s.dataCentersLocked()
	for _, g := range s.cfg.gpus {
		wg := g.wire()
		if gq.stock {
			// A type offered in none of the countries asked drops out.
			if len(gq.countries) > 0 && !s.offeredInLocked(g, gq.countries, dcs) {
				continue
			}
			wg.Availability, wg.DataCenters = s.stockLocked(g, gq, dcs)
		}
		out.GPUs = append(out.GPUs, wg)
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// offers reports whether data center dc has machines of type g (free
// or not).
func offers(g GPUType, dc string) bool {
	if g.Stock == nil {
		return dc == fakeDataCenter
	}
	_, ok := g.Stock[dc]
	return ok
}

// offeredInLocked reports whether a data center in one of countries has
// machines of type g.
func (s *Server) offeredInLocked(g GPUType, countries, dcs []string) bool {
	for _, dc := range dcs {
		if offers(g, dc) && slices.Contains(countries, s.describeLocked(dc).Country) {
			return true
		}
	}
	return false
}

// stockLocked is a type's availability for the catalog: overall and in
// each data center that offers it, within the query's countries.
func (s *Server) stockLocked(g GPUType, gq gpuQuery, dcs []string) (*string, []wireDCStock) {
	none := "NONE"
	price := g.SecurePrice
	if gq.cloud == "COMMUNITY" {
		price = g.CommunityPrice
	}
	switch {
	case price <= 0, s.stock.refuse[g.ID] != 0,
		gq.minCUDA != "" && !cudaAtLeast(g.cuda(), gq.minCUDA),
		len(gq.cudas) > 0 && !slices.Contains(gq.cudas, g.cuda()):
		return &none, nil
	}
	var per []wireDCStock
	best := 0
	for _, dc := range dcs {
		if !offers(g, dc) {
			continue
		}
		if len(gq.countries) > 0 && !slices.Contains(gq.countries, s.describeLocked(dc).Country) {
			continue
		}
		free := s.freeLocked(g, dc)
		per = append(per, wireDCStock{ID: dc, Name: dc, Availability: level(free, gq.count)})
		best = max(best, free)
	}
	overall := level(best, gq.count)
	if overall == "NONE" {
		per = nil
	}
	return &overall, per
}

func digitsOnly(v string) bool {
	_, err := strconv.Atoi(v)
	return v != "" && err == nil && !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "+")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// The enums of the data-center catalog's filters.
var (
	dcRegions    = []string{"NORTH_AMERICA", "SOUTH_AMERICA", "EUROPE", "ASIA", "MIDDLE_EAST", "AFRICA", "OCEANIA", "ANTARCTICA", "UNKNOWN"}
	dcCompliance = []string{"GDPR", "ISO_IEC_27001", "ISO_14001", "PCI_DSS", "HITRUST", "SOC_1_TYPE_2",
		"SOC_2_TYPE_2", "SOC_3_TYPE_2", "ITAR", "FISMA_HIGH", "HIPAA", "RENEWABLE"}
	volumeTypes = []string{"STANDARD", "HIGH_PERFORMANCE"}
)

// listDataCenters answers the data-center catalog, filtered as the
// document says: regions any of, networkVolumeTypes and compliance all
// of, globalNetwork equal; the families combined.
func (s *Server) listDataCenters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var errs []string
	include := enumParam(q, "include", []string{"GPU_AVAILABILITY", "CPU_AVAILABILITY"}, &errs)
	regions := enumParam(q, "regions", dcRegions, &errs)
	vols := enumParam(q, "networkVolumeTypes", volumeTypes, &errs)
	compliance := enumParam(q, "compliance", dcCompliance, &errs)
	var global *bool
	if v, ok := q["globalNetwork"]; ok {
		if len(v) > 1 || (v[0] != "true" && v[0] != "false") {
			errs = append(errs, "$.globalNetwork: must be true or false")
		}
		b := v[0] == "true"
		global = &b
	}
	if len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return
	}
	s.mu.Lock()
	out := wireListDataCenters{DataCenters: []wireDataCenter{}}
	for _, dc := range s.dataCentersLocked() {
		d := s.describeLocked(dc)
		switch {
		case len(regions) > 0 && !slices.Contains(regions, d.Region),
			!containsAll(d.NetworkVolumeTypes, vols),
			!containsAll(d.Compliance, compliance),
			global != nil && d.GlobalNetwork != *global:
			continue
		}
		out.DataCenters = append(out.DataCenters, s.dataCenterLocked(d, include))
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// getDataCenter answers one data center of the catalog.
func (s *Server) getDataCenter(w http.ResponseWriter, r *http.Request, id string) {
	var errs []string
	include := enumParam(r.URL.Query(), "include", []string{"GPU_AVAILABILITY", "CPU_AVAILABILITY"}, &errs)
	if len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return
	}
	s.mu.Lock()
	known := slices.Contains(s.dataCentersLocked(), id)
	var out wireDataCenter
	if known {
		out = s.dataCenterLocked(s.describeLocked(id), include)
	}
	s.mu.Unlock()
	if !known {
		writeProblem(w, http.StatusNotFound, "data center not found")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// dataCenterLocked is d as the catalog shows it, with the stock include
// asks for.
func (s *Server) dataCenterLocked(d DataCenter, include []string) wireDataCenter {
	wd := wireDataCenter{ID: d.ID, Name: d.ID, Region: d.Region, GlobalNetwork: d.GlobalNetwork,
		NetworkVolumeTypes: slices.Clone(d.NetworkVolumeTypes), Compliance: slices.Clone(d.Compliance)}
	if slices.Contains(include, "GPU_AVAILABILITY") {
		for _, g := range s.cfg.gpus {
			if offers(g, d.ID) {
				wd.GPUAvailability = append(wd.GPUAvailability, wireDCStock{ID: g.ID, Name: g.Name, Availability: level(s.freeLocked(g, d.ID), 1)})
			}
		}
	}
	if slices.Contains(include, "CPU_AVAILABILITY") && d.ID == fakeDataCenter {
		for _, c := range cpuTypes {
			wd.CPUAvailability = append(wd.CPUAvailability, wireDCStock{ID: c.id, Name: c.name, Availability: "HIGH"})
		}
	}
	return wd
}

func containsAll(have, want []string) bool {
	for _, v := range want {
		if !slices.Contains(have, v) {
			return false
		}
	}
	return true
}

// DataCenter describes one of the fake's data centers (WithDataCenters):
// what its catalog (GET /v2/catalog/datacenters) shows and filters on, and
// its country, which the GPU catalog's countryCodes selects. A data center
// the fake names without a description (its own, FAKE-LOCAL-1, one a
// GPUType's Stock or a volume names) has the zero DataCenter's defaults.
type DataCenter struct {
	ID string
	// Region is a DataCenterRegion of the document (NORTH_AMERICA when
	// empty).
	Region string
	// Country is an ISO 3166-1 alpha-2 code (US when empty).
	Country string
	// Compliance is the certifications it holds (none when empty).
	Compliance []string
	// GlobalNetwork is whether it supports global networking.
	GlobalNetwork bool
	// NetworkVolumeTypes is the volume tiers it offers (STANDARD when
	// nil).
	NetworkVolumeTypes []string
}

// WithDataCenters describes data centers of the catalog, adding those
// not named elsewhere (a described data center without stock has no GPU
// free).
func WithDataCenters(dcs ...DataCenter) Option {
	return func(c *config) { c.dataCenters = append(c.dataCenters, dcs...) }
}

// describeLocked is data center id's description, defaults filled in.
func (s *Server) describeLocked(id string) DataCenter {
	d := DataCenter{ID: id}
	for _, dc := range s.cfg.dataCenters {
		if dc.ID == id {
			d = dc
		}
	}
	d.Region = cmpOr(d.Region, "NORTH_AMERICA")
	d.Country = cmpOr(d.Country, "US")
	if d.Compliance == nil {
		d.Compliance = []string{}
	}
	if d.NetworkVolumeTypes == nil {
		d.NetworkVolumeTypes = []string{"STANDARD"}
	}
	return d
}

func (s *Server) listNetworkVolumes(w http.ResponseWriter) {
	s.mu.Lock()
	out := wireListNetworkVolumes{NetworkVolumes: []wireNetworkVolume{}}
	for _, id := range s.volOrder {
		out.NetworkVolumes = append(out.NetworkVolumes, s.volumes[id].wire())
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createNetworkVolume(w http.ResponseWriter, r *http.Request) {
	var req wireCreateNetworkVolume
	if err := decodeStrict(r, &req); err != nil {
		refuseBody(w, err)
		return
	}
	var errs []string
	if req.Name == "" {
		errs = append(errs, "$.name: required, minLength 1")
	}
	if req.DataCenter == "" {
		errs = append(errs, "$.dataCenter: required, minLength 1")
	}
	if req.Size < 10 || req.Size > 4096 {
		errs = append(errs, "$.size: required, between 10 and 4096")
	}
	if req.Type != "" && req.Type != "STANDARD" && req.Type != "HIGH_PERFORMANCE" {
		errs = append(errs, "$.type: STANDARD or HIGH_PERFORMANCE")
	}
	if len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return
	}
	s.mu.Lock()
	known := slices.Contains(s.dataCentersLocked(), req.DataCenter)
	s.mu.Unlock()
	if !known {
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("data center %q does not exist", req.DataCenter))
		return
	}
	v := s.AddNetworkVolume("", req.Size)
	s.mu.Lock()
	vol := s.volumes[v.ID]
	vol.Name, vol.DataCenter = req.Name, req.DataCenter
	out := vol.wire()
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) deleteNetworkVolume(w http.ResponseWriter, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.volumes[id]
	if !ok {
		writeProblem(w, http.StatusNotFound, "network volume not found")
		return
	}
	for _, p := range s.pods {
		if p.netVolID == id && p.status != StatusTerminated {
			writeProblem(w, http.StatusConflict, "network volume is attached to pod "+p.id)
			return
		}
	}
	delete(s.volumes, id)
	s.volOrder = slices.DeleteFunc(s.volOrder, func(x string) bool { return x == id })
	_ = os.RemoveAll(v.Dir)
	w.WriteHeader(http.StatusNoContent)
}

// SetVolumeDataCenter moves a network volume to data center dc, for tests
// of a volume that pins a pod's data center.
func (s *Server) SetVolumeDataCenter(id, dc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.volumes[id]; ok {
		v.DataCenter = dc
	}
}

// placePodLocked puts a GPU pod in a data center with free stock, or
// answers the create's refusal and returns false. A pod with a network
// volume goes where the volume is.
func (s *Server) placePodLocked(w http.ResponseWriter, p *pod, g GPUType, req wireCreatePod) bool {
	want := req.DataCenterIDs
	if p.netVolID != "" {
		want = []string{p.dataCenter}
	}
	minCUDA := ""
	if req.GPU.MinCudaVersion != nil {
		minCUDA = *req.GPU.MinCudaVersion
	}
	dc, status, detail := s.placeLocked(g, p.gpuCount, want, minCUDA)
	if status != 0 {
		writeProblem(w, status, detail)
		return false
	}
	p.dataCenter = dc
	return true
}

// cpuTypes is the fake's CPU catalog: flavors offered in its own data
// center only, without a stock limit, each vCPU at WithCPURate's price
// with the 2 GB of RAM a CPU pod reports. A create takes any cpu.id.
var cpuTypes = []struct {
	id, name, group string
}{
	{"cpu3c", "Compute-Optimized", "Gen 3"},
	{"cpu5c", "Compute-Optimized", "Gen 5"},
}

// The vCPU range of each of the fake's CPU flavors.
const (
	minFlavorVCPU = 2
	maxFlavorVCPU = 32
)

// cpuQuery reads the query of GET /v2/catalog/cpus[/{id}]: whether it
// asks for the stock and for how many vCPUs (0: any), or answers its
// refusal and returns false.
func cpuQuery(w http.ResponseWriter, r *http.Request) (stock bool, vcpus int, ok bool) {
	q := r.URL.Query()
	var errs []string
	include := enumParam(q, "include", []string{"AVAILABILITY"}, &errs)
	if len(include) > 1 {
		errs = append(errs, "$.include: maxItems 1")
	}
	product := enumParam(q, "product", []string{"POD", "SERVERLESS"}, &errs)
	if v, has := q["vcpuCount"]; has {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 2 || len(v) > 1 {
			errs = append(errs, "$.vcpuCount: one integer, minimum 2")
		}
		vcpus = n
	}
	if len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return false, 0, false
	}
	stock = len(include) > 0
	switch {
	case stock != (len(product) > 0):
		writeProblem(w, http.StatusBadRequest, "product is required with include=AVAILABILITY, and valid only with it")
		return false, 0, false
	case !stock && vcpus != 0:
		writeProblem(w, http.StatusBadRequest, "vcpuCount is valid only with include=AVAILABILITY")
		return false, 0, false
	case vcpus&(vcpus-1) != 0:
		writeProblem(w, http.StatusBadRequest, "vcpuCount must be a power of two")
		return false, 0, false
	}
	return stock, vcpus, true
}

// cpuTypeWire is CPU flavor i as the catalog shows it, with its stock
// when asked: plenty in the fake's data center, for any vCPU count in
// its range.
func (s *Server) cpuTypeWire(i int, stock bool, vcpus int) wireCPUType {
	c := cpuTypes[i]
	out := wireCPUType{ID: c.id, Name: c.name, Group: c.group, RAMPerVCPU: 2,
		VCPU:  wireVCPURange{Min: minFlavorVCPU, Max: maxFlavorVCPU},
		Price: wireCPUPrice{SecurePerVCPU: s.cfg.cpuRate, ServerlessPerVCPU: s.cfg.cpuRate}}
	if stock {
		avail := "HIGH"
		if vcpus != 0 && (vcpus < minFlavorVCPU || vcpus > maxFlavorVCPU) {
			avail = "NONE"
		} else {
			out.DataCenters = []wireDCStock{{ID: fakeDataCenter, Name: fakeDataCenter, Availability: avail}}
		}
		out.Availability = &avail
	}
	return out
}

func (s *Server) listCPUTypes(w http.ResponseWriter, r *http.Request) {
	stock, vcpus, ok := cpuQuery(w, r)
	if !ok {
		return
	}
	out := wireListCPUTypes{CPUs: []wireCPUType{}}
	for i := range cpuTypes {
		out.CPUs = append(out.CPUs, s.cpuTypeWire(i, stock, vcpus))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getCPUType(w http.ResponseWriter, r *http.Request, id string) {
	stock, vcpus, ok := cpuQuery(w, r)
	if !ok {
		return
	}
	for i, c := range cpuTypes {
		if c.id == id {
			writeJSON(w, http.StatusOK, s.cpuTypeWire(i, stock, vcpus))
			return
		}
	}
	writeProblem(w, http.StatusNotFound, "cpu type not found")
}
