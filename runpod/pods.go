package runpod

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// PodStatus is a pod's lifecycle status.
type PodStatus string

// The statuses of the v2 PodStatus enum.
const (
	StatusProvisioning PodStatus = "PROVISIONING" // being allocated
	StatusStarting     PodStatus = "STARTING"     // container starting
	StatusRunning      PodStatus = "RUNNING"      // container healthy
	StatusExited       PodStatus = "EXITED"       // stopped; its disk still bills
	StatusError        PodStatus = "ERROR"        // unrecoverable container error
	StatusTerminated   PodStatus = "TERMINATED"   // gone
)

// CloudType is Runpod's cloud tier.
type CloudType string

// The cloud tiers. An empty CloudType in a CreatePodRequest lets Runpod
// choose (it defaults to SECURE).
const (
	SecureCloud    CloudType = "SECURE"
	CommunityCloud CloudType = "COMMUNITY"
)

// Action is a pod state transition for PodAction.
type Action string

// The actions of POST /pods/{id}/action.
const (
	ActionStart     Action = "start"
	ActionStop      Action = "stop"
	ActionRestart   Action = "restart"
	ActionTerminate Action = "terminate"
)

// GPUConfig is a pod's GPU type and count, and what comes with them.
type GPUConfig struct {
	ID    string `json:"id"`
	Count int    `json:"count,omitempty"`
	// VCPUCount and MemoryGB are the vCPUs and the system RAM (GB)
	// allocated to the pod across all its GPUs; zero when Runpod does not
	// say.
	VCPUCount float64 `json:"vcpuCount,omitempty"`
	MemoryGB  float64 `json:"memory,omitempty"`
}

// PersistentMount is host-local storage that lives as long as the pod (and
// dies with its host). Runpod's floor is 10 GB.
type PersistentMount struct {
	SizeGB int    `json:"size"`
	Path   string `json:"path"`
}

// NetworkMount attaches an existing network volume, which outlives the pod.
type NetworkMount struct {
	VolumeID string `json:"volumeId"`
	Path     string `json:"path"`
}

// Mounts is a pod's storage; at most one of the two kinds is set.
type Mounts struct {
	Persistent *PersistentMount `json:"persistent,omitempty"`
	Network    []NetworkMount   `json:"network,omitempty"`
}

// PortMapping is a live mapping of a container port to a public address.
type PortMapping struct {
	Private int    `json:"private"`
	Public  int    `json:"public"`
	Type    string `json:"type"`
	IP      string `json:"ip"`
}

// PodRuntime is what a running pod reports; Runpod sends none unless the
// pod is RUNNING.
type PodRuntime struct {
	// Uptime is the seconds since the container started.
	Uptime int           `json:"uptime"`
	Ports  []PortMapping `json:"ports"`
}

// SSHEndpoint is one way to reach a pod over SSH.
type SSHEndpoint struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Username string `json:"username"`
	Command  string `json:"command"`
}

// PodSSH holds the pod's SSH endpoints: through Runpod's proxy, or direct to
// its published 22/tcp. Either may be nil.
type PodSSH struct {
	Proxy  *SSHEndpoint `json:"proxy"`
	Direct *SSHEndpoint `json:"direct"`
}

// Pod is a Runpod pod as REST v2 describes it.
type Pod struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Status  PodStatus `json:"status"`
	Actions []Action  `json:"actions"`
	Image   string    `json:"image"`
	// Args is the container's start command as Runpod stores it: a shell
	// string used as the image's CMD, or a JSON object
	// {"entrypoint":[...],"cmd":[...]}. Entrypoint and Cmd are the same
	// command taken apart, as Runpod returns it on every read. See the
	// Command method.
	Args            string            `json:"args"`
	Entrypoint      []string          `json:"entrypoint,omitempty"`
	Cmd             []string          `json:"cmd,omitempty"`
	ContainerDiskGB int               `json:"disk"`
	Ports           []string          `json:"ports"`
	Env             map[string]string `json:"env"`
	GPU             *GPUConfig        `json:"gpu,omitempty"`
	Cloud           CloudType         `json:"cloud"`
	DataCenterID    string            `json:"dataCenterId"`
	CUDAVersion     string            `json:"cudaVersion"`
	Mounts          Mounts            `json:"mounts"`
	SSH             *PodSSH           `json:"ssh"`
	Template        string            `json:"template"`
	// RegistryAuthID is the registry credential the pod's image is pulled
	// with; empty for a public image.
	RegistryAuthID string `json:"registry"`
	// CostPerHr is the current price in USD per hour; 0 once the pod is
	// EXITED or TERMINATED (an EXITED pod's disk still bills apart).
	CostPerHr float64     `json:"cost"`
	Locked    bool        `json:"locked"`
	Runtime   *PodRuntime `json:"runtime"`
	CreatedAt time.Time   `json:"createdAt"`
	StartedAt *time.Time  `json:"startedAt"`
	// Unreadable, set only on a pod ListPods lists, says the API's
	// description of the pod could not be read whole, and why: of the
	// pod, only ID, Name and Status are known, each empty when it could
	// not be read either. Nothing may be judged from the other fields.
	Unreadable *PodReadError `json:"-"`
}

