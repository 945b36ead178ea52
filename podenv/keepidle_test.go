package podenv_test

import (
	"errors"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// A kept pod always says its idle bound (contract 3): the default, the one
// asked for in whole seconds, or 0 when kept unbounded; a pod that is not
// kept says none. Parse reads each back, refuses a kept pod of contract 3
// that says none, and reads one of an earlier contract as unbounded, which
// its watchdog was.
func TestKeepIdleContract(t *testing.T) {
	kept := func(edit func(*podenv.Settings)) podenv.Settings {
		s := seedSettings()
		s.Keep = true
		if edit != nil {
			edit(&s)
		}
		return s
	}
	for _, c := range []struct {
		name string
		s    podenv.Settings
		want string // "" for none
	}{
		{"not kept", seedSettings(), ""},
		{"not kept, bound set", func() podenv.Settings { s := seedSettings(); s.KeepIdle = time.Hour; return s }(), ""},
		{"default", kept(nil), "3600"},
		{"set", kept(func(s *podenv.Settings) { s.KeepIdle = 90*time.Second + time.Millisecond }), "91"},
		{"unbounded", kept(func(s *podenv.Settings) { s.KeepUnbounded = true }), "0"},
	} {
		v, ok := mustEnv(t, c.s)[podenv.KeepIdleEnv]
		if got := map[bool]string{true: v}[ok]; got != c.want || ok != (c.want != "") {
			t.Errorf("%s: %s = %q (set %v), want %q", c.name, podenv.KeepIdleEnv, v, ok, c.want)
		}
	}
	if podenv.DefaultKeepIdle > 2*time.Hour {
		t.Errorf("DefaultKeepIdle %s is over the 2 h the issue allows", podenv.DefaultKeepIdle)
	}

	for _, c := range []struct {
		name, field string
		edit        func(*podenv.Settings)
	}{
		{"unbounded without keep", "KeepUnbounded", func(s *podenv.Settings) { s.KeepUnbounded = true }},
		{"unbounded with a bound", "KeepIdle", func(s *podenv.Settings) { s.Keep, s.KeepUnbounded, s.KeepIdle = true, true, time.Hour }},
		{"negative bound", "KeepIdle", func(s *podenv.Settings) { s.Keep, s.KeepIdle = true, -time.Second }},
	} {
		s := seedSettings()
		c.edit(&s)
		var fe *podenv.FieldError
		if err := s.Validate(); !errors.As(err, &fe) || fe.Field != "Settings."+c.field {
			t.Errorf("%s: Validate() = %v, want a FieldError on %s", c.name, err, c.field)
		}
	}

	env := mustEnv(t, kept(nil))
	delete(env, podenv.KeepIdleEnv)
	var ee *podenv.EnvError
	if _, err := podenv.Parse(env); !errors.As(err, &ee) || ee.Name != podenv.KeepIdleEnv {
		t.Errorf("a kept pod of contract 3 without its bound: Parse = %v, want an EnvError on %s", err, podenv.KeepIdleEnv)
	}
	env[podenv.ContractEnv] = "2"
	if p, err := podenv.Parse(env); err != nil || !p.KeepUnbounded || p.KeepIdle != 0 {
		t.Errorf("a kept pod of contract 2: KeepUnbounded %v, KeepIdle %s, err %v; want unbounded", p.KeepUnbounded, p.KeepIdle, err)
	}
	env = mustEnv(t, kept(func(s *podenv.Settings) { s.KeepUnbounded = true }))
	if p, err := podenv.Parse(env); err != nil || !p.KeepUnbounded {
		t.Errorf("--keep-idle 0 read back as %+v, %v", p.Rules, err)
	}
}
