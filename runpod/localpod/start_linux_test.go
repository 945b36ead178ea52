//go:build linux

package localpod

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// Without root, Check says that local pods need it.
func TestCheckWithoutRootSaysSo(t *testing.T) {
	saved := geteuid
	geteuid = func() int { return 1000 }
	t.Cleanup(func() { geteuid = saved })
	if err := Check(); !errors.Is(err, ErrNeedsRoot) {
		t.Fatalf("Check() = %v", err)
	}
}

// A binary that did not call PodInit would run its own main (a test
// binary, its tests) as the pod's init: Start starts no pod then, and its
// error says what to call.
func TestStartWithoutPodInitSaysSo(t *testing.T) {
	saved := podInitCalled.Load()
	podInitCalled.Store(false)
	t.Cleanup(func() { podInitCalled.Store(saved) })
	proc, err := Start(&Spec{PodID: "noinit", Argv: []string{"true"}, Dir: t.TempDir()}, io.Discard)
	if err == nil {
		proc.Kill()
		proc.Wait()
		t.Fatal("Start ran a pod without PodInit")
	}
	if !strings.Contains(err.Error(), "localpod.PodInit") {
		t.Errorf("error %q", err)
	}
}