// PublicPort returns the public address of the pod's container port private,
// from the live port mappings; for port 22 it falls back to the direct SSH
// endpoint. ok is false while the pod has no such mapping (not yet running,
// or the port not exposed).
func (p *Pod) PublicPort(private int) (ip string, port int, ok bool) {
	if p.Runtime != nil {
		var best *PortMapping
		for i := range p.Runtime.Ports {
			m := &p.Runtime.Ports[i]
			if m.Private != private || m.Public == 0 || m.IP == "" {
				continue
			}
			if best == nil || (m.Type == "tcp" && best.Type != "tcp") {
				best = m
			}
		}
		if best != nil {
			return best.IP, best.Public, true
		}
	}
	if private == 22 && p.SSH != nil && p.SSH.Direct != nil && p.SSH.Direct.Host != "" && p.SSH.Direct.Port != 0 {
		return p.SSH.Direct.Host, p.SSH.Direct.Port, true
	}
	return "", 0, false
}

// Command returns the words the pod's create gave its container: its
// Entrypoint then its Cmd, or, from a pod read without them, Args taken
// apart (a JSON {"entrypoint","cmd"} object, else a shell string split with
// SplitArgs). nil when the pod has none. The image's own ENTRYPOINT or CMD,
// which the API does not report, are not part of it: see "The start
// command" in the package doc.
func (p *Pod) Command() ([]string, error) {
	if len(p.Entrypoint)+len(p.Cmd) > 0 {
		return slices.Concat(p.Entrypoint, p.Cmd), nil
	}
	if ep, cmd, ok := parseArgsObject(p.Args); ok {
		return slices.Concat(ep, cmd), nil
	}
	return SplitArgs(p.Args)
}

// CreatePodRequest is what CreatePod needs to make a GPU pod (or, with
// CPUFlavorID, a CPU pod).
type CreatePodRequest struct {
	// Name must be unique among the account's pods: CreatePod finds the pod
	// again by this name when a create attempt's outcome is unknown.
	Name  string
	Image string
	// GPUTypeID is a GPU type ID from the catalog, e.g.
	// "NVIDIA GeForce RTX 4090"; GPUCount defaults to 1.
	GPUTypeID string
	GPUCount  int
	// CPUFlavorID, in place of GPUTypeID, makes a CPU pod of this flavor
	// of the CPU catalog (ListCPUTypes), e.g. "cpu3c", with VCPUCount
	// vCPUs (a power of two, 2 when 0). A CPU pod takes no volume of its
	// own, GPUCount nor MinCUDA.
	CPUFlavorID string
	VCPUCount   int
	// Cloud is SECURE or COMMUNITY; empty lets Runpod choose (SECURE).
	Cloud CloudType
	// ContainerDiskGB is the ephemeral container disk; 0 keeps Runpod's
	// default.
	ContainerDiskGB int
	// At most one of PersistentVolume and NetworkVolume.
	PersistentVolume *PersistentMount
	NetworkVolume    *NetworkMount
	// Ports to expose, as "port/proto" with proto tcp or http: "22/tcp".
	Ports []string
	// Env is the container's environment. Values may reference Runpod
	// secrets as "{{ RUNPOD_SECRET_<name> }}".
	Env map[string]string
	// Entrypoint replaces the image's ENTRYPOINT, and with it the image's
	// CMD (Docker's rule): the container runs Entrypoint followed by Cmd,
	// whatever the image says. Sent as the create's entrypoint array.
	Entrypoint []string
	// Cmd replaces the image's CMD: without Entrypoint, it runs behind the
	// image's ENTRYPOINT (as that ENTRYPOINT's arguments, which it may
	// ignore). Sent as the create's cmd array.
	Cmd []string
	// Command replaces the image's CMD, as Cmd does, but travels in the
	// create's args string, rendered with QuoteArgs (Runpod splits it into
	// words). It may not be combined with Entrypoint or Cmd.
	Command []string
	// DataCenterIDs are preferred data centers; empty lets Runpod choose.
	DataCenterIDs []string
	// MinCUDA, when set, is the lowest CUDA version ("12.4") the host's
	// driver may have (gpu.minCudaVersion).
	MinCUDA string
	// RegistryAuthID, for a private image, is the id of the account's
	// container registry credential Runpod pulls it with (see
	// ListRegistries); sent as the create's registry.
	RegistryAuthID string
}

