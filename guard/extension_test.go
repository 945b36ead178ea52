package guard

import (
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// A detached run whose watchdog is gone lasts, by default, until a sweeper
// judges it past its deadline plus the extension: that default is an hour.
// A record of before the extension was stored was armed with the default
// of then, and Follow holds it to that, never to the shorter one of now.
func TestDefaultExtensionIsAnHour(t *testing.T) {
	s := Spec{Deadline: time.Now().Add(time.Hour)}.withDefaults()
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
