package runpod

import (
	"context"
	"encoding/json"
	"net/http"
)

// GPUType is a GPU type of Runpod's catalog with its list prices.
type GPUType struct {
	// ID is what CreatePodRequest.GPUTypeID takes, e.g.
	// "NVIDIA GeForce RTX 4090".
	ID           string
	Name         string
	Manufacturer string
	MemoryGB     int
	// Secure and Community tell on which clouds the type is offered.
	Secure, Community bool
	// SecurePrice and CommunityPrice are USD per hour for one GPU.
	SecurePrice, CommunityPrice float64
	// MaxSecureCount and MaxCommunityCount are the most GPUs of this type
	// one pod can have on each cloud.
	MaxSecureCount, MaxCommunityCount int
	// Availability and DataCenters are the stock, overall and per data
	// center, when asked for (see CatalogOption); DataCenters lists only
	// the data centers that offer the type.
	Availability Availability
	DataCenters  []DataCenterStock
}

// PricePerHour is the list price in USD per hour of count GPUs of this
// type on the given cloud (SECURE when cloud is empty). ok is false when
// the type is not offered there.
func (g GPUType) PricePerHour(cloud CloudType, count int) (price float64, ok bool) {
	if count < 1 {
		count = 1
	}
	switch cloud {
	case "", SecureCloud:
		return g.SecurePrice * float64(count), g.Secure
	case CommunityCloud:
		return g.CommunityPrice * float64(count), g.Community
	}
	return 0, false
}

// gpuTypeJSON is the v2 GpuType schema.
type gpuTypeJSON struct {
	ID           string  `json:"id"`
	Name         string  `json:"name"`
	Pool         *string `json:"pool"` // serverless pool; unused here
	Manufacturer string  `json:"manufacturer"`
	Memory       int     `json:"memory"`
	Secure       bool    `json:"secure"`
	Community    bool    `json:"community"`
	Price        struct {
		Secure    float64 `json:"secure"`
		Community float64 `json:"community"`
	} `json:"price"`
	MaxCount struct {
		Secure    int `json:"secure"`
		Community int `json:"community"`
	} `json:"maxCount"`
	Availability Availability      `json:"availability,omitempty"`
	DataCenters  []DataCenterStock `json:"dataCenters,omitempty"`
}

// UnmarshalJSON reads the v2 GpuType object, whose prices and counts are
// nested per cloud.
func (g *GPUType) UnmarshalJSON(b []byte) error {
	var j gpuTypeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*g = GPUType{
		ID: j.ID, Name: j.Name, Manufacturer: j.Manufacturer, MemoryGB: j.Memory,
		Secure: j.Secure, Community: j.Community,
		SecurePrice: j.Price.Secure, CommunityPrice: j.Price.Community,
		MaxSecureCount: j.MaxCount.Secure, MaxCommunityCount: j.MaxCount.Community,
		Availability: j.Availability, DataCenters: j.DataCenters,
	}
	return nil
}

// MarshalJSON writes the v2 GpuType object (as a fake Runpod would).
func (g GPUType) MarshalJSON() ([]byte, error) {
	var j gpuTypeJSON
	j.ID, j.Name, j.Manufacturer, j.Memory = g.ID, g.Name, g.Manufacturer, g.MemoryGB
	j.Secure, j.Community = g.Secure, g.Community
	j.Price.Secure, j.Price.Community = g.SecurePrice, g.CommunityPrice
	j.MaxCount.Secure, j.MaxCount.Community = g.MaxSecureCount, g.MaxCommunityCount
	j.Availability, j.DataCenters = g.Availability, g.DataCenters
	return json.Marshal(j)
}

// ListGPUTypes returns Runpod's GPU catalog with list prices, and with
// live stock when opts ask for it.
func (c *Client) ListGPUTypes(ctx context.Context, opts ...CatalogOption) ([]GPUType, error) {
	cfg, q, err := catalogQuery(opts)
	if err != nil {
		return nil, err
	}
	r := &call{method: http.MethodGet, path: "/catalog/gpus", query: q}
	resp, err := c.do(ctx, r, true)
	if err != nil {
		return nil, err
	}
	var out struct {
		GPUs []GPUType `json:"gpus"`
	}
	if err := decode(r, resp, &out); err != nil {
		return nil, err
	}
	if cfg.dc == "" {
		return out.GPUs, nil
	}
	var in []GPUType
	for _, g := range out.GPUs {
		if g.StockIn(cfg.dc).InStock() {
			in = append(in, g)
		}
	}
	return in, nil
}

// GetGPUType returns one GPU type of the catalog by its ID.
func (c *Client) GetGPUType(ctx context.Context, id string) (*GPUType, error) {
	// GPU type IDs hold spaces ("NVIDIA GeForce RTX 4090"), so only what
	// would change the path is refused.
	if !pathSegment(id) {
		return nil, &IDError{Op: "GetGPUType", Kind: "GPU type", ID: id}
	}
	r := &call{method: http.MethodGet, path: "/catalog/gpus/{id}", id: id}
	resp, err := c.do(ctx, r, true)
	if err != nil {
		return nil, err
	}
	var g GPUType
	if err := decode(r, resp, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// CPUType is a CPU flavor of Runpod's catalog (GET /v2/catalog/cpus), for
// CreatePodRequest.CPUFlavorID.
type CPUType struct {
	ID    string `json:"id"` // e.g. "cpu3c"
	Name  string `json:"name"`
	Group string `json:"group"`
	VCPU  struct {
		Min int `json:"min"`
		Max int `json:"max"`
	} `json:"vcpu"`
	RAMGBPerVCPU float64 `json:"ramGbPerVcpu"`
	Price        struct {
		// SecurePerVCPU is USD per hour and vCPU of a pod.
		SecurePerVCPU float64 `json:"securePerVcpu"`
	} `json:"price"`
}

// ListCPUTypes returns Runpod's CPU catalog with list prices.
func (c *Client) ListCPUTypes(ctx context.Context) ([]CPUType, error) {
	return getList[CPUType](ctx, c, &call{method: http.MethodGet, path: "/catalog/cpus"}, "cpus")
}