// createGPU is the v2 CreateGpuConfig schema, the subset we use.
type createGPU struct {
	ID             string `json:"id"`
	Count          int    `json:"count,omitempty"`
	MinCudaVersion string `json:"minCudaVersion,omitempty"`
}

// createCPU is the v2 CreateCpuConfig schema.
type createCPU struct {
	ID        string `json:"id"`
	VCPUCount int    `json:"vcpuCount"`
}

// createPodBody is the v2 CreatePodRequest schema, the subset we use.
type createPodBody struct {
	Name          string            `json:"name"`
	Image         string            `json:"image"`
	GPU           *createGPU        `json:"gpu,omitempty"`
	CPU           *createCPU        `json:"cpu,omitempty"`
	Cloud         CloudType         `json:"cloud,omitempty"`
	Disk          int               `json:"disk,omitempty"`
	Mounts        *Mounts           `json:"mounts,omitempty"`
	Ports         []string          `json:"ports,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Args          string            `json:"args,omitempty"`
	Entrypoint    []string          `json:"entrypoint,omitempty"`
	Cmd           []string          `json:"cmd,omitempty"`
	DataCenterIDs []string          `json:"dataCenterIds,omitempty"`
	Registry      string            `json:"registry,omitempty"`
}

// cpu is the create's cpu member: nil for a GPU pod.
func (req *CreatePodRequest) cpu() (*createCPU, error) {
	bad := func(format string, a ...any) error { return invalidf("CreatePod: "+format, a...) }
	if req.CPUFlavorID == "" {
		if req.VCPUCount != 0 {
			return nil, bad("VCPUCount is for a CPU pod (CPUFlavorID)")
		}
		return nil, nil
	}
	n := req.VCPUCount
	if n == 0 {
		n = 2
	}
	switch {
	case checkID("CreatePod", "CPU flavor", req.CPUFlavorID) != nil:
		return nil, bad("CPUFlavorID %q is not a plain ID", req.CPUFlavorID)
	case req.GPUTypeID != "" || req.GPUCount != 0 || req.MinCUDA != "":
		return nil, bad("CPUFlavorID makes a CPU pod: GPUTypeID, GPUCount and MinCUDA are for a GPU pod")
	case req.PersistentVolume != nil:
		return nil, bad("a CPU pod takes no PersistentVolume (Runpod: container disk and network volumes only)")
	case n < 2 || n&(n-1) != 0:
		return nil, bad("VCPUCount %d is not a power of two of at least 2", req.VCPUCount)
	}
	return &createCPU{ID: req.CPUFlavorID, VCPUCount: n}, nil
}

func (req *CreatePodRequest) body() (*createPodBody, error) {
	bad := func(format string, a ...any) error { return invalidf("CreatePod: "+format, a...) }
	if strings.TrimSpace(req.Name) == "" {
		return nil, bad("empty Name")
	}
	if strings.TrimSpace(req.Image) == "" {
		return nil, bad("empty Image")
	}
	cpu, err := req.cpu()
	if err != nil {
		return nil, err
	}
	if cpu == nil && strings.TrimSpace(req.GPUTypeID) == "" {
		return nil, bad("empty GPUTypeID")
	}
	count := req.GPUCount
	if count == 0 {
		count = 1
	}
	if count < 0 {
		return nil, bad("GPUCount %d is negative", req.GPUCount)
	}
	switch req.Cloud {
	case "", SecureCloud, CommunityCloud:
	default:
		return nil, bad("Cloud %q is neither SECURE nor COMMUNITY", req.Cloud)
	}
	if req.ContainerDiskGB < 0 {
		return nil, bad("ContainerDiskGB %d is negative", req.ContainerDiskGB)
	}
	if req.MinCUDA != "" && !cudaPattern.MatchString(req.MinCUDA) {
		return nil, bad("MinCUDA %q is not major.minor, such as 12.4", req.MinCUDA)
	}
	if req.RegistryAuthID != "" && checkID("CreatePod", "registry", req.RegistryAuthID) != nil {
		return nil, bad("RegistryAuthID %q is not a plain ID", req.RegistryAuthID)
	}
	for _, dc := range req.DataCenterIDs {
		if checkID("CreatePod", "data center", dc) != nil {
			return nil, bad("DataCenterIDs: %q is not a plain ID", dc)
		}
	}
	b := &createPodBody{
		Name: req.Name, Image: req.Image, CPU: cpu,
		Cloud: req.Cloud, Disk: req.ContainerDiskGB,
		Ports: req.Ports, Env: req.Env, DataCenterIDs: req.DataCenterIDs,
		Registry: req.RegistryAuthID,
	}
	if cpu == nil {
		b.GPU = &createGPU{ID: req.GPUTypeID, Count: count, MinCudaVersion: req.MinCUDA}
	}
	switch {
	case req.PersistentVolume != nil && req.NetworkVolume != nil:
		return nil, bad("PersistentVolume and NetworkVolume are mutually exclusive")
	case req.PersistentVolume != nil:
		v := *req.PersistentVolume
		if v.SizeGB < 10 {
			return nil, bad("PersistentVolume.SizeGB %d is under Runpod's 10 GB floor", v.SizeGB)
		}
		if !path.IsAbs(v.Path) {
			return nil, bad("PersistentVolume.Path %q is not absolute", v.Path)
		}
		b.Mounts = &Mounts{Persistent: &v}
	case req.NetworkVolume != nil:
		v := *req.NetworkVolume
		if strings.TrimSpace(v.VolumeID) == "" {
			return nil, bad("empty NetworkVolume.VolumeID")
		}
		if !path.IsAbs(v.Path) {
			return nil, bad("NetworkVolume.Path %q is not absolute", v.Path)
		}
		b.Mounts = &Mounts{Network: []NetworkMount{v}}
	}
	for _, p := range req.Ports {
		if err := checkPort(p); err != nil {
			return nil, bad("%v", err)
		}
	}
	for k := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, bad("bad environment variable name %q", k)
		}
	}
	for k, v := range req.Env {
		if strings.ContainsRune(v, 0) {
			return nil, bad("environment variable %s holds a NUL byte", k)
		}
	}
	for i, words := range [][]string{req.Entrypoint, req.Cmd, req.Command} {
		for _, w := range words {
			if strings.ContainsRune(w, 0) {
				return nil, bad("%s word holds a NUL byte", [...]string{"Entrypoint", "Cmd", "Command"}[i])
			}
		}
	}
	if len(req.Command) > 0 && len(req.Entrypoint)+len(req.Cmd) > 0 {
		return nil, bad("Command goes in args and cannot be combined with Entrypoint or Cmd: use Entrypoint and Cmd alone")
	}
	if len(req.Command) > 0 {
		b.Args = QuoteArgs(req.Command)
	}
	// Each goes as it is, JSON-escaped once: encoding them into an args
	// object ourselves would escape a script twice (its size with it).
	b.Entrypoint = req.Entrypoint
	b.Cmd = req.Cmd
	return b, nil
}

// MaxCreatePodBody is the largest create body Runpod takes, in bytes; a
// larger one is answered 413. (A template's fields count too, once
// merged; this client sends no template.)
const MaxCreatePodBody = 102400

// BodyTooLargeError is CreatePod's error for a request whose body would be
// over MaxCreatePodBody, returned before anything is sent. Parts names the
// largest parts of the body, so the caller knows what to cut. It matches
// ErrInvalid. It holds sizes and env variable names, never values.
type BodyTooLargeError struct {
	Size, Limit int
	Parts       []BodyPart // largest first, at most 5
}

// BodyPart is one part of a create body and its size in bytes, as JSON:
// "args", "entrypoint" or "cmd" (the start command), "env.NAME" (one env
// variable), "other".
type BodyPart struct {
	Field string
	Size  int
}

func (e *BodyTooLargeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runpod: CreatePod: the request body is %d bytes, over Runpod's %d-byte limit: cut at least %d bytes; largest parts:",
		e.Size, e.Limit, e.Size-e.Limit)
	for i, p := range e.Parts {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s %d bytes", p.Field, p.Size)
	}
	return b.String()
}

// Is makes a *BodyTooLargeError match ErrInvalid.
func (e *BodyTooLargeError) Is(target error) bool { return target == ErrInvalid }

// CreatePodBodySize returns the size in bytes of the body CreatePod sends
// for req, to weigh it against MaxCreatePodBody without sending it. The
// error is the one CreatePod would return before sending; over the limit
// it is a *BodyTooLargeError, and the size is still returned.
func CreatePodBodySize(req CreatePodRequest) (int, error) {
	b, err := req.body()
	if err != nil {
		return 0, err
	}
	raw, err := b.encode()
	if tooLarge := (*BodyTooLargeError)(nil); errors.As(err, &tooLarge) {
		return tooLarge.Size, err
	}
	return len(raw), err
}

// encode renders the body as JSON, refusing one over MaxCreatePodBody.
func (b *createPodBody) encode() (json.RawMessage, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, invalidf("CreatePod: encoding the request: %v", err)
	}
	if len(raw) <= MaxCreatePodBody {
		return raw, nil
	}
	size := func(v any) int {
		j, _ := json.Marshal(v)
		return len(j)
	}
	var parts []BodyPart
	rest := len(raw)
	for _, m := range []struct {
		name string
		v    any
		set  bool
	}{{"args", b.Args, b.Args != ""}, {"entrypoint", b.Entrypoint, len(b.Entrypoint) > 0}, {"cmd", b.Cmd, len(b.Cmd) > 0}} {
		if m.set {
			n := size(m.v) + len(m.name) + len(`"":,`)
			parts = append(parts, BodyPart{m.name, n})
			rest -= n
		}
	}
	for k, v := range b.Env {
		n := size(k) + size(v) + 2
		parts = append(parts, BodyPart{"env." + k, n})
		rest -= n
	}
	parts = append(parts, BodyPart{"other", max(rest, 0)})
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Size != parts[j].Size {
			return parts[i].Size > parts[j].Size
		}
		return parts[i].Field < parts[j].Field
	})
	return nil, &BodyTooLargeError{Size: len(raw), Limit: MaxCreatePodBody, Parts: parts[:min(len(parts), 5)]}
}

func checkPort(p string) error {
	num, proto, ok := strings.Cut(p, "/")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || n > 65535 || (proto != "tcp" && proto != "http") {
		return fmt.Errorf("port %q is not port/tcp or port/http", p)
	}
	return nil
}

// reconcileSkew is how much older than the CreatePod call a pod found by
// name may look (clocks differ) and still be taken for the one it made.
const reconcileSkew = 10 * time.Minute

// DefaultCreateLooks are the waits before each listing CreatePod makes
// after a create whose outcome is unknown: looks at about 5, 15, 30 and
// 60 s. A pod made by a create that timed out may show in the list only
// later, and one look after one short step would resend and make a
// second pod. See WithCreateLooks.
var DefaultCreateLooks = []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second}

// CreatePod creates a GPU pod and returns it as Runpod reports it (usually
// PROVISIONING; poll GetPod for RUNNING). A request whose body would be
// over MaxCreatePodBody is refused before it is sent, with a
// *BodyTooLargeError naming its largest parts.
//
// A create is never resent blindly. When an attempt fails in a way that may
// have made the pod anyway (a timeout, a dropped connection, 500, 502,
// 504), CreatePod looks for it: it lists the pods named req.Name up to
// createLooks times, a growing backoff step apart, and a pod of that name
// created since the call began (give or take clock skew) is the one the
// lost attempt made, returned as the result. Only when none shows up is the
// create sent again; after a 500, which would likely fail again, it is not,
// and the error wraps ErrPodMayExist. A refusal (429, 503) is looked for
// once, then resent. So one CreatePod call makes at most one pod, provided
// names are unique (launchers use "overbrainer-<runid>"). If the listing
// fails too, or lists a pod of that name it cannot read, the error wraps
// ErrPodMayExist.
func (c *Client) CreatePod(ctx context.Context, req CreatePodRequest) (*Pod, error) {
	b, err := req.body()
	if err != nil {
		return nil, err
	}
	raw, err := b.encode()
	if err != nil {
		return nil, err
	}
	r := &call{method: http.MethodPost, path: "/pods", body: raw}
	began := c.now()
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, r, attempt)
		if err == nil {
			p, err := decodePod(r, resp)
			if err != nil {
				// The pod exists but its description is unreadable.
				return nil, fmt.Errorf("%w (%w)", err, ErrPodMayExist)
			}
			return p, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A 500 may come after the pod was made; resending would likely
		// meet the same fault.
		internal := statusOf(err) == http.StatusInternalServerError
		if !c.retryable(err) && !internal {
			return nil, c.finalError(r, err, attempt)
		}
		var waits []time.Duration // nil: one look after a backoff step
		if internal || outcomeUnknown(err) {
			waits = c.createLooks
		}
		p, lerr := c.lookForPod(ctx, r, req.Name, began.Add(-reconcileSkew), attempt, waits, err)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case lerr != nil:
			return nil, fmt.Errorf("%w: create: %w; listing pods to check: %w",
				ErrPodMayExist, c.finalError(r, err, attempt), lerr)
		case p != nil:
			c.log.LogAttrs(ctx, slog.LevelInfo, "runpod: create attempt failed but made the pod; adopting it",
				slog.String("name", req.Name), slog.String("id", p.ID), slog.Int("attempt", attempt))
			return p, nil
		case internal:
			return nil, fmt.Errorf("%w: create: %w; no pod named %q showed up in %d looks, list pods again before creating another",
				ErrPodMayExist, c.finalError(r, err, attempt), req.Name, len(waits))
		case attempt >= c.maxAttempts:
			// The listing shows the last attempt made no pod.
			return nil, c.finalError(r, err, attempt)
		}
	}
}

// lookForPod lists the pods named name once after each of waits (once
// after a retry's backoff step when waits is nil), and returns the newest
// one created since since, or nil when none showed up.
func (c *Client) lookForPod(ctx context.Context, r *call, name string, since time.Time, attempt int, waits []time.Duration, cause error) (*Pod, error) {
	looks := max(len(waits), 1)
	for i := range looks {
		var err error
		if waits == nil {
			err = c.pause(ctx, r, attempt, cause)
		} else {
			err = c.sleep(ctx, waits[i])
		}
		if err != nil {
			return nil, err
		}
		pods, err := c.ListPods(ctx, ListPodsOptions{Name: name})
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if p.Unreadable != nil {
				// Maybe the one the lost attempt made: neither adopted
				// nor taken for none.
				return nil, p.Unreadable
			}
		}
		if p := newestSince(pods, since); p != nil {
			return p, nil
		}
	}
	return nil, nil
}

func statusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	return 0
}

func newestSince(pods []Pod, since time.Time) *Pod {
	var best *Pod
	for i := range pods {
		p := &pods[i]
		if !p.CreatedAt.IsZero() && p.CreatedAt.Before(since) {
			continue
		}
		if best == nil || p.CreatedAt.After(best.CreatedAt) {
			best = p
		}
	}
	return best
}

// GetPod returns the pod with the given ID. A pod that does not exist is an
// error matching ErrNotFound. A whole number written as 50.0 is read as
// 50; a description that cannot be read even so is an error wrapping a
// *PodReadError.
func (c *Client) GetPod(ctx context.Context, id string) (*Pod, error) {
	if err := checkID("GetPod", "pod", id); err != nil {
		return nil, err
	}
	r := &call{method: http.MethodGet, path: "/pods/{id}", id: id}
	resp, err := c.do(ctx, r, true)
	if err != nil {
		return nil, err
	}
	return decodePod(r, resp)
}

// ListPodsOptions filters ListPods. REST v2 cannot filter by name, so the
// client filters the full list itself.
type ListPodsOptions struct {
	// Name keeps only pods with exactly this name.
	Name string
	// NamePrefix keeps only pods whose name starts with it.
	NamePrefix string
	// IncludeClusterPods also lists pods that belong to clusters.
	IncludeClusterPods bool
	// SkipArgs leaves every pod's start command out: Args, Entrypoint and
	// Cmd empty, so Command returns nil. A guarded pod's command is some
	// 17 KB, in its cmd and again in its args, most of what a large
	// account's list weighs: a caller that judges pods by their status,
	// times and env need not hold it, and it is dropped as each page
	// comes in.
	SkipArgs bool
}

// ListPods returns the account's pods that match opts, sorted by creation
// time, oldest first. It follows Runpod's cursor pagination to the last
// page: every page repeats the first page's parameters, the same explicit
// limit included (a cursor is valid only with the parameters that issued
// it), adding the cursor of the page before. Each page has its own
// timeout, the client's plus a share for each pod it asks for; a page
// that does not come within it is not asked for again as it was: the
// listing starts over, from the first page, in pages half as large
// (down to 10 pods). It takes an unpaged answer
// too (no pagination block, or a bare array) as the whole list. A failed
// page fails the whole listing: a caller that deletes what is not listed
// must never act on part of it. One odd pod does not: each pod is read on
// its own (a whole number written as 50.0 is read as 50), and one that
// cannot be read is kept, with what could be read of it and why the rest
// could not in its Unreadable field; one whose name could not be read
// passes every name filter. Unreadable pods sort first.
func (c *Client) ListPods(ctx context.Context, opts ListPodsOptions) ([]Pod, error) {
	var all []Pod
	cursor := ""
	limit := ListPageSize
	// Each page is decoded (its strings copied) before the next is read:
	// the pages can share one body buffer.
	var body []byte
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, fmt.Errorf("runpod: GET /pods: more than %d pages", maxListPages)
		}
		r := &call{method: http.MethodGet, path: "/pods", query: url.Values{}, into: &body, skipArgs: opts.SkipArgs, timeout: c.pageTimeout(limit)}
		if opts.IncludeClusterPods {
			r.query.Set("includeClusterPods", "true")
		}
		r.query.Set("limit", strconv.Itoa(limit))
		if cursor != "" {
			r.query.Set("cursor", cursor)
		}
		resp, err := c.do(ctx, r, true)
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) && limit > minListPage {
			// A page too slow to come in its time: ask for smaller
			// ones, from the first, as a cursor is valid only with the
			// limit that issued it.
			limit = max(limit/2, minListPage)
			c.log.LogAttrs(ctx, slog.LevelDebug, "runpod: listing pods again in smaller pages",
				slog.Int("page", page+1), slog.Int("limit", limit))
			all, cursor, page = all[:0], "", -1
			continue
		}
		if err != nil && ctx.Err() == nil && errors.Is(err, errBodyTooLarge) && limit > largestPodsPage {
			// Pods larger than a guarded one's (another tool's): pages
			// that fit the bound whatever the pods, from the first.
			limit = largestPodsPage
			c.log.LogAttrs(ctx, slog.LevelDebug, "runpod: listing pods again in pages of the largest pods",
				slog.Int("page", page+1), slog.Int("limit", limit))
			all, cursor, page = all[:0], "", -1
			continue
		}
		if err != nil && page > 0 {
			return nil, fmt.Errorf("runpod: listing pods, page %d: %w", page+1, err)
		}
		if err != nil {
			return nil, err
		}
		pods, pg, err := readPage(r, resp)
		if err != nil {
			return nil, err
		}
		all = append(all, pods...)
		if pg == nil || !pg.HasNextPage {
			break
		}
		if pg.NextCursor == nil || *pg.NextCursor == "" || *pg.NextCursor == cursor {
			return nil, fmt.Errorf("runpod: GET /pods: page %d says there is a next page but gives no new cursor", page+1)
		}
		cursor = *pg.NextCursor
	}
	// Runpod lists newest first: reversed, pods made in the same second
	// (createdAt has whole seconds) stay oldest first through the sort.
	slices.Reverse(all)
	pods := all[:0]
	for _, p := range all {
		// A pod whose name could not be read may be any.
		unnamed := p.Unreadable != nil && p.Name == ""
		if !unnamed && opts.Name != "" && p.Name != opts.Name {
			continue
		}
		if !unnamed && !strings.HasPrefix(p.Name, opts.NamePrefix) {
			continue
		}
		pods = append(pods, p)
	}
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].CreatedAt.Before(pods[j].CreatedAt) })
	return pods, nil
}

// podPage is one answer of GET /pods.
type podPage[T any] struct {
	Pods       []T         `json:"pods"`
	Pagination *pagination `json:"pagination"`
}

type pagination struct {
	NextCursor  *string `json:"nextCursor"`
	HasNextPage bool    `json:"hasNextPage"`
}

// readPage decodes one answer of GET /pods, a paged one or a bare array,
// pod by pod: a pod that cannot be read is kept with what can be (see
// Pod.Unreadable). Only an answer that is no list of pods at all fails.
func readPage(r *call, resp response) ([]Pod, *pagination, error) {
	bare := false
	if b := bytes.TrimSpace(resp.body); len(b) > 0 && b[0] == '[' {
		bare = true
	}
	// The whole page at once first: the common case, and the fastest.
	var out podPage[Pod]
	var err error
	if bare {
		err = json.Unmarshal(resp.body, &out.Pods)
	} else {
		err = json.Unmarshal(resp.body, &out)
	}
	if err == nil {
		return withIDs(out.Pods), out.Pagination, nil
	}
	var raw podPage[json.RawMessage]
	if bare {
		err = decode(r, resp, &raw.Pods)
	} else {
		err = decode(r, resp, &raw)
	}
	if err != nil {
		return nil, nil, err
	}
	pods := make([]Pod, len(raw.Pods))
	for i, p := range raw.Pods {
		pods[i] = listedPod(p)
	}
	return withIDs(pods), raw.Pagination, nil
}

// withIDs marks a pod listed without an id unreadable: nothing can be
// done to it, nor can it be told from another.
func withIDs(pods []Pod) []Pod {
	for i := range pods {
		if p := &pods[i]; p.ID == "" && p.Unreadable == nil {
			p.Unreadable = &PodReadError{Err: errNoID}
		}
	}
	return pods
}

// ListPageSize is the limit ListPods asks for on every page: as many pods
// as fit in the client's bound on a response body when each carries a
// guarded pod's start command twice (cmd and args), up to REST v2's
// largest page (1,000). A page over the bound (pods of other tools, whose
// command may be as large as a create body) makes the listing start over
// in pages that fit any pods (largestPodsPage).
const ListPageSize = min(restMaxLimit, maxSuccessBody/(2*listedPodCommand+listedPodFields))

// restMaxLimit is REST v2's largest page.
const restMaxLimit = 1000

// listedPodCommand bounds a guarded pod's start command: the bootstrap's
// MaxCommandBytes (a test holds them equal).
const listedPodCommand = 24 << 10

// largestPodsPage is a page that fits the bound whatever its pods: each
// carries its command twice, each up to a create body, plus the API's own
// fields.
const largestPodsPage = maxSuccessBody / (2*MaxCreatePodBody + listedPodFields)

// listedPodFields bounds what the API adds to a pod besides its start
// command (status, machine, ports, env and the rest).
const listedPodFields = 16 << 10

// listedPodReadTime is what a page's timeout adds for each pod it asks
// for: the largest listed pod (some 216 KB) at about 1 MB/s. A full page
// of ListPageSize pods may weigh some 64 MB, and must not be held to the
// timeout of a call that weighs nothing.
const listedPodReadTime = 200 * time.Millisecond

// minListPage is the smallest page ListPods asks for after pages too
// slow to come in their time.
const minListPage = 10

// pageTimeout bounds one attempt at a page of limit pods: the client's
// timeout for any call plus the time to read that many of the largest
// pods. Zero, when the client has no timeout, bounds nothing.
func (c *Client) pageTimeout(limit int) time.Duration {
	if c.timeout <= 0 {
		return 0
	}
	return c.timeout + time.Duration(limit)*c.podReadTime
}

// maxListPages bounds the pages ListPods follows: a server whose cursors
// never end must not loop for ever.
const maxListPages = 10000

// PodAction asks for a state transition. start, stop and restart return the
// updated pod; terminate returns a nil pod (Runpod answers 204). An action
// not valid in the pod's status is an error matching ErrConflict.
//
// An action whose answer was lost (a transport error, 502 or 504: it may
// have run) is not resent blindly: PodAction first reads the pod, and when
// it is already where the action leads (EXITED after a stop, running or on
// its way after a start, gone after a terminate), returns that. A resent
// stop that had worked would answer 409. A restart cannot be told from the
// pod, so it is resent.
func (c *Client) PodAction(ctx context.Context, id string, a Action) (*Pod, error) {
	if err := checkID("PodAction", "pod", id); err != nil {
		return nil, err
	}
	switch a {
	case ActionStart, ActionStop, ActionRestart, ActionTerminate:
	default:
		return nil, invalidf("PodAction: unknown action %q", a)
	}
	r := &call{
		method: http.MethodPost, path: "/pods/{id}/action", id: id,
		body: struct {
			Action Action `json:"action"`
		}{a},
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, r, attempt)
		if err == nil {
			return actionAnswer(r, resp)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		unknown := outcomeUnknown(err) && a != ActionRestart
		if !c.retryable(err) || (attempt >= c.maxAttempts && !unknown) {
			return nil, c.finalError(r, err, attempt)
		}
		if err := c.pause(ctx, r, attempt, err); err != nil {
			return nil, err
		}
		if unknown {
			p, gerr := c.GetPod(ctx, id)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if done(a, p, gerr) {
				c.log.LogAttrs(ctx, slog.LevelInfo, "runpod: pod action's answer was lost but it was done",
					slog.String("pod", id), slog.String("action", string(a)), slog.Int("attempt", attempt))
				if a == ActionTerminate {
					return nil, nil
				}
				return p, nil
			}
		}
		if attempt >= c.maxAttempts {
			return nil, c.finalError(r, err, attempt)
		}
	}
}

func actionAnswer(r *call, resp response) (*Pod, error) {
	if resp.status == http.StatusNoContent || len(strings.TrimSpace(string(resp.body))) == 0 {
		return nil, nil
	}
	return decodePod(r, resp)
}

// outcomeUnknown reports a failure after which the request may have been
// carried out: no answer, or a gateway's 502 or 504. A 429 or 503 is a
// refusal.
func outcomeUnknown(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return true
	}
	return ae.StatusCode == http.StatusBadGateway || ae.StatusCode == http.StatusGatewayTimeout
}

// done reports whether the pod read after a lost action (p, or the read's
// error) shows the action carried out.
func done(a Action, p *Pod, err error) bool {
	if a == ActionTerminate {
		return errors.Is(err, ErrNotFound) || (err == nil && p.Status == StatusTerminated)
	}
	if err != nil {
		return false
	}
	switch a {
	case ActionStop:
		return p.Status == StatusExited
	case ActionStart:
		return p.Status == StatusRunning || p.Status == StatusStarting || p.Status == StatusProvisioning
	}
	return false
}

// PodCostPerHour returns what the pod costs now in USD per hour, as Runpod
// reports it (0 once it is stopped or gone; a stopped pod's disk bills
// apart).
func (c *Client) PodCostPerHour(ctx context.Context, id string) (float64, error) {
	p, err := c.GetPod(ctx, id)
	if err != nil {
		return 0, err
	}
	return p.CostPerHr, nil
}
