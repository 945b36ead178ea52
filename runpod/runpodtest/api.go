package runpodtest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	portRE = regexp.MustCompile(`^[0-9]{1,5}/(http|tcp|udp)$`)
	cudaRE = regexp.MustCompile(`^\d+\.\d+$`)
)

// decodeStrict decodes a JSON body, refusing fields the schema does not
// have (additionalProperties/unevaluatedProperties false): its error is
// a *bodyError, each line one the document's validator would give.
func decodeStrict(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return &bodyError{[]string{"$: " + err.Error()}}
	}
	var extra []string
	additionalProperties(body, reflect.TypeOf(v), "$", &extra)
	if len(extra) > 0 {
		return &bodyError{extra}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &bodyError{[]string{"$: " + err.Error()}}
	}
	if dec.More() {
		return &bodyError{[]string{"$: trailing data after the JSON body"}}
	}
	return nil
}

// bodyError is a request body off its schema: a 422's errors.
type bodyError struct{ errs []string }

func (e *bodyError) Error() string { return strings.Join(e.errs, "; ") }

// refuseBody answers decodeStrict's error, a 422.
func refuseBody(w http.ResponseWriter, err error) {
	errs := []string{"$: " + err.Error()}
	if be, ok := err.(*bodyError); ok {
		errs = be.errs
	}
	writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
}

// additionalProperties adds to out, for each object of raw (at path at)
// with members that wire type t has no field for, the document's
// "additional properties ... not allowed", naming them all, their case
// kept as sent (JSON names are case-sensitive).
func additionalProperties(raw []byte, t reflect.Type, at string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return // not an object: decoding says so
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			fields[name] = t.Field(i).Type
		}
		var extra []string
		keys := slices.Sorted(maps.Keys(obj))
		for _, k := range keys {
			if _, ok := fields[k]; !ok {
				extra = append(extra, "'"+k+"'")
			}
		}
		if len(extra) > 0 {
			*out = append(*out, fmt.Sprintf("%s: additional properties %s not allowed", at, strings.Join(extra, ", ")))
		}
		for _, k := range keys {
			if ft, ok := fields[k]; ok {
				additionalProperties(obj[k], ft, at+"."+k, out)
			}
		}
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return
		}
		for i, item := range items {
			additionalProperties(item, t.Elem(), fmt.Sprintf("%s[%d]", at, i), out)
		}
	}
}

