package podenv_test

import (
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"math"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// secretPlaceholder is what Runpod replaces with a secret's value when the
// pod boots, wherever it appears in an env value.
var secretPlaceholder = regexp.MustCompile(`\{\{\s*RUNPOD_SECRET_`)

// numericVars are read by the watchdog as numbers, in $((...)) arithmetic
// and [ -ge ] tests: anything but plain decimal digits breaks it, and in
// bash and ksh arithmetic a crafted value is even code.
var numericVars = []string{
	"OVERBRAINER_BOOT_GRACE", "OVERBRAINER_RETRIEVE_GRACE",
	"OVERBRAINER_DEADLINE", "OVERBRAINER_VOLUME_GB", "OVERBRAINER_KEEP_POD",
}

// FuzzEnvForTheWatchdog checks that whatever Settings.Env accepts, the pod's
// shell code can use: numbers are plain 64-bit decimals (a knob, present
// only when set, at most 2^31-1 for mksh), no value other than the host
// key's asks Runpod to substitute a secret (which would then reach the
// job's env), and the keys pass the bootstrap's own check (else the pod dies
// of authorized_key_invalid or claim_missing).
func FuzzEnvForTheWatchdog(f *testing.F) {
	const key = clientKey
	const sec = int64(time.Second)
	z := int64(0) // a knob left to the watchdog
	f.Add("r1", "/workspace/overbrainer", int64(1_790_021_600), int64(1800), int64(3600), "", 0, key+" me@host", key, z, z, z, z, z, 0)
	f.Add("r1", "/w", int64(math.MaxInt64/int64(time.Second)), int64(math.MaxInt64/int64(time.Second)), int64(1), "/v", 5, key, key, z, z, z, z, z, 0)
	f.Add("r-2", "/w/{{ RUNPOD_SECRET_other }}", int64(0), int64(0), int64(0), "", 0, key+" {{ RUNPOD_SECRET_hf_token }}", key, z, z, z, z, z, 0)
	f.Add("x", "/", int64(1), int64(1), int64(1), "/v/ $(touch /tmp/x)", 1, key, key+" `id`", z, z, z, z, z, 0)
	f.Add("x", "/w", int64(math.MaxInt64), int64(0), int64(0), "", 0, key, key, z, z, z, z, z, 0)
	f.Add("x", "/w", int64(1), int64(1), int64(1), "", 0, skECDSAKey+" fido", hostKey, z, z, z, z, z, 0)
	f.Add("x", "/w", int64(1), int64(1), int64(1), "", 0, skEd25519Key, hostKey+" 'quoted' \\ back", z, z, z, z, z, 0)
	// The knobs, in nanoseconds: at the 32-bit edge, a nanosecond past it,
	// below a second, negative, and the largest Duration.
	f.Add("r1", "/w", int64(0), int64(0), int64(0), "", 0, key, key,
		60*sec, math.MaxInt32*sec, math.MaxInt32*sec+1, int64(1), int64(-1), math.MaxInt32)
	f.Add("r1", "/w", int64(0), int64(0), int64(0), "", 0, key, key,
		int64(math.MaxInt64), int64(-sec), int64(1500_000_000), int64(0), int64(sec), math.MaxInt32+1)
	f.Fuzz(func(t *testing.T, runID, workdir string, deadline, boot, retrieve int64, volDir string, volGB int, authKey, claim string,
		interval, leaseTTL, snapLead, snapWait, probeWait int64, probeTries int) {
		s := podenv.Settings{
			RunID: runID, Workdir: workdir,
			Rules: podenv.Rules{
				BootGrace: time.Duration(boot) * time.Second, RetrieveGrace: time.Duration(retrieve) * time.Second,
				Interval: time.Duration(interval), LeaseTTL: time.Duration(leaseTTL),
				SnapshotLead: time.Duration(snapLead), SnapshotWait: time.Duration(snapWait),
				ProbeTries: probeTries, ProbeWait: time.Duration(probeWait),
			},
			VolumeDir: volDir, VolumeGB: volGB, APIURL: "http://127.0.0.1:1/v2",
			AuthorizedKey: authKey, Claim: claim,
		}
		if deadline != 0 {
			s.Deadline = time.Unix(deadline, 0)
		}
		env, err := s.Env()
		if err != nil {
			return
		}
		for _, name := range append(slices.Clone(numericVars), knobVars...) {
			v, ok := env[name]
			if !ok {
				continue
			}
			// 64 bits: what bash, dash and busybox sh compute with.
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || strconv.FormatInt(n, 10) != v {
				t.Fatalf("%s=%q is not a plain non-negative decimal", name, v)
			}
			// A knob is set or absent (the stall rule's 0 is off, said
			// always), and never wraps in mksh's 32 bits.
			if slices.Contains(knobVars, name) && ((n == 0 && name != podenv.StallAfterEnv) || n > math.MaxInt32) {
				t.Fatalf("%s=%q is not a knob of 1 to 2^31-1", name, v)
			}
		}
		for i, d := range []time.Duration{s.Interval, s.LeaseTTL, s.SnapshotLead, s.SnapshotWait, time.Duration(s.ProbeTries), s.ProbeWait} {
			if _, ok := env[knobVars[i]]; ok != (d != 0) {
				t.Fatalf("%s present %v with its knob %d", knobVars[i], ok, d)
			}
		}
		for k, v := range env {
			if k != podenv.HostKeyEnv && secretPlaceholder.MatchString(v) {
				t.Fatalf("%s=%q makes Runpod substitute a secret into a public variable", k, v)
			}
		}
		checkKeysInShell(t, env["OVERBRAINER_AUTHORIZED_KEY"], env["OVERBRAINER_CLAIM"])
	})
}

// checkKeysInShell runs the bootstrap's public_key_line on both keys under
// dash (the strictest common shell), reading them from the environment.
func checkKeysInShell(t *testing.T, authKey, claim string) {
	t.Helper()
	dash, err := exec.LookPath("dash")
	if err != nil {
		return // FuzzEnv covers the Go side; the shells are tested in bootstrap.
	}
	script := shtest.BootstrapFunctions(t) + `
public_key_line "$A" || { echo "authorized key refused"; exit 1; }
public_key_line "$C" || { echo "claim refused"; exit 1; }
`
	cmd := exec.Command(dash, "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "A=" + authKey, "C=" + claim}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("podenv accepted keys the bootstrap refuses: %s (%v)\nauthorized %q\nclaim %q",
			strings.TrimSpace(string(out)), err, authKey, claim)
	}
}
