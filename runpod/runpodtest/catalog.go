package runpodtest

import (
	"fmt"
	"net/http"
	"os"
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

// dataCentersLocked lists the fake's data centers: its own and every one a
// GPU type's Stock names, sorted.
func (s *Server) dataCentersLocked() []string {
	dcs := []string{fakeDataCenter}
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

func (s *Server) listGPUTypesQuery(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	include, product := q.Get("include"), q.Get("product")
	stock := include == "AVAILABILITY"
	switch {
	case include != "" && !stock:
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$.include: must be AVAILABILITY")
		return
	case stock != (product != ""):
		writeProblem(w, http.StatusBadRequest, "product is required with include=AVAILABILITY, and valid only with it")
		return
	case !stock && (q.Has("cloud") || q.Has("count") || q.Has("minCudaVersion")):
		writeProblem(w, http.StatusBadRequest, "cloud, count and minCudaVersion are valid only with include=AVAILABILITY")
		return
	}
	cloud, count := cmpOr(q.Get("cloud"), "SECURE"), 1
	if cloud != "SECURE" && cloud != "COMMUNITY" {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$.cloud: must be SECURE or COMMUNITY")
		return
	}
	if v := q.Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$.count: minimum 1")
			return
		}
		count = n
	}
	minCUDA := q.Get("minCudaVersion")
	if minCUDA != "" && !cudaRE.MatchString(minCUDA) && !digitsOnly(minCUDA) {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$.minCudaVersion: not major or major.minor")
		return
	}
	if digitsOnly(minCUDA) {
		minCUDA += ".0"
	}
	out := wireListGPUTypes{GPUs: []wireGPUType{}}
	s.mu.Lock()
	dcs := s.dataCentersLocked()
	for _, g := range s.cfg.gpus {
		wg := g.wire()
		if stock {
			wg.Availability, wg.DataCenters = s.stockLocked(g, cloud, count, minCUDA, dcs)
		}
		out.GPUs = append(out.GPUs, wg)
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// stockLocked is a type's availability for the catalog: overall and in
// each data center that offers it.
func (s *Server) stockLocked(g GPUType, cloud string, count int, minCUDA string, dcs []string) (*string, []wireDCStock) {
	none := "NONE"
	price := g.SecurePrice
	if cloud == "COMMUNITY" {
		price = g.CommunityPrice
	}
	if price <= 0 || (minCUDA != "" && !cudaAtLeast(g.cuda(), minCUDA)) || s.stock.refuse[g.ID] != 0 {
		return &none, nil
	}
	var per []wireDCStock
	best := 0
	for _, dc := range dcs {
		if g.Stock != nil {
			if _, ok := g.Stock[dc]; !ok {
				continue
			}
		} else if dc != fakeDataCenter {
			continue
		}
		free := s.freeLocked(g, dc)
		per = append(per, wireDCStock{ID: dc, Name: dc, Availability: level(free, count)})
		best = max(best, free)
	}
	overall := level(best, count)
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

func (s *Server) listDataCenters(w http.ResponseWriter, r *http.Request) {
	include := r.URL.Query().Get("include")
	if include != "" && include != "GPU_AVAILABILITY" && include != "CPU_AVAILABILITY" {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$.include: GPU_AVAILABILITY or CPU_AVAILABILITY")
		return
	}
	s.mu.Lock()
	out := wireListDataCenters{DataCenters: []wireDataCenter{}}
	for _, dc := range s.dataCentersLocked() {
		d := wireDataCenter{ID: dc, Name: dc, Region: "NORTH_AMERICA", NetworkVolumeTypes: []string{"STANDARD"}, Compliance: []string{}}
		if include == "GPU_AVAILABILITY" {
			for _, g := range s.cfg.gpus {
				if g.Stock == nil && dc != fakeDataCenter {
					continue
				}
				if _, ok := g.Stock[dc]; g.Stock != nil && !ok {
					continue
				}
				d.GPUAvailability = append(d.GPUAvailability, wireDCStock{ID: g.ID, Name: g.Name, Availability: level(s.freeLocked(g, dc), 1)})
			}
		}
		out.DataCenters = append(out.DataCenters, d)
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
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
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$: "+err.Error())
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
