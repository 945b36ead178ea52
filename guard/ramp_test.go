package guard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The waits for a starting pod begin short and double up to the poll
// interval, never past it; a poll interval shorter than the first look
// is used as it is.
func TestRampDoublesUpToTheLimit(t *testing.T) {
	for _, tc := range []struct {
		limit time.Duration
		want  []time.Duration
	}{
		{2 * time.Second, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second}},
		{time.Second, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second}},
		{100 * time.Millisecond, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}},
	} {
		r := newRamp(tc.limit)
		var got []time.Duration
		for range tc.want {
			got = append(got, r.step())
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("limit %s: waits (-want +got):\n%s", tc.limit, diff)
		}
	}
	// The SSH waits start shorter.
	if r := newRampFrom(firstSSHLook, time.Second); r.step() != 50*time.Millisecond || r.step() != 100*time.Millisecond {
		t.Error("the SSH ramp does not start at 50ms and double")
	}
	// wait honours a cancelled context at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (realClock{}).Sleep(ctx, newRamp(time.Hour).step()); !errors.Is(err, context.Canceled) {
		t.Errorf("wait on a cancelled context: %v", err)
	}
}
