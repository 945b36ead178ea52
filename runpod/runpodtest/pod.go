package runpodtest

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// Pod statuses, as Runpod names them.
const (
	StatusProvisioning = "PROVISIONING"
	StatusStarting     = "STARTING"
	StatusRunning      = "RUNNING"
	StatusExited       = "EXITED"
	StatusError        = "ERROR"
	StatusTerminated   = "TERMINATED"
)

// hoursPerMonth turns a monthly volume price into an hourly one, as cloud
// price lists do.
const hoursPerMonth = 730

// Pod is what the fake knows of a pod, for a test to inspect.
type Pod struct {
	ID     string
	Name   string
	Status string
	Image  string
	// Args is the pod's command as Runpod stores it: the create's args
	// string, or its entrypoint and cmd encoded as a JSON object.
	// Entrypoint and Cmd are that command taken apart, and Words the two
	// together (nil when args could not be split). The image's own
	// ENTRYPOINT and CMD are not part of them: Argv is what the container
	// ran, the two combined by Docker's rules.
	Args       string
	Entrypoint []string
	Cmd        []string
	Words      []string
	// Argv is the command the pod runner last started the container with,
	// nil before it did.
	Argv []string
	// Registry is the id of the registry credential the create named.
	Registry string
	// Env is the env of the create request, placeholders unresolved.
	Env   map[string]string
	Ports []string
	Cloud string
	// GPUTypeID and GPUCount are set for a GPU pod, CPUFlavor and VCPUs
	// for a CPU pod.
	GPUTypeID string
	GPUCount  int
	CPUFlavor string
	VCPUs     int
	DiskGB    int
	// CostPerHr is the USD per hour the pod bills while RUNNING.
	CostPerHr float64
	// PersistentGB and PersistentPath describe mounts.persistent.
	PersistentGB   int
	PersistentPath string
	// NetworkVolumeID and NetworkVolumePath describe mounts.network.
	NetworkVolumeID   string
	NetworkVolumePath string
	// SSHPort is the 127.0.0.1 port mapped to the pod's port 22 while it
	// runs (its OVERBRAINER_SSH_PORT and RUNPOD_TCP_PORT_22).
	SSHPort   int
	CreatedAt time.Time
	StartedAt time.Time // last time it turned RUNNING
	EndedAt   time.Time // when it exited, failed or was terminated
	// ExitCode is the command's exit status once it exited by itself, -1
	// before or otherwise.
	ExitCode int
	// Error says why the pod is in ERROR (the pod runner could not run it).
	Error string
	// Restarts counts the times the container was started again after
	// its command ended by itself (see WithExitedOnEnd); ExitCode is then
	// the last run's status while the pod restarts.
	Restarts int
	// Bill is what the pod has cost so far on the fake's clock.
	Bill Bill
	// Billing is true while the pod still costs money: provisioning,
	// running, or stopped with a persistent volume.
	Billing bool
}

// Bill is a pod's cost so far.
type Bill struct {
	// RunSeconds is the time spent RUNNING, billed at CostPerHr: RunUSD.
	RunSeconds float64
	RunUSD     float64
	// StoppedSeconds is the time spent EXITED (or in ERROR) with a
	// persistent volume, which keeps billing the volume: VolumeUSD.
	StoppedSeconds float64
	VolumeUSD      float64
	// USD is the total.
	USD float64
}

type pod struct {
	id, key        string
	name, image    string
	args           string
	entrypoint     []string
	cmd            []string
	words          []string
	img            localpod.Image // the image as the fake knew it at the create
	argv           []string       // what the runner last started
	disk           int
	env            map[string]string
	ports          []string
	gpuID          string
	gpuCount       int
	cpuID          string
	vcpus          int
	cloud          string
	costPerHr      float64
	persistentGB   int
	persistentPath string
	netVolID       string
	netVolPath     string
	dataCenter     string
	registry       string // the create's registry credential id

	status        string
	createdAt     time.Time
	startedAt     time.Time
	endedAt       time.Time
	runningSince  time.Time
	runBilled     time.Duration
	stoppedSince  time.Time
	stoppedBilled time.Duration
	spans         []billSpan // closed billing intervals, for GET /v2/billing/pods
	sshPort       int
	exitCode      int
	errMsg        string
	startingAt    time.Time // when it last turned STARTING, fake's clock
	restarts      int
	quickRestarts int       // restarts in a row of runs under 10s
	goneAt        time.Time // when it was terminated, real clock

	log         *podLog
	launch      *launch // the current run of the pod runner, if any
	terminating bool    // a DELETE or terminate is killing it
	stopping    bool    // a stop or restart is ending its command
	dying       *launch // the run a stop or restart is ending
	hostFailed  bool    // FailHost's: it never starts again
}

