package guard_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// A private image's registry credential reaches the create; one the
// account lacks stops the launch at the first create (no other GPU type
// is tried: the credential would be as unknown there), and a malformed
// one is refused before anything is made.
func TestSpecRegistryAuth(t *testing.T) {
	f := newFallback(t)
	reg := f.srv.AddRegistry("ghcr-private")
	spec := f.spec(t)
	spec.Image, spec.RegistryAuthID = "ghcr.io/me/private:1", reg.ID
	_ = f.launch(t, spec) // the fake's pods have no SSH: the launch times out after the create
	pods := f.srv.Pods()
	if len(pods) == 0 || pods[0].Registry != reg.ID || pods[0].Image != spec.Image {
		t.Fatalf("pods %+v: want one pulled with registry %s", pods, reg.ID)
	}

	f = newFallback(t)
	spec = f.spec(t, "NVIDIA GeForce RTX 4090", "NVIDIA A40")
	spec.RegistryAuthID = "nosuchregistry"
	err := f.launch(t, spec)
	if !errors.Is(err, runpod.ErrNotFound) || !strings.Contains(err.Error(), "registry") {
		t.Errorf("unknown registry: %v", err)
	}
	if got := f.outcomes(); !slices.Equal(got, []string{"NVIDIA GeForce RTX 4090=refused"}) || len(f.srv.Pods()) != 0 {
		t.Errorf("attempts %v, %d pods", got, len(f.srv.Pods()))
	}

	spec.RegistryAuthID = "../registries"
	var fe *podenv.FieldError
	if err := f.launch(t, spec); !errors.As(err, &fe) || fe.Field != "Spec.RegistryAuthID" {
		t.Errorf("malformed registry id: %v", err)
	}
}
