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
	return getList[Registry](ctx, c, &call{method: http.MethodGet, path: "/registries"}, "registries")
}