// listPods answers one page of the pod list, newest first as the
// document says (GET /v2/pods is always paged: limit 1..1000, default
// 1000; WithPageSize may make pages smaller, as the document allows). A page's nextCursor is valid only
// with the very parameters of the request that got it: a cursor sent with
// others, or one the fake never issued, is a 422.
func (s *Server) listPods(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var errs []string
	limit := maxListLimit
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > maxListLimit || len(v) > 1 {
			errs = append(errs, fmt.Sprintf("limit: must be one integer in 1..%d", maxListLimit))
		}
		limit = n
	}
	if v, ok := q["includeClusterPods"]; ok && (len(v) > 1 || (v[0] != "true" && v[0] != "false")) {
		errs = append(errs, "includeClusterPods: must be true or false")
	}
	if v, ok := q["cursor"]; ok && (len(v) > 1 || v[0] == "") {
		errs = append(errs, "cursor: must be one non-empty string")
	}
	if len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return
	}
	cursor := q.Get("cursor")
	q.Del("cursor")
	params := q.Encode()
	page := limit
	if s.cfg.pageSize > 0 {
		page = min(page, s.cfg.pageSize)
	}
	s.mu.Lock()
	after := ""
	if cursor != "" {
		c, ok := s.cursors[cursor]
		switch {
		case !ok:
			s.mu.Unlock()
			writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "cursor: unknown or expired")
			return
		case c.params != params:
			s.mu.Unlock()
			writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.",
				fmt.Sprintf("cursor: valid only with the parameters that issued it (%q), not %q", c.params, params))
			return
		}
		after = c.after
	}
	now := s.cfg.now()
	out := wireListPods{Pods: []wirePod{}}
	started := after == ""
	for _, id := range s.newestFirstLocked() {
		if !started {
			started = id == after
			continue
		}
		p := s.pods[id]
		s.refreshLocked(p, now)
		if p.status == StatusTerminated {
			continue // terminated pods leave the list
		}
		if len(out.Pods) == page {
			next := newID()
			s.cursors[next] = listCursor{after: out.Pods[len(out.Pods)-1].ID, params: params}
			out.Pagination = wirePagination{NextCursor: &next, HasNextPage: true}
			break
		}
		out.Pods = append(out.Pods, p.wire(now))
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// newestFirstLocked is the pods' ids, newest first: by creation time,
// and those created at the same time in the reverse of the order they were
// made (or added). s.mu must be held.
func (s *Server) newestFirstLocked() []string {
	ids := slices.Clone(s.order)
	slices.Reverse(ids)
	slices.SortStableFunc(ids, func(a, b string) int {
		return s.pods[b].createdAt.Compare(s.pods[a].createdAt)
	})
	return ids
}

// maxListLimit is the largest (and the default) limit of a list page.
const maxListLimit = 1000

// listCursor is what a nextCursor stands for: the list goes on after the
// pod after, for requests with exactly params (the query without cursor).
type listCursor struct {
	after, params string
}

func (s *Server) getPod(w http.ResponseWriter, id string) {
	s.mu.Lock()
	p, ok := s.pods[id]
	if !ok || !s.visibleLocked(p) {
		s.mu.Unlock()
		writeProblem(w, http.StatusNotFound, "pod not found")
		return
	}
	now := s.cfg.now()
	s.refreshLocked(p, now)
	out := p.wire(now)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// validateCreate checks a create request against the CreatePodRequest
// schema: what it returns are 422 errors.
func validateCreate(req *wireCreatePod) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if req.Name == nil || *req.Name == "" {
		bad("$.name: required, minLength 1")
	}
	if req.TemplateID == nil && (req.Image == nil || *req.Image == "") {
		bad("$.image: required unless templateId is set")
	}
	if req.Disk != nil && *req.Disk < 1 {
		bad("$.disk: minimum 1")
	}
	if req.Cloud != nil && *req.Cloud != "SECURE" && *req.Cloud != "COMMUNITY" {
		bad("$.cloud: must be SECURE or COMMUNITY")
	}
	for i, port := range req.Ports {
		if !portRE.MatchString(port) {
			bad("$.ports[%d]: %q is not port/protocol", i, port)
		}
	}
	for name := range req.Env {
		if name == "" {
			bad("$.env: empty variable name")
		}
	}
	if g := req.GPU; g != nil {
		if g.ID == "" {
			bad("$.gpu.id: required")
		}
		if g.Count != nil && *g.Count < 1 {
			bad("$.gpu.count: minimum 1")
		}
		for i, v := range g.AllowedCudaVersions {
			if !cudaRE.MatchString(v) {
				bad("$.gpu.allowedCudaVersions[%d]: not major.minor", i)
			}
		}
		if g.MinCudaVersion != nil && !cudaRE.MatchString(*g.MinCudaVersion) {
			bad("$.gpu.minCudaVersion: not major.minor")
		}
	}
	if c := req.CPU; c != nil {
		if c.ID == "" {
			bad("$.cpu.id: required")
		}
		if c.VCPUCount < 2 {
			bad("$.cpu.vcpuCount: minimum 2")
		}
	}
	if m := req.Mounts; m != nil {
		if pm := m.Persistent; pm != nil {
			if pm.Size == nil || *pm.Size < 10 {
				bad("$.mounts.persistent.size: required, minimum 10")
			}
			if !path.IsAbs(pm.Path) {
				bad("$.mounts.persistent.path: required, an absolute path")
			}
		}
		if len(m.Network) > 1 {
			bad("$.mounts.network: maxItems 1")
		}
		for i, nm := range m.Network {
			if nm.VolumeID == "" {
				bad("$.mounts.network[%d].volumeId: required", i)
			}
			if !path.IsAbs(nm.Path) {
				bad("$.mounts.network[%d].path: required, an absolute path", i)
			}
		}
	}
	return errs
}

// maxCreateBody is the largest create body Runpod takes (413 past it).
const maxCreateBody = 102400

func (s *Server) createPod(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "could not read the request body")
		return
	}
	if limit := cmp.Or(s.cfg.drift.MaxCreateBody, maxCreateBody); len(body) > limit {
		writeProblem(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the request body is %d bytes, over the %d-byte limit", len(body), limit))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req wireCreatePod
	if err := decodeStrict(r, &req); err != nil {
		refuseBody(w, err)
		return
	}
	if errs := validateCreate(&req); len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return
	}
	if req.TemplateID != nil {
		writeProblem(w, http.StatusNotFound, "template not found (runpodtest has no templates)")
		return
	}
	if (req.GPU == nil) == (req.CPU == nil) {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$: exactly one of gpu or cpu must be set")
		return
	}
	if m := req.Mounts; m != nil {
		if m.Persistent != nil && len(m.Network) > 0 {
			writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$: mounts.persistent and mounts.network are mutually exclusive")
			return
		}
		if m.Persistent != nil && req.CPU != nil {
			writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$: mounts.persistent is not allowed on a CPU pod")
			return
		}
	}
	cloud := "SECURE"
	if req.Cloud != nil {
		cloud = *req.Cloud
	}
	p := &pod{
		id:       newID(),
		key:      newKey(),
		name:     *req.Name,
		image:    *req.Image,
		disk:     50,
		env:      req.Env,
		ports:    slices.Clone(req.Ports),
		cloud:    cloud,
		status:   StatusProvisioning,
		exitCode: -1,
	}
	stored, entrypoint, cmd, err := startCommand(req.Args, req.Entrypoint, req.Cmd)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	p.args, p.entrypoint, p.cmd = stored, entrypoint, cmd
	if len(entrypoint)+len(cmd) > 0 {
		p.words = slices.Concat(entrypoint, cmd)
	}
	if req.Disk != nil {
		p.disk = *req.Disk
	}
	if p.env == nil {
		p.env = map[string]string{}
	}
	if g := req.GPU; g != nil {
		if len(g.AllowedCudaVersions) > 0 && g.MinCudaVersion != nil {
			writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$: gpu.allowedCudaVersions and gpu.minCudaVersion are mutually exclusive")
			return
		}
		count := 1
		if g.Count != nil {
			count = *g.Count
		}
		gt, ok := s.gpuType(g.ID)
		if !ok {
			writeProblem(w, http.StatusBadRequest, fmt.Sprintf("could not place a pod: no GPU type %q", g.ID))
			return
		}
		price := gt.SecurePrice
		if cloud == "COMMUNITY" {
			price = gt.CommunityPrice
		}
		if price <= 0 {
			writeProblem(w, http.StatusBadRequest, fmt.Sprintf("could not place a pod: %s is not offered in %s cloud", g.ID, cloud))
			return
		}
		if gt.MaxCount > 0 && count > gt.MaxCount {
			writeProblem(w, http.StatusBadRequest, fmt.Sprintf("could not place a pod: at most %d x %s", gt.MaxCount, g.ID))
			return
		}
		p.gpuID, p.gpuCount = g.ID, count
		p.costPerHr = price * float64(count)
	} else {
		if n := req.CPU.VCPUCount; n&(n-1) != 0 {
			writeProblem(w, http.StatusBadRequest, "cpu.vcpuCount must be a power of two")
			return
		}
		p.cpuID, p.vcpus = req.CPU.ID, req.CPU.VCPUCount
		p.costPerHr = s.cfg.cpuRate * float64(p.vcpus)
	}
	p.dataCenter = fakeDataCenter
	if len(req.DataCenterIDs) > 0 {
		p.dataCenter = req.DataCenterIDs[0]
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		writeProblem(w, http.StatusServiceUnavailable, "the fake is closing")
		return
	}
	if m := req.Mounts; m != nil {
		if pm := m.Persistent; pm != nil {
			p.persistentGB, p.persistentPath = *pm.Size, path.Clean(pm.Path)
		}
		if len(m.Network) == 1 {
			v, ok := s.volumes[m.Network[0].VolumeID]
			if !ok {
				writeProblem(w, http.StatusNotFound, "network volume not found")
				return
			}
			p.netVolID, p.netVolPath = v.ID, path.Clean(m.Network[0].Path)
			p.dataCenter = v.DataCenter
		}
	}
	if req.Registry != nil && *req.Registry != "" {
		// Runpod's NotFoundError: "not found or not accessible".
		if !s.registryLocked(*req.Registry) {
			writeProblem(w, http.StatusNotFound, "container registry credential not found")
			return
		}
		p.registry = *req.Registry
	}
	p.img = s.imageLocked(p.image)
	if gt, ok := s.gpuType(p.gpuID); ok {
		if !s.placePodLocked(w, p, gt, req) {
			return
		}
	}
	now := s.cfg.now()
	p.createdAt = now
	p.log = newPodLog(s)
	s.pods[p.id] = p
	s.order = append(s.order, p.id)
	s.podKeys[p.key] = p.id
	out := p.wire(now)
	if s.cfg.runner {
		s.startLaunchLocked(p)
	} else if p.exposes22() {
		// Nothing will listen there: the port is only the pod's to show.
		if port, hold, err := reservePort(); err == nil {
			hold.Close()
			p.setSSHPort(port)
			releasePort(port)
		}
	}
	s.notifyLocked()
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) gpuType(id string) (GPUType, bool) {
	for _, g := range s.cfg.gpus {
		if g.ID == id {
			return g, true
		}
	}
	return GPUType{}, false
}

