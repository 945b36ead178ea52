package guard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// A detached run whose watchdog is gone lasts, by default, until a sweeper
// judges it past its deadline plus the extension: that default is an hour.
// A record of before the extension was stored was armed with the default
// of then, and Follow holds it to that, never to the shorter one of now.
func TestDefaultExtensionIsAnHour(t *testing.T) {
	s := Spec{Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}.withDefaults()
	if s.MaxExtension != time.Hour || DefaultMaxExtension != time.Hour {
		t.Errorf("default extension %s (DefaultMaxExtension %s), want 1h", s.MaxExtension, DefaultMaxExtension)
	}
	for _, tc := range []struct {
		ext  time.Duration
		hard bool
		want time.Duration
	}{
		{0, false, podenv.LegacyMaxExtension},
		{0, true, 0},
		{time.Hour, false, time.Hour},
		{30 * time.Hour, false, 30 * time.Hour},
	} {
		if got := extensionOf(tc.ext, tc.hard); got != tc.want {
			t.Errorf("extensionOf(%s, %v) = %s, want %s", tc.ext, tc.hard, got, tc.want)
		}
	}
}

// Follow's backup of the max_extension rule holds a record of before the
// extension was stored to the 24 h its pod was armed with: two hours past
// its deadline, with a fresh lease, it is left; a record armed with the
// hour of now is ended.
func TestFollowHoldsAnOldRecordToItsExtension(t *testing.T) {
	deadline := t0.Add(-2 * time.Hour)
	for _, tc := range []struct {
		name string
		ext  time.Duration
		want bool
	}{{"old record", 0, false}, {"armed with an hour", time.Hour, true}} {
		r := &Run{cfg: config{clock: &fakeClock{now: t0}}}
		r.rec.Deadline, r.rec.MaxExtension = deadline, tc.ext
		err := r.enforce(context.Background(), running, t0)
		var enf *EnforcedError
		if got := errors.As(err, &enf); got != tc.want {
			t.Errorf("%s: enforce = %v, want ended %v", tc.name, err, tc.want)
		}
	}
}
