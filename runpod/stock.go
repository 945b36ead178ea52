package runpod

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Availability is Runpod's stock level of a GPU type.
type Availability string

// The levels of the v2 AvailabilityLevel enum.
const (
	StockNone   Availability = "NONE"
	StockLow    Availability = "LOW"
	StockMedium Availability = "MEDIUM"
	StockHigh   Availability = "HIGH"
)

// InStock reports whether the level says there is some.
func (a Availability) InStock() bool {
	return a == StockLow || a == StockMedium || a == StockHigh
}

// DataCenterStock is a data center's stock of one GPU type.
type DataCenterStock struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Availability Availability `json:"availability"`
}

// CatalogOption asks the GPU catalog for live stock. Any of them adds
// each type's availability (include=AVAILABILITY&product=POD) to the
// answer; a bad value makes the call fail with ErrInvalid, nothing sent.
type CatalogOption func(*catalogConfig) error

type catalogConfig struct {
	stock   bool
	cloud   CloudType
	count   int
	minCUDA string
	dc      string
}

// WithStock asks for availability on the SECURE cloud for one GPU.
func WithStock() CatalogOption {
	return func(c *catalogConfig) error { c.stock = true; return nil }
}

// StockCloud reads the stock of the given cloud.
func StockCloud(cloud CloudType) CatalogOption {
	return func(c *catalogConfig) error {
		if cloud != SecureCloud && cloud != CommunityCloud {
			return invalidf("StockCloud: %q is neither SECURE nor COMMUNITY", cloud)
		}
		c.stock, c.cloud = true, cloud
		return nil
	}
}

// StockCount reads the stock of pods with n GPUs.
func StockCount(n int) CatalogOption {
	return func(c *catalogConfig) error {
		if n < 1 || n > 64 {
			return invalidf("StockCount: %d not in 1..64", n)
		}
		c.stock, c.count = true, n
		return nil
	}
}

// StockMinCUDA reads the stock of machines with CUDA v or later ("12.4").
func StockMinCUDA(v string) CatalogOption {
	return func(c *catalogConfig) error {
		if err := CheckCUDA(v); err != nil {
			return err
		}
		c.stock, c.minCUDA = true, v
		return nil
	}
}

// StockDataCenter keeps only the types in stock in data center id (the
// client filters: Runpod's catalog has no such query).
func StockDataCenter(id string) CatalogOption {
	return func(c *catalogConfig) error {
		if err := checkID("StockDataCenter", "data center", id); err != nil {
			return err
		}
		c.stock, c.dc = true, id
		return nil
	}
}

var cudaPattern = regexp.MustCompile(`^[0-9]{1,3}\.[0-9]{1,3}$`)

// CheckCUDA refuses a CUDA version that is not major.minor.
func CheckCUDA(v string) error {
	if !cudaPattern.MatchString(v) {
		return invalidf("CUDA version %q is not major.minor, such as 12.4", v)
	}
	return nil
}

func catalogQuery(opts []CatalogOption) (catalogConfig, url.Values, error) {
	var c catalogConfig
	for _, o := range opts {
		if o == nil {
			return c, nil, invalidf("nil CatalogOption")
		}
		if err := o(&c); err != nil {
			return c, nil, err
		}
	}
	if !c.stock {
		return c, nil, nil
	}
	q := url.Values{"include": {"AVAILABILITY"}, "product": {"POD"}}
	if c.cloud != "" {
		q.Set("cloud", string(c.cloud))
	}
	if c.count > 0 {
		q.Set("count", strconv.Itoa(c.count))
	}
	if c.minCUDA != "" {
		q.Set("minCudaVersion", c.minCUDA)
	}
	return c, q, nil
}

// StockIn returns the type's stock in data center dc (StockNone when it
// is not listed there).
func (g GPUType) StockIn(dc string) Availability {
	for _, d := range g.DataCenters {
		if d.ID == dc {
			return d.Availability
		}
	}
	return StockNone
}

