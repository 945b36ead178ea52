package runpodtest_test

import (
	"testing"

	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

func TestParseDrift(t *testing.T) {
	d, err := runpodtest.ParseDrift("pod-key-delete=404, dash-unresolved,max-create-body=40000,whole-as-fraction,unknown-member=x,missing-member=y")
	want := runpodtest.Drift{PodKeyDelete: 404, DashUnresolved: true, MaxCreateBody: 40000, WholeAsFraction: true, UnknownMember: "x", MissingMember: "y"}
	if err != nil || d != want {
		t.Errorf("ParseDrift: %+v, %v; want %+v", d, err, want)
	}
	if d, err := runpodtest.ParseDrift(""); err != nil || d != (runpodtest.Drift{}) {
		t.Errorf("ParseDrift(\"\"): %+v, %v", d, err)
	}
	for _, bad := range []string{"bogus", "pod-key-delete", "max-create-body=-1"} {
		if _, err := runpodtest.ParseDrift(bad); err == nil {
			t.Errorf("ParseDrift(%q) took it", bad)
		}
	}
}
