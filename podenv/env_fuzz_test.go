package podenv_test

import (
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/bootstrap"
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
// shell code can use: numbers are plain 64-bit decimals, no value other than the host key's asks
// Runpod to substitute a secret (which would then reach the job's env), and
// the keys pass the bootstrap's own check (else the pod dies of
// authorized_key_invalid or claim_missing).
func FuzzEnvForTheWatchdog(f *testing.F) {
	const key = clientKey
	f.Add("r1", "/workspace/overbrainer", int64(1_790_021_600), int64(1800), int64(3600), "", 0, key+" me@host", key)
	f.Add("r1", "/w", int64(math.MaxInt64/int64(time.Second)), int64(math.MaxInt64/int64(time.Second)), int64(1), "/v", 5, key, key)
	f.Add("r-2", "/w/{{ RUNPOD_SECRET_other }}", int64(0), int64(0), int64(0), "", 0, key+" {{ RUNPOD_SECRET_hf_token }}", key)
	f.Add("x", "/", int64(1), int64(1), int64(1), "/v/ $(touch /tmp/x)", 1, key, key+" `id`")
	f.Add("x", "/w", int64(math.MaxInt64), int64(0), int64(0), "", 0, key, key)
	f.Add("x", "/w", int64(1), int64(1), int64(1), "", 0, skECDSAKey+" fido", hostKey)
	f.Add("x", "/w", int64(1), int64(1), int64(1), "", 0, skEd25519Key, hostKey+" 'quoted' \\ back")
	f.Fuzz(func(t *testing.T, runID, workdir string, deadline, boot, retrieve int64, volDir string, volGB int, authKey, claim string) {
		s := podenv.Settings{
			RunID: runID, Workdir: workdir,
			BootGrace: time.Duration(boot) * time.Second, RetrieveGrace: time.Duration(retrieve) * time.Second,
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
		for _, name := range numericVars {
			v, ok := env[name]
			if !ok {
				continue
			}
			// 64 bits: what bash, dash and busybox sh compute with.
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || strconv.FormatInt(n, 10) != v {
				t.Fatalf("%s=%q is not a plain non-negative decimal", name, v)
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
	script := bootstrap.Functions() + `
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
