package podenv_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// knobVars are the variables of the watchdog's knobs.
var knobVars = []string{
	"OVERBRAINER_INTERVAL", "OVERBRAINER_LEASE_TTL", "OVERBRAINER_SNAPSHOT_LEAD",
	"OVERBRAINER_SNAPSHOT_WAIT", "OVERBRAINER_PROBE_TRIES", "OVERBRAINER_PROBE_WAIT",
	"OVERBRAINER_MAX_EXTENSION", "OVERBRAINER_STALL_AFTER", "OVERBRAINER_MIN_GPU_UTIL",
}

// Set knobs reach the env in whole seconds, rounded up; unset ones do not
// appear, so the env of settings without knobs is what it always was.
func TestKnobsReachTheEnv(t *testing.T) {
	env := mustEnv(t, seedSettings())
	for _, name := range knobVars {
		// The extension is said whenever there is a deadline (contract 2),
		// the stall rule always (0: off).
		if v, ok := env[name]; ok && name != "OVERBRAINER_MAX_EXTENSION" && name != "OVERBRAINER_STALL_AFTER" {
			t.Errorf("%s = %q without its knob set", name, v)
		}
	}
	s := seedSettings()
	s.Interval = 90 * time.Second
	s.LeaseTTL = 1500 * time.Millisecond
	s.SnapshotLead = time.Nanosecond
	s.SnapshotWait = math.MaxInt32 * time.Second
	s.ProbeTries = 3
	s.ProbeWait = podenv.DefaultProbeWait
	s.MaxExtension = 90 * time.Minute
	s.StallAfter = 10 * time.Minute
	s.MinGPUUtil = 40
	env = mustEnv(t, s)
	got := map[string]string{}
	for _, name := range knobVars {
		got[name] = env[name]
	}
	want := map[string]string{
		"OVERBRAINER_INTERVAL":      "90",
		"OVERBRAINER_LEASE_TTL":     "2",
		"OVERBRAINER_SNAPSHOT_LEAD": "1",
		"OVERBRAINER_SNAPSHOT_WAIT": "2147483647",
		"OVERBRAINER_PROBE_TRIES":   "3",
		"OVERBRAINER_PROBE_WAIT":    "10", // the default, but asked for
		"OVERBRAINER_MAX_EXTENSION": "5400",
		"OVERBRAINER_STALL_AFTER":   "600",
		"OVERBRAINER_MIN_GPU_UTIL":  "40",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// HardDeadline passes an extension of zero, which a knob cannot ask for;
// the cost cap is passed as written, for a sweeper off the pod.
func TestHardDeadlineAndCostReachTheEnv(t *testing.T) {
	s := seedSettings()
	s.HardDeadline = true
	s.MaxCostUSD = 12.5
	env := mustEnv(t, s)
	if env["OVERBRAINER_MAX_EXTENSION"] != "0" || env["OVERBRAINER_MAX_COST_USD"] != "12.5" {
		t.Errorf("env %v: want OVERBRAINER_MAX_EXTENSION=0, OVERBRAINER_MAX_COST_USD=12.5", env)
	}
	if _, ok := mustEnv(t, seedSettings())["OVERBRAINER_MAX_COST_USD"]; ok {
		t.Error("OVERBRAINER_MAX_COST_USD set without a cap")
	}
	for _, c := range []struct {
		name  string
		edit  func(*podenv.Settings)
		field string
	}{
		{"hard with extension", func(s *podenv.Settings) { s.HardDeadline, s.MaxExtension = true, time.Hour }, "MaxExtension"},
		{"negative extension", func(s *podenv.Settings) { s.MaxExtension = -time.Second }, "MaxExtension"},
		{"huge extension", func(s *podenv.Settings) { s.MaxExtension = (math.MaxInt32 + 1) * time.Second }, "MaxExtension"},
		{"negative cost", func(s *podenv.Settings) { s.MaxCostUSD = -1 }, "MaxCostUSD"},
		{"NaN cost", func(s *podenv.Settings) { s.MaxCostUSD = math.NaN() }, "MaxCostUSD"},
		{"huge cost", func(s *podenv.Settings) { s.MaxCostUSD = 1e10 }, "MaxCostUSD"},
		{"GPU over 100%", func(s *podenv.Settings) { s.MinGPUUtil = 101 }, "MinGPUUtil"},
		{"negative GPU", func(s *podenv.Settings) { s.MinGPUUtil = -1 }, "MinGPUUtil"},
		{"negative stall", func(s *podenv.Settings) { s.StallAfter = -time.Minute }, "StallAfter"},
	} {
		s := seedSettings()
		c.edit(&s)
		var fe *podenv.FieldError
		if err := s.Validate(); !errors.As(err, &fe) || fe.Field != "Settings."+c.field {
			t.Errorf("%s: Validate() = %v, want a FieldError on %s", c.name, err, c.field)
		}
	}
}

// scriptDefaults returns the DEFAULT of every `setting NAME VALUE DEFAULT`
// in the watchdog script, by NAME.
func scriptDefaults(t *testing.T) map[string]string {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(watchdog.Script()), "watchdog.sh")
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 && c.Args[0].Lit() == "setting" {
			if len(c.Args) != 4 || c.Args[1].Lit() == "" || c.Args[3].Lit() == "" {
				t.Fatalf("a setting call this test cannot read, at %s", c.Pos())
			}
			defaults[c.Args[1].Lit()] = c.Args[3].Lit()
		}
		return true
	})
	return defaults
}