func (s *Server) deletePod(w http.ResponseWriter, id string) {
	if !s.terminate(w, id) {
		writeProblem(w, http.StatusNotFound, "pod not found")
	}
}

// terminate terminates a pod for the call w answers: it kills the pod's
// processes, waits until they are all gone, and marks the pod TERMINATED
// and logs the call's answer (204) under one lock; it removes the pod's
// files, writes the answer, and only then wakes WaitPod. So whoever sees a
// pod TERMINATED, through any reader, knows that nothing of it runs and
// that the call that ended it has its answer logged. False when there is
// no such pod to terminate, and for the second of two calls at once: it
// waits for the first to end the pod, and then there is none, as a serial
// API would answer it.
func (s *Server) terminate(w http.ResponseWriter, id string) bool {
	s.mu.Lock()
	p, ok := s.pods[id]
	if ok && p.terminating && p.status != StatusTerminated {
		if s.terminating != nil {
			s.mu.Unlock()
			s.terminating(false)
			s.mu.Lock()
		}
		for p.status != StatusTerminated {
			changed := s.changed
			s.mu.Unlock()
			<-changed
			s.mu.Lock()
		}
	}
	if !ok || p.status == StatusTerminated {
		s.mu.Unlock()
		return false
	}
	// The run stays attached while it dies, so that it is not taken for
	// a command that exited by itself.
	p.terminating = true
	l := p.launch
	if l == nil {
		l = p.dying // a stop is ending it: finish it now
	}
	s.mu.Unlock()
	if s.terminating != nil {
		s.terminating(true)
	}
	if l != nil {
		l.kill()
		<-l.done
	}
	s.mu.Lock()
	if p.status != StatusTerminated {
		p.launch = nil
		p.setSSHPort(0)
		p.setStatus(StatusTerminated, s.cfg.now())
		p.goneAt = time.Now()
	}
	logStatus(w, http.StatusNoContent)
	s.mu.Unlock()
	// The pod's container disk and persistent volume go with it.
	s.removePodFiles(id)
	w.WriteHeader(http.StatusNoContent)
	s.mu.Lock()
	s.notifyLocked()
	s.mu.Unlock()
	return true
}