// StockedDataCenters lists the data centers that have the type in stock.
func (g GPUType) StockedDataCenters() []string {
	var out []string
	for _, d := range g.DataCenters {
		if d.Availability.InStock() {
			out = append(out, d.ID)
		}
	}
	return out
}

// MaxCount is the most GPUs of the type one pod can have on cloud
// (SECURE when empty).
func (g GPUType) MaxCount(cloud CloudType) int {
	if cloud == CommunityCloud {
		return g.MaxCommunityCount
	}
	return g.MaxSecureCount
}

// InStock lists the GPU types the data center has in stock, as
// "id (level)".
func (d DataCenter) InStock() []string {
	var out []string
	for _, g := range d.GPUs {
		if g.Availability.InStock() {
			out = append(out, fmt.Sprintf("%s (%s)", g.ID, g.Availability))
		}
	}
	return out
}

// DataCenter is one of Runpod's data centers; GPUs is filled when asked
// for (ListDataCenters with gpus).
type DataCenter struct {
	ID                 string            `json:"id"`
	Name               string            `json:"name"`
	Region             string            `json:"region"`
	NetworkVolumeTypes []string          `json:"networkVolumeTypes"`
	GPUs               []DataCenterStock `json:"gpuAvailability"`
}

// ListDataCenters returns Runpod's data centers, with the stock of each
// GPU type they offer when gpus is set.
func (c *Client) ListDataCenters(ctx context.Context, gpus bool) ([]DataCenter, error) {
	r := &call{method: http.MethodGet, path: "/catalog/datacenters"}
	if gpus {
		r.query = url.Values{"include": {"GPU_AVAILABILITY"}}
	}
	return getList[DataCenter](ctx, c, r, "dataCenters")
}

// capacityText starts Runpod's 400 for a GPU type with no free machine
// ("There are no longer any instances available with the requested
// specifications. Please refresh and try again.").
const capacityText = "no longer any instances available"

// ErrNoCapacity matches the 400 Runpod answers a create when no machine
// of the requested type (in the requested data centers) is free.
var ErrNoCapacity = errors.New("runpod: no capacity for the requested GPU type")

// CreateOutcome says what a failed CreatePod means for the next GPU type.
type CreateOutcome int

// The outcomes of a failed create.
const (
	// CreateStop: retrying another type cannot help (402, 422, another
	// 400, 401, ...).
	CreateStop CreateOutcome = iota
	// CreateNextType: this type cannot be had now (capacity 400, 403 for
	// its pool), or Runpod refused it with a 400 of another wording,
	// which its text says to take to the next candidate (the type and
	// data centers could not be placed, or a rule of the request is
	// broken: when every type is refused so, the request is at fault).
	CreateNextType
	// CreateUnknown: the pod may exist (ErrPodMayExist); stop and look for
	// it by name rather than make another.
	CreateUnknown
)

// ClassifyCreate tells what a CreatePod error means for a run that has
// other GPU types to try.
func ClassifyCreate(err error) CreateOutcome {
	switch {
	case errors.Is(err, ErrPodMayExist):
		return CreateUnknown
	case errors.Is(err, ErrInsufficientFunds):
		return CreateStop
	case errors.Is(err, ErrNoCapacity), errors.Is(err, ErrForbidden), placementRefused(err):
		return CreateNextType
	}
	return CreateStop
}

// placementRefused reports a 400 without the problem document's
// validation errors (errors[], which say the body itself is wrong): what
// Runpod's text answers a create it could not place, or one that breaks
// a rule across fields.
func placementRefused(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.StatusCode == http.StatusBadRequest && len(ae.Errors) == 0
}

// isCapacity reports whether an error is Runpod's capacity 400: by its
// status and documented fields first (a 400 that lists validation errors
// is about the body), by its wording last, as capacity carries no
// machine-readable code of its own.
func (e *APIError) isCapacity() bool {
	if !placementRefused(e) {
		return false
	}
	for _, s := range append([]string{e.Detail, e.Title}, e.Errors...) {
		if strings.Contains(strings.ToLower(s), capacityText) {
			return true
		}
	}
	return false
}