// notInSettings are the script's settings that podenv does not set.
var notInSettings = []string{"OVERBRAINER_CURL_TIMEOUT"}

// Settings whose knobs and graces are the Default constants pass the
// script's own default for every setting it reads: the constants are the
// script's, and each knob reaches the variable the script reads.
func TestDefaultsAreTheWatchdogs(t *testing.T) {
	defaults := scriptDefaults(t)
	if defaults["OVERBRAINER_LEASE_TTL"] == "" || defaults["OVERBRAINER_BOOT_GRACE"] == "" {
		t.Fatalf("the script's settings %v lack OVERBRAINER_LEASE_TTL or OVERBRAINER_BOOT_GRACE", defaults)
	}
	s := seedSettings()
	s.BootGrace, s.RetrieveGrace = podenv.DefaultBootGrace, podenv.DefaultRetrieveGrace
	s.Interval, s.LeaseTTL = podenv.DefaultInterval, podenv.DefaultLeaseTTL
	s.SnapshotLead, s.SnapshotWait = podenv.DefaultSnapshotLead, podenv.DefaultSnapshotWait
	s.ProbeTries, s.ProbeWait = podenv.DefaultProbeTries, podenv.DefaultProbeWait
	s.MaxExtension = podenv.DefaultMaxExtension
	// The stall rule's default is off, which Env says as 0.
	// The idle bound is a kept pod's only.
	s.Keep, s.KeepIdle = true, podenv.DefaultKeepIdle
	env := mustEnv(t, s)
	for name, def := range defaults {
		v, ok := env[name]
		switch {
		case !ok && def == "0":
			// Zero turns the rule off (MinGPUUtil): Env leaves it out.
		case slices.Contains(notInSettings, name):
			if ok {
				t.Errorf("%s = %q, which podenv is not meant to set", name, v)
			}
		case !ok:
			t.Errorf("the script reads %s, which no Settings field sets", name)
		case v != def:
			t.Errorf("%s = %q from the Default constant, the script's default is %s", name, v, def)
		}
	}
	for _, name := range knobVars {
		if _, ok := defaults[name]; !ok {
			t.Errorf("Env sets %s, which the script does not read", name)
		}
	}
}

// The real watchdog, under every shell, reads the knobs of an env as set:
// none is a bad setting (which would fall back to its default), the start
// line shows the interval and the lease TTL, and the probe tries
// ProbeTries times, ProbeWait apart.
func TestTheWatchdogReadsTheKnobs(t *testing.T) {
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		api := shtest.NewFakeAPI(t)
		api.SetDefault("GET", "/pods/pod-1", shtest.Answer{Status: 503})
		s := seedSettings()
		s.Deadline = time.Time{} // no rule falls due while the test looks
		s.APIURL = api.URL()
		s.Interval, s.LeaseTTL = 7*time.Second, 11*time.Second
		s.SnapshotLead, s.SnapshotWait = 13*time.Second, 17*time.Second
		s.ProbeTries, s.ProbeWait = 2, time.Second
		env := mustEnv(t, s)
		dir := t.TempDir()
		env["OVERBRAINER_RUN_DIR"] = dir
		env["RUNPOD_POD_ID"], env["RUNPOD_API_KEY"] = "pod-1", "key"
		shtest.Start(t, sh, watchdog.Script(), shtest.Opts{Dir: dir, Env: env})

		verdict := shtest.WaitFile(t, filepath.Join(dir, watchdog.VerdictFile), time.Minute)
		if v := watchdog.ParseVerdict(verdict); !v.Failed || v.Reason != "http_503" {
			t.Errorf("verdict %q, want failed http_503", verdict)
		}
		gets := api.Requests()
		if len(gets) != s.ProbeTries {
			t.Fatalf("%d probes, want ProbeTries (%d): %+v", len(gets), s.ProbeTries, gets)
		}
		// The default wait is 10 s: a gap near it is the knob not read.
		if gap := gets[1].Time.Sub(gets[0].Time); gap < 900*time.Millisecond || gap > 8*time.Second {
			t.Errorf("probes %s apart, want ProbeWait (%s)", gap, s.ProbeWait)
		}
		if ev := startLine(t, dir, env); ev.Fields["interval"] != "7" || ev.Fields["lease_ttl"] != "11" {
			t.Errorf("start line %v, want interval=7 lease_ttl=11", ev)
		}
	})
}

// startLine reads the watchdog's log in dir and returns its start line,
// failing the test when there is none and for every bad setting it logged
// (a value of env it could not read).
func startLine(t *testing.T, dir string, env map[string]string) watchdog.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, watchdog.Log))
	if err != nil {
		t.Fatal(err)
	}
	events, err := watchdog.ParseLog(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	var start *watchdog.Event
	for i, ev := range events {
		switch ev.Kind {
		case watchdog.KindBadSetting:
			t.Errorf("the watchdog refused %s = %q", ev.Fields["name"], env[ev.Fields["name"]])
		case watchdog.KindStart:
			if start == nil {
				start = &events[i]
			}
		}
	}
	if start == nil {
		t.Fatalf("no start line in the log:\n%s", b)
	}
	return *start
}
