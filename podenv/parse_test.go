package podenv_test

import (
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// normalized is what Parse reads back of s's env: the defaults Env fills
// in, durations rounded up to whole seconds, paths cleaned.
func normalized(s podenv.Settings) podenv.Settings {
	up := func(d time.Duration) time.Duration {
		if d <= 0 {
			return d
		}
		return (d + time.Second - 1).Truncate(time.Second)
	}
	if s.BootGrace == 0 {
		s.BootGrace = podenv.DefaultBootGrace
	}
	if s.RetrieveGrace == 0 {
		s.RetrieveGrace = podenv.DefaultRetrieveGrace
	}
	for _, d := range []*time.Duration{&s.BootGrace, &s.RetrieveGrace, &s.Interval, &s.LeaseTTL, &s.SnapshotLead,
		&s.SnapshotWait, &s.ProbeWait, &s.MaxExtension, &s.KeepIdle} {
		*d = up(*d)
	}
	switch {
	case !s.Keep:
		s.KeepIdle = 0
	case s.KeepIdle == 0 && !s.KeepUnbounded:
		s.KeepIdle = podenv.DefaultKeepIdle
	}
	if s.MaxExtension == 0 && !s.HardDeadline && !s.Deadline.IsZero() {
		s.MaxExtension = podenv.DefaultMaxExtension
	}
	s.APIURL = strings.TrimRight(s.APIURL, "/")
	if s.APIURL == "" {
		s.APIURL = podenv.DefaultAPIURL
	}
	if !s.Deadline.IsZero() {
		s.Deadline = time.Unix(s.Deadline.Unix(), 0)
	}
	s.Workdir = path.Clean(s.Workdir)
	if s.VolumeDir != "" {
		s.VolumeDir = path.Clean(s.VolumeDir)
	}
	if len(s.SecretEnv) == 0 {
		s.SecretEnv = nil
	}
	return s
}

// roundTrip checks that Parse reads back what s's env says.
func roundTrip(t *testing.T, s podenv.Settings) {
	t.Helper()
	env, err := s.Env()
	if err != nil {
		return
	}
	p, err := podenv.Parse(env)
	if err != nil {
		t.Fatalf("Parse of Env's own env: %v\n%v", err, env)
	}
	if diff := cmp.Diff(normalized(s), p.Settings); diff != "" {
		t.Fatalf("Parse(Env()) (-want +got):\n%s", diff)
	}
	if p.Contract != podenv.ContractVersion || p.Version != podenv.BuildVersion() {
		t.Fatalf("contract %d, version %q", p.Contract, p.Version)
	}
}

// Whatever Settings writes, Parse reads back equal: every field, set and
// left to its default.
func TestParseReadsBackEnv(t *testing.T) {
	full := seedSettings()
	full.Keep, full.VolumeDir, full.VolumeGB = true, "/workspace/", 40
	full.SecretEnv = []string{"WANDB_KEY", "MY_PASS"}
	full.Interval, full.LeaseTTL, full.SnapshotLead, full.SnapshotWait = 30*time.Second, time.Minute, 90*time.Second, 1500*time.Millisecond
	full.ProbeTries, full.ProbeWait, full.MaxExtension, full.MaxCostUSD = 7, 3*time.Second, 2*time.Hour, 12.5
	hard := seedSettings()
	hard.HardDeadline, hard.APIURL = true, "http://127.0.0.1:8080/v2/"
	kept := seedSettings()
	kept.Deadline, kept.Keep, kept.BootGrace, kept.RetrieveGrace = time.Time{}, true, 0, 0
	idle := kept
	idle.KeepIdle, idle.PodVolumeGB = 90*time.Minute, 20
	unbounded := kept
	unbounded.KeepUnbounded = true
	for _, s := range []podenv.Settings{seedSettings(), full, hard, kept, idle, unbounded} {
		roundTrip(t, s)
	}
}

// Parse refuses, naming the variable, what Env never writes and the
// watchdog would not read: each missing name, each garbled number, a
// contract it does not know.
func TestParseRefuses(t *testing.T) {
	base := mustEnv(t, seedSettings())
	for _, tc := range []struct {
		name, value string // value "-" removes the name
	}{
		{"OVERBRAINER_RUN_ID", "-"}, {"OVERBRAINER_WORKDIR", "-"}, {"OVERBRAINER_RUN_DIR", "/elsewhere/r1"},
		{"OVERBRAINER_BOOT_GRACE", "-"}, {"OVERBRAINER_BOOT_GRACE", "+3600"}, {"OVERBRAINER_BOOT_GRACE", " 60"},
		{"OVERBRAINER_BOOT_GRACE", "1e3"}, {"OVERBRAINER_BOOT_GRACE", "-1"}, {"OVERBRAINER_BOOT_GRACE", ""},
		{"OVERBRAINER_BOOT_GRACE", "12345678901"}, {"OVERBRAINER_BOOT_GRACE", "4294967296"},
		{"OVERBRAINER_RETRIEVE_GRACE", "0x10"}, {"OVERBRAINER_KEEP_POD", "-"}, {"OVERBRAINER_KEEP_POD", "yes"},
		{"OVERBRAINER_KEEP_POD", ""}, {"OVERBRAINER_DEADLINE", "1.5"}, {"OVERBRAINER_DEADLINE", "9999999999"},
		{"OVERBRAINER_MAX_EXTENSION", "-"}, {"OVERBRAINER_MAX_COST_USD", "+5"}, {"OVERBRAINER_MAX_COST_USD", "1e3"},
		{"OVERBRAINER_MAX_COST_USD", "NaN"}, {"OVERBRAINER_MAX_COST_USD", "-1"}, {"OVERBRAINER_CONTRACT", "99"},
		{"OVERBRAINER_CONTRACT", "0"}, {"OVERBRAINER_VERSION", "-"}, {"OVERBRAINER_CLAIM", "-"},
		{"OVERBRAINER_INTERVAL", "ten"}, {"OVERBRAINER_VOLUME_GB", "0"}, {"OVERBRAINER_POD_VOLUME_GB", "0"}, {"OVERBRAINER_API_URL", "ftp://x"},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		if tc.value == "-" {
			delete(env, tc.name)
		} else {
			env[tc.name] = tc.value
		}
		_, err := podenv.Parse(env)
		var ee *podenv.EnvError
		var fe *podenv.FieldError
		switch {
		case err == nil:
			t.Errorf("%s=%q: Parse accepted it", tc.name, tc.value)
		case errors.As(err, &ee) && ee.Name != tc.name:
			t.Errorf("%s=%q: the error names %s: %v", tc.name, tc.value, ee.Name, err)
		case !errors.As(err, &ee) && !errors.As(err, &fe):
			t.Errorf("%s=%q: %v is neither an EnvError nor a FieldError", tc.name, tc.value, err)
		}
	}
	// A pod of contract 1 said no extension when it had the default of
	// then, which Parse states.
	delete(base, "OVERBRAINER_CONTRACT")
	delete(base, "OVERBRAINER_MAX_EXTENSION")
	if p, err := podenv.Parse(base); err != nil || p.Contract != 1 || p.MaxExtension != podenv.LegacyMaxExtension {
		t.Errorf("a pod of before the contract number: %+v, %v; want contract 1 with the legacy extension", p, err)
	}
}

// FuzzParseRoundTrip: whatever Settings writes, Parse reads back equal.
func FuzzParseRoundTrip(f *testing.F) {
	z := int64(0)
	f.Add("r1", "/workspace/overbrainer", int64(1_790_021_600), int64(1800), int64(3600), true, "/v", 5, 1.25, int64(0), int64(7), false, z, z, z, z, 0)
	f.Add("x", "/", int64(0), int64(0), int64(0), false, "", 0, 0.0, int64(1), int64(math.MaxInt32), true, z, z, z, z, 0)
	f.Add("r1", "/w", int64(1_790_021_600), int64(1), int64(1), false, "", 0, 0.0, int64(1500_000_000), int64(0), false,
		int64(time.Minute), int64(1), int64(math.MaxInt32)*int64(time.Second), int64(-1), 3)
	f.Fuzz(func(t *testing.T, runID, workdir string, deadline, boot, retrieve int64, keep bool, volDir string, volGB int,
		capUSD float64, interval, ext int64, hard bool, leaseTTL, snapLead, snapWait, probeWait int64, probeTries int) {
		s := seedSettings()
		s.RunID, s.Workdir, s.Keep, s.VolumeDir, s.VolumeGB, s.MaxCostUSD, s.HardDeadline = runID, workdir, keep, volDir, volGB, capUSD, hard
		s.BootGrace, s.RetrieveGrace = time.Duration(boot)*time.Second, time.Duration(retrieve)
		s.Interval, s.MaxExtension = time.Duration(interval), time.Duration(ext)*time.Second
		s.LeaseTTL, s.SnapshotLead, s.SnapshotWait = time.Duration(leaseTTL), time.Duration(snapLead), time.Duration(snapWait)
		s.ProbeWait, s.ProbeTries = time.Duration(probeWait), probeTries
		s.Deadline = time.Time{}
		if deadline != 0 {
			s.Deadline = time.Unix(deadline, 0)
		}
		roundTrip(t, s)
	})
}

// numberFunction is the watchdog's own number function, cut from its
// script.
func numberFunction(t testing.TB) string {
	m := regexp.MustCompile(`(?ms)^number\(\) \{\n.*?^\}\n`).FindString(watchdog.Script())
	if m == "" {
		t.Fatal("no number() in the watchdog's script")
	}
	return m
}

// watchdogReads runs the watchdog's number function on each value and
// returns what it read ("-" for a refusal).
func watchdogReads(t *testing.T, sh shtest.Shell, values []string) []string {
	env := map[string]string{}
	script := numberFunction(t)
	for i, v := range values {
		env["V"+strconv.Itoa(i)] = v
		script += fmt.Sprintf("if number \"$V%d\"; then echo \"$number\"; else echo -; fi\n", i)
	}
	r := shtest.Run(t, sh, script, shtest.Opts{Env: env})
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	return strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
}

// parseReads is what Parse reads of v as the boot grace, in seconds, or
// "-" when it refuses it.
func parseReads(t testing.TB, v string) string {
	env := mustEnv(t.(*testing.T), seedSettings())
	env["OVERBRAINER_BOOT_GRACE"] = v
	p, err := podenv.Parse(env)
	if err != nil {
		return "-"
	}
	return strconv.FormatInt(int64(p.BootGrace/time.Second), 10)
}

// Whatever Parse accepts as a number, the watchdog reads, as the same
// number, under every shell.
func TestParseNumbersAsTheWatchdog(t *testing.T) {
	values := []string{"0", "1", "0001800", "1800", "+3600", "-1", " 60", "60 ", "1e3", "0x10", "", "3600.0",
		"2147483647", "2147483648", "9999999999", "00000000000000001", "12345678901", "١٢", "60\n"}
	var accepted []string
	for _, v := range values {
		if parseReads(t, v) != "-" {
			accepted = append(accepted, v)
		}
	}
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		got := watchdogReads(t, sh, accepted)
		for i, v := range accepted {
			if i >= len(got) || got[i] != parseReads(t, v) {
				t.Errorf("%q: Parse reads %s, the watchdog %v", v, parseReads(t, v), got)
			}
		}
	})
}

