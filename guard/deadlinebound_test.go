package guard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// A deadline more than podenv.MaxDeadlineAhead after the run's start,
// which a sweeper bounds a host key's need by, is refused before any pod
// exists; the capacity wait counts when it moves the deadline.
func TestSpecDeadlineBound(t *testing.T) {
	t.Parallel()
	srv := runpodtest.NewServer()
	t.Cleanup(srv.Close)
	api, err := runpod.New(srv.APIKey(), runpod.WithBaseURL(srv.BaseURL()))
	if err != nil {
		t.Fatal(err)
	}
	// Cancelled: a spec let through fails on the context at its first
	// call, and makes nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	now := time.Now()
	for _, spec := range []guard.Spec{
		{Rules: podenv.Rules{Deadline: now.Add(podenv.MaxDeadlineAhead + time.Hour)}},
		{Rules: podenv.Rules{Deadline: now.Add(podenv.MaxDeadlineAhead - time.Hour)}, DeadlineFromCreate: true, CapacityWait: 2 * time.Hour},
	} {
		spec.Job = guard.Job{Dir: t.TempDir(), Command: "true"}
		if _, err := guard.Launch(ctx, api, spec); err == nil || !strings.Contains(err.Error(), "Spec.Deadline") {
			t.Errorf("deadline %s (wait %s): %v, want a Spec.Deadline field error", spec.Deadline, spec.CapacityWait, err)
		}
	}
	if n := len(srv.Pods()); n != 0 {
		t.Errorf("%d pods made", n)
	}
}
