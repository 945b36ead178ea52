package main_test

import (
	"testing"
)

// Private images: registries lists the account's credentials, and run
// --registry-auth ID creates the pod with one; an id the account lacks
// fails the run at its first create, with nothing left.
func TestRegistryAuth(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reg := w.srv.AddRegistry("ghcr-private")
	ls := w.run("registries")
	if ls.code != 0 {
		t.Fatalf("registries exit %d", ls.code)
	}
	mustContain(t, "registries", lineWith(ls.stdout.String(), reg.ID), "ghcr-private")

	bad := w.run(args([]string{"run", "--registry-auth", "nosuchregistry"}, fast, demo(1))...)
	if bad.code != 1 {
		t.Errorf("unknown registry: exit %d, want 1", bad.code)
	}
	mustContain(t, "stderr", bad.stderr.String(), "registry credential not found")
	if n := len(w.srv.Pods()); n != 0 {
		t.Errorf("%d pods made with an unknown registry", n)
	}

	p := w.run(args([]string{"run", "--image", "ghcr.io/me/private:1", "--registry-auth", reg.ID}, fast, demo(1))...)
	if p.code != 0 {
		t.Fatalf("exit %d", p.code)
	}
	var r = w.runs()
	for _, run := range r {
		if run.PodID == "" {
			continue
		}
		if pod := w.pod(run); pod.Registry != reg.ID || pod.Image != "ghcr.io/me/private:1" {
			t.Errorf("pod %s: registry %q, image %q", pod.ID, pod.Registry, pod.Image)
		}
	}
	w.assertClean()
}
