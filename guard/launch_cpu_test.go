package guard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
)

// TestLaunchCPUPod: with CPUFlavor, the create asks for a CPU pod of that
// flavor and vCPU count, with no GPU (the fake holds it to the document).
func TestLaunchCPUPod(t *testing.T) {
	f := newFallback(t)
	spec := f.spec(t)
	spec.CPUFlavor, spec.VCPUs = "cpu3c", 4
	_ = f.launch(t, spec, guard.WithStartTimeout(100*time.Millisecond))
	var bodies []string
	for _, r := range f.srv.Requests() {
		if r.Method == "POST" && r.Path == "/v2/pods" {
			bodies = append(bodies, string(r.Body))
		}
	}
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"cpu":{"id":"cpu3c","vcpuCount":4}`) || strings.Contains(bodies[0], `"gpu"`) {
		t.Errorf("creates %q", bodies)
	}
	if len(f.rec.Attempts) != 1 || f.rec.Attempts[0].GPU != "cpu3c" {
		t.Errorf("attempts %+v", f.rec.Attempts)
	}
	f.noneBilling(t)
}
