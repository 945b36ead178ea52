package podenv_test

import (
	"errors"
	"testing"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// A pod that takes its run directory over from a lost pod says so, and
// Parse reads it back; any other pod says nothing, and a value the
// bootstrap would not read as 1 is refused.
func TestTakeOverEnv(t *testing.T) {
	if !podenv.Owns(podenv.TakeOverEnv) {
		t.Errorf("%s is not owned: a user's PodEnv could set it", podenv.TakeOverEnv)
	}
	plain := mustEnv(t, seedSettings())
	if v, ok := plain[podenv.TakeOverEnv]; ok {
		t.Errorf("a pod that takes nothing over has %s=%q", podenv.TakeOverEnv, v)
	}
	if p, err := podenv.Parse(plain); err != nil || p.TakeOver {
		t.Errorf("Parse = %+v, %v: want no take-over", p.TakeOver, err)
	}
	s := seedSettings()
	s.TakeOver = true
	env := mustEnv(t, s)
	if v := env[podenv.TakeOverEnv]; v != "1" {
		t.Errorf("%s = %q, want 1", podenv.TakeOverEnv, v)
	}
	if p, err := podenv.Parse(env); err != nil || !p.TakeOver {
		t.Errorf("Parse = %+v, %v: want the take-over read back", p.TakeOver, err)
	}
	for _, v := range []string{"0", "", "yes", "11"} {
		env[podenv.TakeOverEnv] = v
		var ee *podenv.EnvError
		if _, err := podenv.Parse(env); !errors.As(err, &ee) || ee.Name != podenv.TakeOverEnv {
			t.Errorf("%s=%q: Parse = %v, want an EnvError on it", podenv.TakeOverEnv, v, err)
		}
	}
}
