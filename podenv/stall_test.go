package podenv_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The stall rule is off unless asked: a zero StallAfter stays zero, the
// pod's env says 0 (its watchdog deletes nothing for a stall), and Parse
// reads it back as off. A set rule goes in whole seconds. An env that says
// nothing is a pod of before the rule was opt-in, whose watchdog applies
// the default of then: Parse reads it as LegacyStallAfter.
func TestStallRuleOffUnlessAsked(t *testing.T) {
	if d := (podenv.Rules{}).EffectiveRules().StallAfter; d != 0 {
		t.Errorf("the zero Rules' effective StallAfter = %s, want 0 (off)", d)
	}
	env := mustEnv(t, seedSettings())
	if v, ok := env[podenv.StallAfterEnv]; !ok || v != "0" {
		t.Fatalf("%s = %q (set %v), want 0", podenv.StallAfterEnv, v, ok)
	}
	if p, err := podenv.Parse(env); err != nil || p.StallAfter != 0 {
		t.Errorf("Parse: StallAfter %s, err %v; want 0 (off)", p.StallAfter, err)
	}
	s := seedSettings()
	s.StallAfter = 7 * time.Minute
	env = mustEnv(t, s)
	if env[podenv.StallAfterEnv] != "420" {
		t.Errorf("%s = %q, want 420", podenv.StallAfterEnv, env[podenv.StallAfterEnv])
	}
	if p, err := podenv.Parse(env); err != nil || p.StallAfter != 7*time.Minute {
		t.Errorf("Parse: StallAfter %s, err %v; want 7m", p.StallAfter, err)
	}
	delete(env, podenv.StallAfterEnv)
	if p, err := podenv.Parse(env); err != nil || p.StallAfter != podenv.LegacyStallAfter {
		t.Errorf("Parse of an env without it: StallAfter %s, err %v; want %s", p.StallAfter, err, podenv.LegacyStallAfter)
	}
}

// The watchdog looks for movement a tenth of StallWarnAfter apart while
// the rule is off: its STALL_WATCH is StallWarnAfter.
func TestStallWatchIsTheWarningWindow(t *testing.T) {
	m := regexp.MustCompile(`(?m)^STALL_WATCH=([0-9]+)$`).FindStringSubmatch(watchdog.Script())
	if m == nil {
		t.Fatal("no STALL_WATCH in the watchdog script")
	}
	if want := strconv.FormatInt(int64(podenv.StallWarnAfter/time.Second), 10); m[1] != want {
		t.Errorf("STALL_WATCH=%s, want podenv.StallWarnAfter, %s s", m[1], want)
	}
}