// setStatus moves the pod to status at now and keeps its billing intervals.
func (p *pod) setStatus(status string, now time.Time) {
	if p.status == status {
		return
	}
	if !p.runningSince.IsZero() {
		p.runBilled += now.Sub(p.runningSince)
		p.spans = append(p.spans, billSpan{from: p.runningSince, to: now, running: true})
		p.runningSince = time.Time{}
	}
	if !p.stoppedSince.IsZero() {
		p.stoppedBilled += now.Sub(p.stoppedSince)
		p.spans = append(p.spans, billSpan{from: p.stoppedSince, to: now})
		p.stoppedSince = time.Time{}
	}
	p.status = status
	switch status {
	case StatusStarting:
		p.startingAt = now
	case StatusRunning:
		p.runningSince = now
		p.startedAt = now
		p.endedAt = time.Time{}
		p.exitCode = -1
	case StatusExited, StatusError:
		p.endedAt = now
		if p.persistentGB > 0 {
			p.stoppedSince = now
		}
	case StatusTerminated:
		if p.endedAt.IsZero() {
			p.endedAt = now
		}
	}
}

func (p *pod) billing() bool {
	switch p.status {
	case StatusProvisioning, StatusStarting, StatusRunning:
		return true
	case StatusExited, StatusError:
		return p.persistentGB > 0
	}
	return false
}

func (p *pod) bill(now time.Time, volumeRate float64) Bill {
	run := p.runBilled
	if !p.runningSince.IsZero() && now.After(p.runningSince) {
		run += now.Sub(p.runningSince)
	}
	stopped := p.stoppedBilled
	if !p.stoppedSince.IsZero() && now.After(p.stoppedSince) {
		stopped += now.Sub(p.stoppedSince)
	}
	b := Bill{
		RunSeconds:     run.Seconds(),
		RunUSD:         run.Hours() * p.costPerHr,
		StoppedSeconds: stopped.Seconds(),
		VolumeUSD:      stopped.Hours() * float64(p.persistentGB) * volumeRate / hoursPerMonth,
	}
	b.USD = b.RunUSD + b.VolumeUSD
	return b
}

// refreshLocked moves an API-only pod out of PROVISIONING once the
// provisioning delay has passed on the fake's clock, and out of STARTING
// once the starting delay has too. s.mu must be held.
func (s *Server) refreshLocked(p *pod, now time.Time) {
	if s.cfg.runner {
		return
	}
	if p.status == StatusProvisioning {
		ready := p.createdAt.Add(s.cfg.provisionDelay)
		if now.Before(ready) {
			return
		}
		p.setStatus(StatusStarting, ready)
	}
	if p.status == StatusStarting {
		if up := p.startingAt.Add(s.cfg.startingDelay); !now.Before(up) {
			p.setStatus(StatusRunning, up)
		}
	}
}

// visibleLocked says whether GET still shows the pod: any pod but a
// terminated one, which shows for WithTerminatedVisible's while.
func (s *Server) visibleLocked(p *pod) bool {
	return p.status != StatusTerminated || time.Since(p.goneAt) < s.cfg.goneAfter
}

func (p *pod) snapshot(s *Server, now time.Time) Pod {
	s.refreshLocked(p, now)
	return Pod{
		ID:                p.id,
		Name:              p.name,
		Status:            p.status,
		Image:             p.image,
		Args:              p.args,
		Entrypoint:        slices.Clone(p.entrypoint),
		Cmd:               slices.Clone(p.cmd),
		Words:             slices.Clone(p.words),
		Argv:              slices.Clone(p.argv),
		Env:               maps.Clone(p.env),
		Registry:          p.registry,
		Ports:             slices.Clone(p.ports),
		Cloud:             p.cloud,
		GPUTypeID:         p.gpuID,
		GPUCount:          p.gpuCount,
		CPUFlavor:         p.cpuID,
		VCPUs:             p.vcpus,
		DiskGB:            p.disk,
		CostPerHr:         p.costPerHr,
		PersistentGB:      p.persistentGB,
		PersistentPath:    p.persistentPath,
		NetworkVolumeID:   p.netVolID,
		NetworkVolumePath: p.netVolPath,
		SSHPort:           p.sshPort,
		CreatedAt:         p.createdAt,
		StartedAt:         p.startedAt,
		EndedAt:           p.endedAt,
		ExitCode:          p.exitCode,
		Error:             p.errMsg,
		Restarts:          p.restarts,
		Bill:              p.bill(now, s.cfg.volumeRate),
		Billing:           p.billing(),
	}
}

