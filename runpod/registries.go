package runpod

import (
	"context"
	"net/http"
)

// Registry is one of the account's container registry credentials: what
// a pod of a private image names (CreatePodRequest.RegistryAuthID) so
// that Runpod can pull it. Runpod never returns its username or password.
type Registry struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ListRegistries returns the account's container registry credentials.
func (c *Client) ListRegistries(ctx context.Context) ([]Registry, error) {
	r := &call{method: http.MethodGet, path: "/registries"}
	resp, err := c.do(ctx, r, true)
	if err != nil {
		return nil, err
	}
	var out struct {
		Registries []Registry `json:"registries"`
	}
	if err := decode(r, resp, &out); err != nil {
		return nil, err
	}
	return out.Registries, nil
}
