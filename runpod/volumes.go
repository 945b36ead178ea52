package runpod

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// NetworkVolume is a network volume: storage that outlives pods, billed by
// its size.
type NetworkVolume struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	SizeGB       int    `json:"size"`
	DataCenterID string `json:"dataCenter"`
	// Type is the storage tier, e.g. "STANDARD" or "HIGH_PERFORMANCE".
	Type string `json:"type"`
}

// Runpod's bounds on a network volume's size, in GB.
const (
	MinVolumeGB = 10
	MaxVolumeGB = 4096
)

// GetNetworkVolume returns the network volume with the given ID.
func (c *Client) GetNetworkVolume(ctx context.Context, id string) (*NetworkVolume, error) {
	if err := checkID("GetNetworkVolume", "volume", id); err != nil {
		return nil, err
	}
	r := &call{method: http.MethodGet, path: "/network-volumes/{id}", id: id}
	return c.volumeCall(ctx, r, true)
}

// GrowNetworkVolume grows the volume to sizeGB and returns it. A volume can
// only grow: the client reads the current size first and refuses a smaller
// sizeGB (an error wrapping ErrInvalid, with no PATCH sent); the same size
// is a no-op. A size outside Runpod's 10..4096 GB is refused before any
// request.
func (c *Client) GrowNetworkVolume(ctx context.Context, id string, sizeGB int) (*NetworkVolume, error) {
	if err := checkID("GrowNetworkVolume", "volume", id); err != nil {
		return nil, err
	}
	if sizeGB < MinVolumeGB || sizeGB > MaxVolumeGB {
		return nil, invalidf("GrowNetworkVolume: size %d GB not in %d..%d", sizeGB, MinVolumeGB, MaxVolumeGB)
	}
	cur, err := c.GetNetworkVolume(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case sizeGB < cur.SizeGB:
		return nil, invalidf("GrowNetworkVolume: volume %s is %d GB; it cannot shrink to %d GB", id, cur.SizeGB, sizeGB)
	case sizeGB == cur.SizeGB:
		return cur, nil
	}
	r := &call{
		method: http.MethodPatch, path: "/network-volumes/{id}", id: id,
		body: struct {
			Size int `json:"size"`
		}{sizeGB},
	}
	return c.volumeCall(ctx, r, true)
}

// ListNetworkVolumes returns the account's network volumes.
func (c *Client) ListNetworkVolumes(ctx context.Context) ([]NetworkVolume, error) {
	return getList[NetworkVolume](ctx, c, &call{method: http.MethodGet, path: "/network-volumes"}, "networkVolumes")
}

// CreateNetworkVolume makes a network volume of sizeGB in data center dc.
// It bills every month until deleted. It is sent once: a lost answer is
// not resent (list the volumes to see whether it was made).
func (c *Client) CreateNetworkVolume(ctx context.Context, name string, sizeGB int, dc string) (*NetworkVolume, error) {
	if strings.TrimSpace(name) == "" {
		return nil, invalidf("CreateNetworkVolume: empty name")
	}
	if sizeGB < MinVolumeGB || sizeGB > MaxVolumeGB {
		return nil, invalidf("CreateNetworkVolume: size %d GB not in %d..%d", sizeGB, MinVolumeGB, MaxVolumeGB)
	}
	if err := checkID("CreateNetworkVolume", "data center", dc); err != nil {
		return nil, err
	}
	r := &call{method: http.MethodPost, path: "/network-volumes", body: struct {
		Name       string `json:"name"`
		Size       int    `json:"size"`
		DataCenter string `json:"dataCenter"`
	}{name, sizeGB, dc}}
	return c.volumeCall(ctx, r, false)
}

// DeleteNetworkVolume deletes the volume and its data. A volume already
// gone is not an error.
func (c *Client) DeleteNetworkVolume(ctx context.Context, id string) error {
	if err := checkID("DeleteNetworkVolume", "volume", id); err != nil {
		return err
	}
	r := &call{method: http.MethodDelete, path: "/network-volumes/{id}", id: id}
	_, err := c.do(ctx, r, true)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// volumeCall sends r and reads the volume it answers.
func (c *Client) volumeCall(ctx context.Context, r *call, retry bool) (*NetworkVolume, error) {
	resp, err := c.do(ctx, r, retry)
	if err != nil {
		return nil, err
	}
	var v NetworkVolume
	if err := decode(r, resp, &v); err != nil {
		return nil, err
	}
	return &v, nil
}