func (s *Server) podAction(w http.ResponseWriter, r *http.Request, id string) {
	var req wirePodAction
	if err := decodeStrict(r, &req); err != nil {
		refuseBody(w, err)
		return
	}
	if req.Action == nil {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", "$.action: required")
		return
	}
	action := *req.Action
	switch action {
	case "start", "stop", "restart", "terminate":
	default:
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", fmt.Sprintf("$.action: %q is not one of start, stop, restart, terminate", action))
		return
	}
	s.mu.Lock()
	p, ok := s.pods[id]
	if !ok || p.status == StatusTerminated {
		s.mu.Unlock()
		writeProblem(w, http.StatusNotFound, "pod not found")
		return
	}
	now := s.cfg.now()
	s.refreshLocked(p, now)
	if (p.terminating || p.stopping) && action != "terminate" {
		s.mu.Unlock()
		writeProblem(w, http.StatusConflict, "the pod is being stopped or terminated")
		return
	}
	if !slices.Contains(p.actions(), action) {
		status := p.status
		s.mu.Unlock()
		writeProblem(w, http.StatusConflict, fmt.Sprintf("action %s is not valid for a pod in status %s", action, status))
		return
	}
	if action == "terminate" {
		s.mu.Unlock()
		if !s.terminate(w, id) {
			writeProblem(w, http.StatusNotFound, "pod not found")
		}
		return
	}
	if p.hostFailed && action != "stop" {
		s.mu.Unlock()
		writeProblem(w, http.StatusConflict, "the pod's machine is unavailable: terminate the pod")
		return
	}
	s.cycleLocked(p, action)
	out := p.wire(s.cfg.now())
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// cycleLocked stops, restarts or starts the pod's command. s.mu must be
// held; it is let go while the command ends, and held again on return.
func (s *Server) cycleLocked(p *pod, action string) {
	// stop and restart end the command as docker does: SIGTERM, then
	// SIGKILL after the grace. The pod keeps its status until the command
	// is gone, so that whoever sees it EXITED knows that nothing of it runs.
	l := p.launch
	p.launch, p.dying = nil, l
	p.stopping = true
	s.mu.Unlock()
	if l != nil {
		l.stop(s.cfg.stopGrace)
		<-l.done
	}
	s.mu.Lock()
	p.stopping, p.dying = false, nil
	if p.status != StatusTerminated && !p.terminating {
		now := s.cfg.now()
		switch action {
		case "stop":
			p.setSSHPort(0)
			p.setStatus(StatusExited, now)
		case "restart", "start":
			p.errMsg = ""
			if s.cfg.runner && !s.closed {
				p.setStatus(StatusStarting, now)
				s.startLaunchLocked(p)
			} else {
				p.setStatus(StatusStarting, now) // a restart starts anew
				s.refreshLocked(p, now)
			}
		}
		s.notifyLocked()
	}
}

// ExitPod makes an API-only pod's command exit by itself with code, as if
// its container ended: the pod turns EXITED. It fails for a pod that is not
// RUNNING, and with the pod runner, where real commands exit on their own.
func (s *Server) ExitPod(id string, code int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.runner {
		return fmt.Errorf("runpodtest: ExitPod is for API-only servers; with the pod runner, the pod's command exits by itself")
	}
	p, ok := s.pods[id]
	if !ok {
		return fmt.Errorf("runpodtest: no pod %q", id)
	}
	now := s.cfg.now()
	s.refreshLocked(p, now)
	if p.status != StatusRunning {
		return fmt.Errorf("runpodtest: pod %s is %s, not RUNNING", id, p.status)
	}
	p.setStatus(StatusExited, now)
	p.exitCode = code
	p.setSSHPort(0)
	s.notifyLocked()
	return nil
}

func (s *Server) getNetworkVolume(w http.ResponseWriter, id string) {
	s.mu.Lock()
	v, ok := s.volumes[id]
	var out wireNetworkVolume
	if ok {
		out = v.wire()
	}
	s.mu.Unlock()
	if !ok {
		writeProblem(w, http.StatusNotFound, "network volume not found")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (v *volume) wire() wireNetworkVolume {
	return wireNetworkVolume{ID: v.ID, Name: v.Name, Size: v.SizeGB, DataCenter: v.DataCenter, Type: "STANDARD"}
}

func (s *Server) patchNetworkVolume(w http.ResponseWriter, r *http.Request, id string) {
	var req wireUpdateNetworkVolume
	if err := decodeStrict(r, &req); err != nil {
		refuseBody(w, err)
		return
	}
	var errs []string
	if req.Name == nil && req.Size == nil {
		errs = append(errs, "$: minProperties 1")
	}
	if req.Name != nil && *req.Name == "" {
		errs = append(errs, "$.name: minLength 1")
	}
	if req.Size != nil && (*req.Size < 10 || *req.Size > 4096) {
		errs = append(errs, "$.size: between 10 and 4096")
	}
	if len(errs) > 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "Request validation failed.", errs...)
		return
	}
	s.mu.Lock()
	v, ok := s.volumes[id]
	if !ok {
		s.mu.Unlock()
		writeProblem(w, http.StatusNotFound, "network volume not found")
		return
	}
	if req.Size != nil && *req.Size < v.SizeGB {
		size := v.SizeGB
		s.mu.Unlock()
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("network volume size cannot be reduced (now %d GB)", size))
		return
	}
	if req.Size != nil {
		v.SizeGB = *req.Size
	}
	if req.Name != nil {
		v.Name = *req.Name
	}
	out := v.wire()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (g GPUType) wire() wireGPUType {
	out := wireGPUType{
		ID:           g.ID,
		Name:         g.Name,
		Manufacturer: "NVIDIA",
		Memory:       g.MemoryGB,
		Secure:       g.SecurePrice > 0,
		Community:    g.CommunityPrice > 0,
		Price:        wireGPUPrice{Secure: g.SecurePrice, Community: g.CommunityPrice},
	}
	if g.Pool != "" {
		pool := g.Pool
		out.Pool = &pool
	}
	if out.Secure {
		out.MaxCount.Secure = g.MaxCount
	}
	if out.Community {
		out.MaxCount.Community = g.MaxCount
	}
	return out
}

// getGPUType answers one type of the catalog, with the list's query: a
// type offered in none of the countries asked is still answered, NONE.
func (s *Server) getGPUType(w http.ResponseWriter, r *http.Request, id string) {
	gq, ok := parseGPUQuery(w, r)
	if !ok {
		return
	}
	g, ok := s.gpuType(id)
	if !ok {
		writeProblem(w, http.StatusNotFound, "gpu type not found")
		return
	}
	out := g.wire()
	if gq.stock {
		s.mu.Lock()
		out.Availability, out.DataCenters = s.stockLocked(g, gq, s.dataCentersLocked())
		s.mu.Unlock()
	}
	writeJSON(w, http.StatusOK, out)
}

// CrashPod ends a running pod's command at once (SIGKILL to all of it), as
// a crash of its container would: the pod restarts it, or turns EXITED
// with WithExitedOnEnd. It is for the pod runner; an API-only pod has
// ExitPod.
func (s *Server) CrashPod(id string) error {
	s.mu.Lock()
	p, ok := s.pods[id]
	var l *launch
	if ok {
		l = p.launch
	}
	s.mu.Unlock()
	if !ok || l == nil {
		return fmt.Errorf("runpodtest: pod %q has no running command to crash", id)
	}
	l.mu.Lock()
	proc := l.proc
	l.mu.Unlock()
	if proc == nil {
		return fmt.Errorf("runpodtest: pod %q has not started its command yet", id)
	}
	proc.Kill()
	return nil
}

// BreakPod puts a pod in ERROR with reason, as Runpod does with a container
// in an unrecoverable state: its processes are killed, and it stays so
// until started or terminated.
func (s *Server) BreakPod(id, reason string) error {
	return s.killPod(id, false, func(p *pod, now time.Time) {
		p.errMsg = reason
		p.setStatus(StatusError, now)
	})
}

// killPod kills every process of live pod id at once, then, unless it
// was terminated meanwhile, takes its port away and calls end with s.mu
// held to set what the pod became. hostFailed marks the pod's machine as
// gone first, so that its command is never started again.
func (s *Server) killPod(id string, hostFailed bool, end func(p *pod, now time.Time)) error {
	s.mu.Lock()
	p, ok := s.pods[id]
	if !ok || p.status == StatusTerminated || p.terminating {
		s.mu.Unlock()
		return fmt.Errorf("runpodtest: no live pod %q", id)
	}
	l := p.launch
	p.launch = nil
	p.hostFailed = p.hostFailed || hostFailed
	p.stopping, p.dying = true, l
	s.mu.Unlock()
	if l != nil {
		l.kill()
		<-l.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.stopping, p.dying = false, nil
	if p.status == StatusTerminated || p.terminating {
		return nil
	}
	p.setSSHPort(0)
	now := s.cfg.now()
	s.refreshLocked(p, now)
	end(p, now)
	s.notifyLocked()
	return nil
}