// FuzzParseNumbersAsTheWatchdog: a value Parse accepts as a number, dash
// runs the watchdog's number function on, and reads the same.
func FuzzParseNumbersAsTheWatchdog(f *testing.F) {
	for _, v := range []string{"1800", "+3600", "007", "2147483647", " 1"} {
		f.Add(v)
	}
	dash, err := exec.LookPath("dash")
	if err != nil {
		f.Skip("no dash")
	}
	fn := numberFunction(f)
	f.Fuzz(func(t *testing.T, v string) {
		want := parseReads(t, v)
		if want == "-" {
			return
		}
		cmd := exec.Command(dash, "-c", fn+`number "$V" && echo "$number"`)
		cmd.Env = []string{"V=" + v}
		out, err := cmd.Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Fatalf("%q: Parse reads %s, the watchdog %q (%v)", v, want, got, err)
		}
	})
}

// A cap lowered by SetMaxCost (what is left of a run's cap for its next
// pod) reads back as written, however many digits the remainder has.
func TestSetMaxCostReadsBack(t *testing.T) {
	s := seedSettings()
	s.MaxCostUSD = 10
	env, err := s.Env()
	if err != nil {
		t.Fatal(err)
	}
	for _, usd := range []float64{0.005, 1.0 / 3, 9.999999999999, 1e-9, 12} {
		podenv.SetMaxCost(env, usd)
		p, err := podenv.Parse(env)
		if err != nil {
			t.Fatalf("SetMaxCost(%v): %v", usd, err)
		}
		if p.MaxCostUSD != usd {
			t.Errorf("SetMaxCost(%v) reads back %v", usd, p.MaxCostUSD)
		}
	}
}