func (p *pod) actions() []string {
	switch p.status {
	case StatusProvisioning, StatusStarting:
		return []string{"stop", "terminate"}
	case StatusRunning:
		return []string{"stop", "restart", "terminate"}
	case StatusExited, StatusError:
		return []string{"start", "terminate"}
	}
	return []string{}
}

func (p *pod) exposes22() bool { return slices.Contains(p.ports, "22/tcp") }

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// wire renders the pod as the API's Pod schema.
func (p *pod) wire(now time.Time) wirePod {
	w := wirePod{
		ID:      p.id,
		Name:    p.name,
		Status:  p.status,
		Actions: p.actions(),
		Image:   p.image,
		Args:    p.args,
		// Runpod returns the command taken apart on every read.
		Entrypoint: slices.Clone(p.entrypoint),
		Cmd:        slices.Clone(p.cmd),
		Disk:       p.disk,
		Ports:      slices.Clone(p.ports),
		Env:        maps.Clone(p.env),
		Cloud:      p.cloud,
		// Runpod reports the billed rate, 0 once the pod no longer runs.
		Cost:      p.costPerHr,
		CreatedAt: rfc3339(p.createdAt),
	}
	if p.registry != "" {
		reg := p.registry
		w.Registry = &reg
	}
	if w.Ports == nil {
		w.Ports = []string{}
	}
	if w.Entrypoint == nil {
		w.Entrypoint = []string{}
	}
	if w.Cmd == nil {
		w.Cmd = []string{}
	}
	if w.Env == nil {
		w.Env = map[string]string{}
	}
	if p.gpuID != "" {
		w.GPU = &wireGPU{ID: p.gpuID, Count: p.gpuCount,
			VCPUCount: float64(fakeVCPUsPerGPU * p.gpuCount), Memory: float64(fakeRAMPerGPU * p.gpuCount)}
		cuda := "12.8"
		w.CudaVersion = &cuda
	} else {
		w.CPU = &wireCPU{ID: p.cpuID, VCPUCount: p.vcpus, Memory: 2 * p.vcpus}
	}
	if p.persistentGB > 0 {
		size := p.persistentGB
		w.Mounts.Persistent = &wirePersistentMount{Size: &size, Path: p.persistentPath}
	}
	if p.netVolID != "" {
		w.Mounts.Network = []wireNetworkMount{{VolumeID: p.netVolID, Path: p.netVolPath}}
	}
	switch p.status {
	case StatusExited, StatusTerminated, StatusError:
		w.Cost = 0
	}
	if p.status != StatusProvisioning {
		dc := p.dataCenter
		w.DataCenterID = &dc
	}
	if !p.startedAt.IsZero() {
		started := rfc3339(p.startedAt)
		w.StartedAt = &started
	}
	if p.status == StatusRunning {
		uptime := int64(now.Sub(p.startedAt).Seconds())
		w.Runtime = &wireRuntime{Uptime: max(uptime, 0), Ports: []wireRuntimePort{}}
		if p.exposes22() && p.sshPort != 0 {
			public := p.sshPort
			w.Runtime.Ports = append(w.Runtime.Ports, wireRuntimePort{Private: 22, Public: &public, Type: "tcp", IP: "127.0.0.1"})
			w.SSH.Direct = &wireSSHEndpoint{
				Host:     "127.0.0.1",
				Port:     p.sshPort,
				Username: "root",
				Command:  fmt.Sprintf("ssh root@127.0.0.1 -p %d", p.sshPort),
			}
		}
		w.Runtime.Ports = append(w.Runtime.Ports, p.httpPorts()...)
	}
	return w
}
