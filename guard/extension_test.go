package guard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// A detached run whose watchdog is gone lasts, by default, until a sweeper
// judges it past its deadline plus the extension: that default is an hour,
// and a zero extension means it in a Record as in a Spec (podenv's
// Extension; only an old pod's env reads as the 24 h of then, in Parse).
func TestDefaultExtensionIsAnHour(t *testing.T) {
	s := Spec{Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}.withDefaults()
	if s.MaxExtension != time.Hour || podenv.DefaultMaxExtension != time.Hour {
		t.Errorf("default extension %s (podenv.DefaultMaxExtension %s), want 1h", s.MaxExtension, podenv.DefaultMaxExtension)
	}
	for _, tc := range []struct {
		ext  time.Duration
		hard bool
		want time.Duration
	}{
		{0, false, time.Hour},
		{0, true, 0},
		{time.Hour, false, time.Hour},
		{30 * time.Hour, false, 30 * time.Hour},
	} {
		var rec Record
		rec.MaxExtension, rec.HardDeadline = tc.ext, tc.hard
		if got := rec.Extension(); got != tc.want {
			t.Errorf("Extension of %s (hard %v) = %s, want %s", tc.ext, tc.hard, got, tc.want)
		}
	}
}

// Follow's backup of the max_extension rule holds a record to the
// extension its pod was armed with: two hours past its deadline, with a
// fresh lease, a run armed with a day is left; one armed with an hour,
// or with a zero (the default hour), is ended.
func TestFollowHoldsARecordToItsExtension(t *testing.T) {
	deadline := t0.Add(-2 * time.Hour)
	for _, tc := range []struct {
		name string
		ext  time.Duration
		want bool
	}{{"armed with a day", 24 * time.Hour, false}, {"armed with an hour", time.Hour, true}, {"zero: the default hour", 0, true}} {
		r := &Run{cfg: config{clock: &fakeClock{now: t0}}}
		r.rec.Deadline, r.rec.MaxExtension = deadline, tc.ext
		err := r.enforce(context.Background(), running, t0)
		var enf *EnforcedError
		if got := errors.As(err, &enf); got != tc.want {
			t.Errorf("%s: enforce = %v, want ended %v", tc.name, err, tc.want)
		}
	}
}
