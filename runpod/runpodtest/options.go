package runpodtest

import (
	"net/http"
	"sync"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// Option configures a Server.
type Option func(*config)

type config struct {
	apiKey         string
	now            func() time.Time
	runner         bool
	gpus           []GPUType
	dataCenters    []DataCenter
	provisionDelay time.Duration
	stopGrace      time.Duration
	volumeRate     float64
	billingDelay   time.Duration
	cpuRate        float64
	allowLeft      bool
	quota          []QuotaWindow
	pageSize       int
	startingDelay  time.Duration
	exitOnEnd      bool
	restartDelay   time.Duration
	goneAfter      time.Duration
	hidden         []string
	images         map[string]localpod.Image // guarded by Server.mu once serving
	middleware     []func(http.Handler) http.Handler
	drift          Drift
}

func defaultConfig() config {
	return config{
		gpus:         DefaultGPUTypes(),
		stopGrace:    2 * time.Second,
		volumeRate:   0.20,
		cpuRate:      0.03,
		restartDelay: time.Second,
		goneAfter:    2 * time.Second,
	}
}

// WithMiddleware wraps the fake's handler in m, outermost last given: a
// test can check every request and answer, for example against Runpod's
// OpenAPI document (this module's tests do, with internal/testkit/checkedfake).
// The fake itself stays free of any such checker.
func WithMiddleware(m func(http.Handler) http.Handler) Option {
	return func(c *config) { c.middleware = append(c.middleware, m) }
}

// WithBillingDelay makes GET /v2/billing/pods show a pod's use only once
// it is d old on the fake's clock, as Runpod's billing lags the use it
// bills (default 0: at once). See also Server.SetBillingDelay.
func WithBillingDelay(d time.Duration) Option { return func(c *config) { c.billingDelay = d } }

// WithPageSize makes every page of the fake's pod list hold at most n pods,
// fewer than a request's limit asks (which Runpod's document allows).
func WithPageSize(n int) Option { return func(c *config) { c.pageSize = n } }

// WithAPIKey sets the account key the fake accepts (default: a generated
// one, see Server.APIKey).
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithClock sets the clock that bills pods and stamps them (default
// time.Now). A pod's processes keep the real clock: only the fake's
// accounting follows this one. See ManualClock.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithPodRunner makes every created pod really run its command on this
// machine, with package localpod (see the package doc). It needs root on
// Linux, and a binary that calls localpod.PodInit first (a test binary:
// Main); without them, a created pod goes to ERROR with the reason (see
// localpod.Check and localpod.PodInit).
func WithPodRunner() Option { return func(c *config) { c.runner = true } }

// WithGPUTypes replaces the GPU catalog, and so the prices pods are billed
// at (default DefaultGPUTypes).
func WithGPUTypes(types ...GPUType) Option {
	return func(c *config) { c.gpus = append([]GPUType(nil), types...) }
}

// WithProvisioningDelay keeps each new pod PROVISIONING this long before it
// runs (default 0: as soon as it can). In API-only mode the delay is read on
// the fake's clock, so a ManualClock decides when pods start.
func WithProvisioningDelay(d time.Duration) Option {
	return func(c *config) { c.provisionDelay = d }
}

// WithStartingDelay keeps each start of a pod's container (its first boot,
// a start, a restart) STARTING this long before it turns RUNNING: the
// pod shows no runtime, no ports and no SSH endpoint yet, as Runpod's does
// while its container comes up, so that a client must wait for them rather
// than take RUNNING's. With the pod runner the command already runs then,
// on the real clock; in API-only mode the delay follows the provisioning
// delay on the fake's clock. Default 0: RUNNING at once.
func WithStartingDelay(d time.Duration) Option {
	return func(c *config) { c.startingDelay = d }
}

// WithExitedOnEnd makes a pod whose command ends by itself turn EXITED
// and stay so, the fake's behaviour before it restarted containers.
// Without it the container is restarted, as Runpod does: the pod shows
// STARTING for the restart delay (WithRestartDelay, doubled on each quick
// restart), then runs its command again, for as long as it is not stopped
// or deleted.
func WithExitedOnEnd() Option { return func(c *config) { c.exitOnEnd = true } }

// WithRestartDelay sets the wait before a container whose command ended is
// started again (default 1s). It doubles with each restart of a run that
// lasted under 10s, up to 32 times, as Docker's restart back-off does.
func WithRestartDelay(d time.Duration) Option { return func(c *config) { c.restartDelay = d } }

// WithTerminatedVisible sets how long, on the real clock, a deleted pod
// still answers GET as TERMINATED before it answers 404 (default 2s, as
// Runpod shows a terminated pod for a short while). 0 answers 404 at once.
// The list leaves the pod at once either way.
func WithTerminatedVisible(d time.Duration) Option { return func(c *config) { c.goneAfter = d } }

// WithHiddenDirs names host directories that the pod runner's pods must
// not see, such as a launcher's state directory: each pod gets an empty
// tmpfs over each (the fake's own directory always is). A directory that
// holds one of the pod's mountpoints, or its PATH, is left visible.
func WithHiddenDirs(dirs ...string) Option {
	return func(c *config) { c.hidden = append(c.hidden, dirs...) }
}

// WithStopGrace sets how long the stop action waits after SIGTERM before it
// kills a running pod's processes (default 2s; Docker's is 10s).
func WithStopGrace(d time.Duration) Option { return func(c *config) { c.stopGrace = d } }

// WithVolumeRate sets what a stopped pod's persistent volume costs, in USD
// per GB and per month of 730 hours (default 0.20, Runpod's list price for
// an idle volume).
func WithVolumeRate(usdPerGBMonth float64) Option {
	return func(c *config) { c.volumeRate = usdPerGBMonth }
}

// WithCPURate sets the price of a CPU pod, in USD per vCPU and hour
// (default 0.03).
func WithCPURate(usdPerVCPUHour float64) Option {
	return func(c *config) { c.cpuRate = usdPerVCPUHour }
}

// AllowPodsLeft tells NewTestServer that the test means to leave pods
// billing at its end (a stop that keeps a volume, say), so it does not fail
// the test for it.
func AllowPodsLeft() Option { return func(c *config) { c.allowLeft = true } }

// GPUType is one entry of the fake's GPU catalog. A price of 0 means the type
// is not offered in that cloud.
type GPUType struct {
	ID       string // what a create request names, e.g. "NVIDIA GeForce RTX 4090"
	Name     string
	Pool     string
	MemoryGB int
	// SecurePrice and CommunityPrice are USD per GPU and hour.
	SecurePrice    float64
	CommunityPrice float64
	MaxCount       int
	// Stock is how many GPUs of the type each data center has, taken by
	// live pods and given back as they end; nil is plenty in the fake's
	// own data center (FAKE-LOCAL-1) and none elsewhere.
	Stock map[string]int
	// CUDA is its machines' CUDA version (DefaultCUDA when empty).
	CUDA string
}

// What the fake allocates to a GPU pod for each of its GPUs, reported as
// the pod's gpu.vcpuCount and gpu.memory (GB of system RAM).
const (
	fakeVCPUsPerGPU = 8
	fakeRAMPerGPU   = 31
)

// DefaultGPUTypes is the fake's built-in catalog. Its prices are in the
// range of Runpod's list prices, not a copy of them.
func DefaultGPUTypes() []GPUType {
	return []GPUType{
		{ID: "NVIDIA GeForce RTX 4090", Name: "RTX 4090", Pool: "ADA_24", MemoryGB: 24, SecurePrice: 0.69, CommunityPrice: 0.34, MaxCount: 8},
		{ID: "NVIDIA RTX A5000", Name: "RTX A5000", Pool: "AMPERE_24", MemoryGB: 24, SecurePrice: 0.27, CommunityPrice: 0.16, MaxCount: 8},
		{ID: "NVIDIA A40", Name: "A40", Pool: "AMPERE_48", MemoryGB: 48, SecurePrice: 0.40, CommunityPrice: 0.35, MaxCount: 8},
		{ID: "NVIDIA A100 80GB PCIe", Name: "A100 PCIe", Pool: "AMPERE_80", MemoryGB: 80, SecurePrice: 1.64, CommunityPrice: 1.19, MaxCount: 8},
		{ID: "NVIDIA H100 80GB HBM3", Name: "H100 SXM", Pool: "HOPPER_141", MemoryGB: 80, SecurePrice: 2.69, CommunityPrice: 0, MaxCount: 8,
			// Out of stock, so that a fallback from it shows on a fresh
			// machine.
			Stock: map[string]int{fakeDataCenter: 0}},
	}
}

// ManualClock is a clock that moves only when told, for WithClock.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a clock stopped at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
