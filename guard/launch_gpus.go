package guard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// Spec values.
const (
	AutoGPU        = "auto" // alone in GPUTypes: those in stock within MinVRAMGB and MaxPricePerGPU, cheapest first
	AutoDataCenter = "auto" // alone in DataCenters: those that stock each type
	NoMinCUDA      = "none" // MinCUDA: no CUDA floor
)

// GPUFilter chooses GPU types; its zero value keeps all on the SECURE cloud.
type GPUFilter struct {
	Cloud          runpod.CloudType // SECURE when empty
	Count          int              // GPUs per pod, 1 when 0
	MinVRAMGB      int              // 0: any
	MaxPricePerGPU float64          // USD per GPU and hour, 0: any
	InStock        bool             // only types in stock (in DataCenters when set)
	DataCenters    []string
	MinCUDA        string // ListGPUs reads the stock of machines with it
}

// String says what the filter keeps, as errors quote it.
func (f GPUFilter) String() string {
	var parts []string
	if f.MinVRAMGB > 0 {
		parts = append(parts, fmt.Sprintf("at least %d GB of VRAM", f.MinVRAMGB))
	}
	if f.MaxPricePerGPU > 0 {
		parts = append(parts, fmt.Sprintf("at most %s/h per GPU", costplan.Money(f.MaxPricePerGPU)))
	}
	if f.InStock {
		parts = append(parts, fmt.Sprintf("in stock for %d GPU(s) on the %s cloud", max(f.Count, 1), cmp.Or(f.Cloud, runpod.SecureCloud)))
	}
	if len(f.DataCenters) > 0 {
		parts = append(parts, "in "+strings.Join(f.DataCenters, " or "))
	}
	if f.MinCUDA != "" {
		parts = append(parts, "CUDA "+f.MinCUDA+" or later")
	}
	if len(parts) == 0 {
		return "no filter"
	}
	return strings.Join(parts, ", ")
}

// PickGPUs keeps the types that pass f, by price per GPU, most VRAM and id.
func PickGPUs(types []runpod.GPUType, f GPUFilter) []runpod.GPUType {
	cloud := cmp.Or(f.Cloud, runpod.SecureCloud)
	var out []runpod.GPUType
	for _, g := range types {
		price, ok := g.PricePerHour(cloud, 1)
		switch {
		case !ok || !(price > 0):
		case g.MemoryGB < f.MinVRAMGB:
		case f.MaxPricePerGPU > 0 && price > f.MaxPricePerGPU:
		case f.InStock && !inStock(g, f.DataCenters):
		default:
			out = append(out, g)
		}
	}
	slices.SortStableFunc(out, func(a, b runpod.GPUType) int {
		pa, _ := a.PricePerHour(cloud, 1)
		pb, _ := b.PricePerHour(cloud, 1)
		return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(b.MemoryGB, a.MemoryGB), strings.Compare(a.ID, b.ID))
	})
	return out
}

func inStock(g runpod.GPUType, dcs []string) bool {
	if len(dcs) == 0 {
		return g.Availability.InStock()
	}
	for _, dc := range dcs {
		if g.StockIn(dc).InStock() {
			return true
		}
	}
	return false
}

// ListGPUs reads the catalog with live stock and returns PickGPUs's pick.
func ListGPUs(ctx context.Context, c *runpod.Client, f GPUFilter) ([]runpod.GPUType, error) {
	return listGPUs(ctx, c, f)
}

