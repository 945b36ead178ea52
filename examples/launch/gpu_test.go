package main_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFallbackToTheNextGPU: the emulator's H100 is out of stock, so the
// run says so, gets an RTX 4090 instead, and makes one pod.
func TestFallbackToTheNextGPU(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.run(args([]string{"run", "--gpu", "NVIDIA H100 80GB HBM3, NVIDIA GeForce RTX 4090"}, fast, demo(1))...)
	if p.code != 0 {
		t.Fatalf("exit %d\n%s", p.code, p.stderr)
	}
	mustContain(t, "stderr", p.stderr.String(),
		"GPU type NVIDIA H100 80GB HBM3: no capacity", "There are no longer any instances available", "trying the next type",
		"created: NVIDIA GeForce RTX 4090 x1")
	r := w.onlyRun()
	var got []string
	for _, a := range r.Attempts {
		got = append(got, a.GPU+"="+string(a.Outcome))
	}
	if diff := cmp.Diff([]string{"NVIDIA H100 80GB HBM3=no_capacity", "NVIDIA GeForce RTX 4090=created"}, got); diff != "" {
		t.Errorf("run.json attempts (-want +got):\n%s", diff)
	}
	if pods := w.srv.Pods(); len(pods) != 1 || pods[0].GPUTypeID != "NVIDIA GeForce RTX 4090" || r.Attempts[1].PodID != pods[0].ID {
		t.Errorf("pods %+v", pods)
	}
	w.assertClean()
}

// TestCatalogCommands: gpus, datacenters and volumes print the emulator's
// catalog as aligned tables, and one line when there is nothing.
func TestCatalogCommands(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	out := func(args ...string) string {
		t.Helper()
		p := l.run(args...)
		if p.code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, p.code, p.stderr)
		}
		return p.stdout.String()
	}
	all := out("gpus")
	mustContain(t, "gpus", all, "ID ", "VRAM", "$/H", "MAX COUNT", "STOCK",
		"NVIDIA H100 80GB HBM3    80 GB  $2.690  8          NONE", "NVIDIA RTX A5000         24 GB  $0.270  8          HIGH")
	cheap := out("gpus", "--in-stock", "--max-price", "1")
	if strings.Contains(cheap, "H100") || strings.Contains(cheap, "A100") || !strings.Contains(cheap, "NVIDIA GeForce RTX 4090") {
		t.Errorf("gpus --in-stock --max-price 1:\n%s", cheap)
	}
	// Cheapest first.
	if strings.Index(cheap, "A5000") > strings.Index(cheap, "A40") || strings.Index(cheap, "A40") > strings.Index(cheap, "4090") {
		t.Errorf("not cheapest first:\n%s", cheap)
	}
	if got := out("gpus", "--min-vram", "200"); got != "no GPU type matches at least 200 GB of VRAM\n" {
		t.Errorf("gpus --min-vram 200: %q", got)
	}
	mustContain(t, "datacenters", out("datacenters"), "ID            REGION         GPU TYPES IN STOCK", "FAKE-LOCAL-1", "NVIDIA RTX A5000 (HIGH)")
	if got := out("volumes"); got != "no network volumes\n" {
		t.Errorf("volumes: %q", got)
	}
}

// TestVolumesCreate: volumes create makes a volume where asked, and
// volumes lists it.
func TestVolumesCreate(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.run("volumes", "create", "data", "--size", "20", "--data-center", "FAKE-LOCAL-1")
	if p.code != 0 {
		t.Fatalf("exit %d\n%s", p.code, p.stderr)
	}
	vols := w.srv.NetworkVolumes()
	if len(vols) != 1 || vols[0].Name != "data" || vols[0].SizeGB != 20 || vols[0].DataCenter != "FAKE-LOCAL-1" {
		t.Fatalf("volumes %+v", vols)
	}
	p = w.run("volumes")
	mustContain(t, "volumes", p.stdout.String(), "ID", "NAME", "SIZE", "DATA CENTER", vols[0].ID+"  data  20 GB  FAKE-LOCAL-1")
	if p := w.run("volumes", "create", "x", "--size", "20", "--data-center", "NOWHERE"); p.code == 0 || len(w.srv.NetworkVolumes()) != 1 {
		t.Errorf("a volume in an unknown data center: exit %d", p.code)
	}
}