func listGPUs(ctx context.Context, c api, f GPUFilter) ([]runpod.GPUType, error) {
	opts := []runpod.CatalogOption{runpod.WithStock()}
	if f.Cloud != "" {
		opts = append(opts, runpod.StockCloud(f.Cloud))
	}
	if f.Count > 0 {
		opts = append(opts, runpod.StockCount(f.Count))
	}
	if f.MinCUDA != "" {
		opts = append(opts, runpod.StockMinCUDA(f.MinCUDA))
	}
	types, err := c.ListGPUTypes(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return PickGPUs(types, f), nil
}

// Attempt is one try at getting a pod of a GPU type, in Record.Attempts.
type Attempt struct {
	GPU         string    `json:"gpu"`
	Time        time.Time `json:"time"`
	Outcome     Outcome   `json:"outcome"`
	PodID       string    `json:"pod_id,omitempty"`
	DataCenters []string  `json:"data_centers,omitempty"` // asked for; none: any
	Detail      string    `json:"detail,omitempty"`
	// For a pod the run went on without: what it may have billed, counted
	// against the cost cap, and how it ended.
	CostUSD float64 `json:"cost_usd,omitempty"`
	Ended   string  `json:"ended,omitempty"`
}

// earlierCost is what the run's earlier pods may have billed.
func (r Record) earlierCost() float64 {
	var usd float64
	for _, a := range r.Attempts {
		usd += a.CostUSD
	}
	return usd
}

// costTo is what the run may have billed until t, its earlier pods too.
func (r Record) costTo(t time.Time) float64 {
	return costplan.Spent(r.CostPerHr, r.BillingStart, t) + r.earlierCost()
}

// Outcome is how an Attempt ended.
type Outcome string

// The outcomes of an Attempt.
const (
	OutcomeCreated      Outcome = "created"       // the pod was made (and came up)
	OutcomeNoCapacity   Outcome = "no_capacity"   // Runpod's capacity 400: next type
	OutcomeForbidden    Outcome = "forbidden"     // 403 for the type's pool: next type
	OutcomeRejected     Outcome = "rejected"      // another 400 (not placed, or a rule broken): next type
	OutcomeNoStock      Outcome = "no_stock"      // no data center stocks it: not tried
	OutcomeStartTimeout Outcome = "start_timeout" // made, not up in time: deleted, next type
	OutcomeNoFunds      Outcome = "no_funds"      // 402: stop
	OutcomeUnknown      Outcome = "unknown"       // the pod may exist: stop
	OutcomeRefused      Outcome = "refused"       // any other error: stop
)

// Next says the launch tries the next GPU type after this outcome.
func (o Outcome) Next() bool {
	return o == OutcomeNoCapacity || o == OutcomeForbidden || o == OutcomeRejected || o == OutcomeNoStock || o == OutcomeStartTimeout
}

func (a Attempt) String() string {
	s := fmt.Sprintf("%s: %s", a.GPU, strings.ReplaceAll(string(a.Outcome), "_", " "))
	if a.PodID != "" {
		s += " (pod " + a.PodID + ")"
	}
	if a.Detail != "" {
		s += ": " + a.Detail
	}
	if a.Ended != "" {
		s += "; ended: " + a.Ended
	}
	return s
}

func outcomeOf(err error) Outcome {
	switch {
	case errors.Is(err, runpod.ErrInsufficientFunds):
		return OutcomeNoFunds
	case errors.Is(err, runpod.ErrNoCapacity):
		return OutcomeNoCapacity
	case errors.Is(err, runpod.ErrForbidden):
		return OutcomeForbidden
	case runpod.ClassifyCreate(err) == runpod.CreateUnknown:
		return OutcomeUnknown
	case runpod.ClassifyCreate(err) == runpod.CreateNextType:
		return OutcomeRejected
	}
	return OutcomeRefused
}

// candidate is a GPU type the launch will try, with the data centers it
// asks for (none: any).
type candidate struct {
	gpu   string // or, with cpu, the CPU flavor
	cpu   bool
	dcs   []string
	noDCs bool // AutoDataCenter found no data center with it in stock
}

// planGPUs turns the Spec's GPU types and data centers into the ordered
// candidates, before anything is created: auto reads the catalog, a
// network volume pins the data center, and a choice that cannot be met is
// refused here.
func planGPUs(ctx context.Context, c api, spec Spec, volDC string) ([]candidate, error) {
	list := func(ctx context.Context, f GPUFilter) ([]runpod.GPUType, error) { return listGPUs(ctx, c, f) }
	return planGPUsFrom(ctx, list, spec, volDC)
}

// planGPUsFrom is planGPUs reading the catalog's stock with list.
func planGPUsFrom(ctx context.Context, list func(context.Context, GPUFilter) ([]runpod.GPUType, error), spec Spec, volDC string) ([]candidate, error) {
	if spec.CPUFlavor != "" {
		var dcs []string
		if volDC != "" {
			dcs = []string{volDC}
		} else if len(spec.DataCenters) != 1 || spec.DataCenters[0] != AutoDataCenter {
			dcs = spec.DataCenters
		}
		return []candidate{{gpu: spec.CPUFlavor, cpu: true, dcs: dcs}}, nil
	}
	autoDC := len(spec.DataCenters) == 1 && spec.DataCenters[0] == AutoDataCenter
	dcs := spec.DataCenters
	if autoDC {
		dcs = nil
	}
	if volDC != "" {
		if len(dcs) > 0 && !slices.Contains(dcs, volDC) {
			return nil, &podenv.FieldError{Field: "Spec.DataCenters", Reason: fmt.Sprintf("%s conflicts with network volume %s, which is in %s: a pod mounts a network volume only in its data center",
				strings.Join(dcs, ","), spec.NetworkVolumeID, volDC)}
		}
		dcs, autoDC = []string{volDC}, false
	}
	f := GPUFilter{Cloud: spec.Cloud, Count: spec.GPUCount, MinVRAMGB: spec.MinVRAMGB, MaxPricePerGPU: spec.MaxPricePerGPU,
		InStock: true, DataCenters: dcs, MinCUDA: spec.cudaFloor()}
	auto := len(spec.GPUTypes) == 1 && spec.GPUTypes[0] == AutoGPU
	var stock []runpod.GPUType
	if auto || autoDC {
		var err error
		if stock, err = list(ctx, GPUFilter{Cloud: f.Cloud, Count: f.Count, MinCUDA: f.MinCUDA}); err != nil {
			return nil, fmt.Errorf("reading the GPU catalog's stock: %w", err)
		}
	}
	names := spec.GPUTypes
	if auto {
		picked := PickGPUs(stock, f)
		if len(picked) == 0 {
			anyStock := f
			anyStock.InStock = false
			if len(PickGPUs(stock, anyStock)) == 0 {
				// Waiting for stock would not help.
				return nil, fmt.Errorf("%w: no GPU type matches %s (%w)", ErrNoGPU, f, errNoType)
			}
			return nil, fmt.Errorf("%w: no GPU type matches %s", ErrNoGPU, f)
		}
		names = nil
		for _, g := range picked {
			names = append(names, g.ID)
		}
	}
	var out []candidate
	for _, name := range names {
		cand := candidate{gpu: name, dcs: dcs}
		if autoDC {
			i := slices.IndexFunc(stock, func(g runpod.GPUType) bool { return g.ID == name })
			if i >= 0 {
				cand.dcs = stock[i].StockedDataCenters()
			}
			cand.noDCs = len(cand.dcs) == 0
		}
		out = append(out, cand)
	}
	return out, nil
}

// checkCPU checks a CPU pod's Spec: none of a GPU's fields, no pod
// volume (Runpod's CPU pods take none), no capacity wait (it reads the
// GPU stock), and a vCPU count Runpod takes.
func (s Spec) checkCPU(bad func(field, format string, args ...any)) {
	switch {
	case len(s.GPUTypes) > 0 || s.GPUTypeID != "" || s.GPUCount != 0 || s.MinVRAMGB != 0 || s.MaxPricePerGPU != 0:
		bad("CPUFlavor", "makes a CPU pod: GPUTypes, GPUTypeID, GPUCount, MinVRAMGB and MaxPricePerGPU are for a GPU pod")
	case s.MinCUDA != "" && s.MinCUDA != NoMinCUDA:
		bad("MinCUDA", "is for a GPU pod, not a CPU pod (CPUFlavor)")
	case s.VolumeGB > 0:
		bad("VolumeGB", "a CPU pod (CPUFlavor) takes no pod volume: use a network volume")
	case s.CapacityWait > 0:
		bad("CapacityWait", "is for a GPU pod, not a CPU pod (CPUFlavor)")
	case s.VCPUs < 2 || s.VCPUs&(s.VCPUs-1) != 0:
		bad("VCPUs", "%d is not a power of two of at least 2", s.VCPUs)
	}
}

// cudaFloor is the gpu.minCudaVersion the create sends ("" for none).
func (s Spec) cudaFloor() string {
	if s.MinCUDA == NoMinCUDA {
		return ""
	}
	return s.MinCUDA
}

var dataCenterID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkGPUs checks the GPU fields of a Spec with its defaults.
func (s Spec) checkGPUs(bad func(field, format string, args ...any)) {
	if s.GPUTypeID != "" && len(s.GPUTypes) > 0 && !slices.Equal(s.GPUTypes, []string{s.GPUTypeID}) {
		bad("GPUTypes", "is set with GPUTypeID: set one of them")
	}
	for i, g := range s.GPUTypes {
		switch {
		case strings.TrimSpace(g) == "":
			bad("GPUTypes", "entry %d is empty", i)
		case g == AutoGPU && len(s.GPUTypes) > 1:
			bad("GPUTypes", "%q must be the only entry", AutoGPU)
		case slices.Index(s.GPUTypes, g) != i:
			bad("GPUTypes", "%q is listed twice", g)
		}
	}
	auto := len(s.GPUTypes) == 1 && s.GPUTypes[0] == AutoGPU
	if s.MinVRAMGB < 0 {
		bad("MinVRAMGB", "%d is negative", s.MinVRAMGB)
	}
	if math.IsNaN(s.MaxPricePerGPU) || math.IsInf(s.MaxPricePerGPU, 0) || s.MaxPricePerGPU < 0 {
		bad("MaxPricePerGPU", "%v is not a positive amount or 0", s.MaxPricePerGPU)
	}
	if !auto && (s.MinVRAMGB > 0 || s.MaxPricePerGPU > 0) {
		bad("GPUTypes", "MinVRAMGB and MaxPricePerGPU filter %q: set GPUTypes to it", AutoGPU)
	}
	for i, dc := range s.DataCenters {
		switch {
		case dc == AutoDataCenter && len(s.DataCenters) > 1:
			bad("DataCenters", "%q must be the only entry", AutoDataCenter)
		case dc != AutoDataCenter && !dataCenterID.MatchString(dc):
			bad("DataCenters", "entry %d, %q, is not a data center id", i, dc)
		}
	}
	if s.MinCUDA != "" && s.MinCUDA != NoMinCUDA {
		if err := runpod.CheckCUDA(s.MinCUDA); err != nil {
			bad("MinCUDA", "%q is not major.minor, such as 12.4", s.MinCUDA)
		}
	}
}

// errNoType says that no GPU type passes the filters, in stock or not.
var errNoType = errors.New("none does even out of stock")

// errNextGPU says that the candidate could not be had and the next one
// may be tried.
var errNextGPU = errors.New("guard: next GPU type")

// createError is a create that failed for good: the launch cleans up as
// after any failed create.
type createError struct{ err error }

func (e *createError) Error() string { return e.err.Error() }
func (e *createError) Unwrap() error { return e.err }

// tryGPU creates the pod of one candidate and brings it up to a ready
// verdict. A type without capacity, or refused for its pool, or whose pod
// was not up within the start timeout (then deleted), returns errNextGPU;
// a failed create a *createError; else ensure's error.
func (r *Run) tryGPU(ctx context.Context, req runpod.CreatePodRequest, cand candidate, spec Spec, last bool) error {
	at := Attempt{GPU: cand.gpu, Time: r.now(), DataCenters: cand.dcs}
	if cand.noDCs {
		at.Outcome, at.Detail = OutcomeNoStock, "no data center has it in stock"
		r.attempt(at)
		return errNextGPU
	}
	req.GPUTypeID, req.DataCenterIDs = cand.gpu, cand.dcs
	if cand.cpu {
		req.GPUTypeID, req.GPUCount, req.MinCUDA, req.CPUFlavorID, req.VCPUCount = "", 0, "", cand.gpu, spec.VCPUs
	}
	if r.rec.MaxCostUSD > 0 {
		left := r.rec.MoneyLeft(r.rec.earlierCost())
		if left <= 0 {
			return &createError{fmt.Errorf("%w: %s of %s went to pods that never came up (%s)",
				ErrCapSpent, costplan.Money(r.rec.earlierCost()), costplan.Money(r.rec.MaxCostUSD), r.attemptsText())}
		}
		// The sweeper judges the pod's cap from its env alone.
		req.Env = maps.Clone(req.Env)
		podenv.SetMaxCost(req.Env, left)
	}
	// Billing starts no earlier than the create call: the cost cap counts
	// from here, on this machine's clock, which errs on the safe side.
	r.rec.BillingStart = r.now()
	pod, err := r.api.CreatePod(ctx, req)
	if err != nil {
		at.Outcome, at.Detail = outcomeOf(err), err.Error()
		r.attempt(at)
		if at.Outcome.Next() && ctx.Err() == nil {
			return &refusal{err}
		}
		return &createError{fmt.Errorf("creating the pod: %w", err)}
	}
	// The cost cap is planned on the price of the type obtained.
	r.rec.PodID, r.rec.CostPerHr, r.rec.GPU = pod.ID, pod.CostPerHr, cand.gpu
	r.rec.Phase = PhaseBooting
	at.PodID = pod.ID
	r.save()
	r.emit(Event{Kind: EventCreated, GPU: cand.gpu, GPUCount: spec.GPUCount, CostPerHr: pod.CostPerHr, Deadline: spec.Deadline})
	err = r.ensure(ctx)
	if errors.Is(err, ErrStartTimeout) && !last && ctx.Err() == nil {
		at.Outcome, at.Detail = OutcomeStartTimeout, err.Error()
		_, derr := r.deletePod(ctx)
		at.CostUSD = costplan.Spent(r.rec.CostPerHr, r.rec.BillingStart, r.now())
		r.attempt(at)
		if derr != nil {
			// Another pod while this one may still bill: no.
			return fmt.Errorf("%w; deleting it before trying the next GPU type: %w", err, derr)
		}
		r.rec.PodID, r.rec.CostPerHr, r.rec.GPU = "", 0, ""
		r.save()
		return errNextGPU
	}
	at.Outcome = OutcomeCreated
	r.attempt(at)
	return err
}

// attempt records a in the Record and tells it.
func (r *Run) attempt(a Attempt) {
	r.rec.Attempts = append(r.rec.Attempts, a)
	r.save()
	r.emit(Event{Kind: EventAttempt, GPU: a.GPU, Attempt: a})
}

func (r *Run) attemptsText() string {
	var parts []string
	for _, a := range r.rec.Attempts {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, "; ")
}
