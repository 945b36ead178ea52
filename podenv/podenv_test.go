package podenv_test

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// Real ed25519 public keys (of fixed seeds), as podenv parses keys.
const (
	clientKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcomaqb8ckRepkDHH1CfKQjIlXD1MGWnmwCZJZcsNG3"
	hostKey   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFaKCIGTAorZfRm38a9XqitAU3FLqS55pVZdcKm+u+LV"
)

// seedSettings are the settings of the seed module's tests, value for value
// but for the keys, which are real ones here.
func seedSettings() podenv.Settings {
	return podenv.Settings{
		RunID:   "r1",
		Workdir: "/workspace/overbrainer",
		Rules: podenv.Rules{
			Deadline:      time.Unix(1_790_021_600, 0),
			BootGrace:     30 * time.Minute,
			RetrieveGrace: 3600 * time.Second,
		},
		APIURL:        "https://api.runpod.io/v2",
		AuthorizedKey: clientKey + " overbrainer-r1",
		Claim:         hostKey,
	}
}

func mustEnv(t *testing.T, s podenv.Settings) map[string]string {
	t.Helper()
	env, err := s.Env()
	if err != nil {
		t.Fatalf("Env: %v", err)
	}
	return env
}

func TestEnvHoldsTheWatchdogSettingsAndNoSecret(t *testing.T) {
	env := mustEnv(t, seedSettings())
	want := map[string]string{
		"OVERBRAINER_RUN_ID":         "r1",
		"OVERBRAINER_HOST_KEY":       "{{ RUNPOD_SECRET_overbrainer_host_key_r1 }}",
		"OVERBRAINER_WORKDIR":        "/workspace/overbrainer",
		"OVERBRAINER_RUN_DIR":        "/workspace/overbrainer/r1",
		"OVERBRAINER_DEADLINE":       "1790021600",
		"OVERBRAINER_MAX_EXTENSION":  "3600",
		"OVERBRAINER_BOOT_GRACE":     "1800",
		"OVERBRAINER_RETRIEVE_GRACE": "3600",
		"OVERBRAINER_KEEP_POD":       "0",
		"OVERBRAINER_STALL_AFTER":    "0",
		"OVERBRAINER_API_URL":        "https://api.runpod.io/v2",
		"OVERBRAINER_AUTHORIZED_KEY": clientKey + " overbrainer-r1",
		"OVERBRAINER_CLAIM":          hostKey,
		"OVERBRAINER_VERSION":        podenv.BuildVersion(),
		"OVERBRAINER_CONTRACT":       strconv.Itoa(podenv.ContractVersion),
		"JUPYTER_DISABLE":            "1",
	}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("Env() mismatch (-want +got):\n%s", diff)
	}
	for _, name := range []string{"HF_TOKEN", "PUBLIC_KEY", "RUNPOD_API_KEY"} {
		if _, ok := env[name]; ok {
			t.Errorf("env holds %s", name)
		}
	}
	if len(env) > 50 {
		t.Errorf("env has %d variables", len(env))
	}
}

func TestKeptPodHasNoDeadlineAndNoVolume(t *testing.T) {
	s := seedSettings()
	s.Keep = true
	s.Deadline = time.Time{}
	env := mustEnv(t, s)
	if got := env["OVERBRAINER_KEEP_POD"]; got != "1" {
		t.Errorf("OVERBRAINER_KEEP_POD = %q, want 1", got)
	}
	for _, name := range []string{"OVERBRAINER_DEADLINE", "OVERBRAINER_VOLUME_DIR", "OVERBRAINER_VOLUME_GB"} {
		if v, ok := env[name]; ok {
			t.Errorf("%s = %q, want it absent", name, v)
		}
	}
}

func TestNetworkVolumeHandsItsMountAndSizeToTheWatchdog(t *testing.T) {
	s := seedSettings()
	s.VolumeDir = "/workspace/data"
	s.VolumeGB = 200
	env := mustEnv(t, s)
	got := map[string]string{
		"OVERBRAINER_VOLUME_DIR": env["OVERBRAINER_VOLUME_DIR"],
		"OVERBRAINER_VOLUME_GB":  env["OVERBRAINER_VOLUME_GB"],
	}
	want := map[string]string{"OVERBRAINER_VOLUME_DIR": "/workspace/data", "OVERBRAINER_VOLUME_GB": "200"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDefaultsAndNormalisation(t *testing.T) {
	s := seedSettings()
	s.APIURL = ""
	s.BootGrace = 0
	s.RetrieveGrace = 1500 * time.Millisecond
	s.Workdir = "/workspace/overbrainer/"
	env := mustEnv(t, s)
	got := map[string]string{}
	for _, k := range []string{"OVERBRAINER_API_URL", "OVERBRAINER_BOOT_GRACE", "OVERBRAINER_RETRIEVE_GRACE", "OVERBRAINER_WORKDIR", "OVERBRAINER_RUN_DIR"} {
		got[k] = env[k]
	}
	want := map[string]string{
		"OVERBRAINER_API_URL":        "https://api.runpod.io/v2",
		"OVERBRAINER_BOOT_GRACE":     "1800",
		"OVERBRAINER_RETRIEVE_GRACE": "2", // rounded up, never to zero
		"OVERBRAINER_WORKDIR":        "/workspace/overbrainer",
		"OVERBRAINER_RUN_DIR":        "/workspace/overbrainer/r1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	s.APIURL = "http://127.0.0.1:8080/v2/"
	if got := mustEnv(t, s)["OVERBRAINER_API_URL"]; got != "http://127.0.0.1:8080/v2" {
		t.Errorf("API URL = %q, want the trailing slash trimmed", got)
	}
}

func TestHostKeyPlaceholder(t *testing.T) {
	if got, want := podenv.HostKeyPlaceholder("run-7_x"), "{{ RUNPOD_SECRET_overbrainer_host_key_run-7_x }}"; got != want {
		t.Errorf("HostKeyPlaceholder = %q, want %q", got, want)
	}
	if got, want := podenv.HostKeySecretName("r1"), "overbrainer_host_key_r1"; got != want {
		t.Errorf("HostKeySecretName = %q, want %q", got, want)
	}
	if podenv.JobEnv != "/etc/overbrainer/job.env" || podenv.HostKeyEnv != "OVERBRAINER_HOST_KEY" {
		t.Errorf("JobEnv %q, HostKeyEnv %q", podenv.JobEnv, podenv.HostKeyEnv)
	}
}

// elevenDigits is a variable, so that the test still builds where int has 32
// bits.
var elevenDigits int64 = 10_000_000_000

func TestBadSettingsNameTheField(t *testing.T) {
	const privateKey = "-----BEGIN OPENSSH PRIVATE KEY-----b3BlbnNzaC1rZXktdjE-----END OPENSSH PRIVATE KEY-----"
	cases := []struct {
		name  string
		edit  func(*podenv.Settings)
		field string
	}{
		{"empty run id", func(s *podenv.Settings) { s.RunID = "" }, "RunID"},
		{"run id with slash", func(s *podenv.Settings) { s.RunID = "../r1" }, "RunID"},
		{"run id with space", func(s *podenv.Settings) { s.RunID = "r 1" }, "RunID"},
		{"run id with dot", func(s *podenv.Settings) { s.RunID = "r.1" }, "RunID"},
		{"run id too long", func(s *podenv.Settings) { s.RunID = strings.Repeat("a", 65) }, "RunID"},
		{"run id with newline", func(s *podenv.Settings) { s.RunID = "r1\n" }, "RunID"},
		{"empty workdir", func(s *podenv.Settings) { s.Workdir = "" }, "Workdir"},
		{"relative workdir", func(s *podenv.Settings) { s.Workdir = "workspace" }, "Workdir"},
		{"workdir with NUL", func(s *podenv.Settings) { s.Workdir = "/work\x00space" }, "Workdir"},
		{"negative boot grace", func(s *podenv.Settings) { s.BootGrace = -time.Second }, "BootGrace"},
		{"negative retrieve grace", func(s *podenv.Settings) { s.RetrieveGrace = -time.Minute }, "RetrieveGrace"},
		{"deadline before 1970", func(s *podenv.Settings) { s.Deadline = time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC) }, "Deadline"},
		{"deadline past the year 2286 (11 digits)", func(s *podenv.Settings) { s.Deadline = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }, "Deadline"},
		{"deadline past 32 bits", func(s *podenv.Settings) { s.Deadline = time.Unix(math.MaxInt32+1, 0) }, "Deadline"},
		{"deadline plus retrieve grace past 32 bits", func(s *podenv.Settings) { s.Deadline = time.Unix(math.MaxInt32-60, 0) }, "Deadline"},
		{"boot grace past 32 bits", func(s *podenv.Settings) { s.BootGrace = (math.MaxInt32 + 1) * time.Second }, "BootGrace"},
		{"retrieve grace past 32 bits, by a nanosecond", func(s *podenv.Settings) { s.RetrieveGrace = math.MaxInt32*time.Second + 1 }, "RetrieveGrace"},
		{"volume size of 11 digits", func(s *podenv.Settings) { s.VolumeDir = "/data"; s.VolumeGB = int(elevenDigits) }, "VolumeGB"},
		{"secret env name with a dash", func(s *podenv.Settings) { s.SecretEnv = []string{"WANDB_DSN", "MY-CONN"} }, "SecretEnv"},
		{"empty secret env name", func(s *podenv.Settings) { s.SecretEnv = []string{""} }, "SecretEnv"},
		{"secret env names in one string", func(s *podenv.Settings) { s.SecretEnv = []string{"A,B"} }, "SecretEnv"},
		{"relative volume dir", func(s *podenv.Settings) { s.VolumeDir = "data" }, "VolumeDir"},
		{"negative volume size", func(s *podenv.Settings) { s.VolumeDir = "/data"; s.VolumeGB = -1 }, "VolumeGB"},
		{"negative pod volume size", func(s *podenv.Settings) { s.PodVolumeGB = -1 }, "PodVolumeGB"},
		{"pod volume size of 11 digits", func(s *podenv.Settings) { s.PodVolumeGB = int(elevenDigits) }, "PodVolumeGB"},
		{"volume size without dir", func(s *podenv.Settings) { s.VolumeGB = 10 }, "VolumeGB"},
		{"ftp API URL", func(s *podenv.Settings) { s.APIURL = "ftp://api.runpod.io/v2" }, "APIURL"},
		{"API URL without scheme", func(s *podenv.Settings) { s.APIURL = "api.runpod.io/v2" }, "APIURL"},
		{"API URL with credentials", func(s *podenv.Settings) { s.APIURL = "https://user:pw@api.runpod.io/v2" }, "APIURL"},
		{"API URL with query", func(s *podenv.Settings) { s.APIURL = "https://api.runpod.io/v2?api_key=x" }, "APIURL"},
		{"API URL with newline", func(s *podenv.Settings) { s.APIURL = "https://api.runpod.io/v2\nx" }, "APIURL"},
		{"empty authorized key", func(s *podenv.Settings) { s.AuthorizedKey = "" }, "AuthorizedKey"},
		{"authorized key on two lines", func(s *podenv.Settings) { s.AuthorizedKey = clientKey + "\n" + hostKey }, "AuthorizedKey"},
		{"authorized key without type", func(s *podenv.Settings) { s.AuthorizedKey = strings.Fields(clientKey)[1] }, "AuthorizedKey"},
		{"authorized key with options", func(s *podenv.Settings) { s.AuthorizedKey = `command="x" ` + clientKey }, "AuthorizedKey"},
		{"authorized key not base64", func(s *podenv.Settings) { s.AuthorizedKey = "ssh-ed25519 $(reboot)" }, "AuthorizedKey"},
		{"authorized key not a key", func(s *podenv.Settings) { s.AuthorizedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 me" }, "AuthorizedKey"},
		{"private key as claim", func(s *podenv.Settings) { s.Claim = privateKey }, "Claim"},
		{"empty claim", func(s *podenv.Settings) { s.Claim = "" }, "Claim"},
		{"secret placeholder in workdir", func(s *podenv.Settings) { s.Workdir = "/w/{{ RUNPOD_SECRET_hf }}" }, "Workdir"},
		{"secret placeholder in key comment", func(s *podenv.Settings) { s.AuthorizedKey += " {{ RUNPOD_SECRET_hf }}" }, "AuthorizedKey"},
		{"secret placeholder in volume dir", func(s *podenv.Settings) { s.VolumeDir = "/{{RUNPOD_SECRET_x}}" }, "VolumeDir"},
		{"negative interval", func(s *podenv.Settings) { s.Interval = -time.Second }, "Interval"},
		{"negative lease TTL, below a second", func(s *podenv.Settings) { s.LeaseTTL = -time.Nanosecond }, "LeaseTTL"},
		{"negative snapshot lead", func(s *podenv.Settings) { s.SnapshotLead = -time.Minute }, "SnapshotLead"},
		{"negative snapshot wait", func(s *podenv.Settings) { s.SnapshotWait = -time.Minute }, "SnapshotWait"},
		{"negative probe tries", func(s *podenv.Settings) { s.ProbeTries = -1 }, "ProbeTries"},
		{"negative probe wait", func(s *podenv.Settings) { s.ProbeWait = -time.Second }, "ProbeWait"},
		{"interval past 32 bits", func(s *podenv.Settings) { s.Interval = (math.MaxInt32 + 1) * time.Second }, "Interval"},
		{"snapshot lead past 32 bits, by a nanosecond", func(s *podenv.Settings) { s.SnapshotLead = math.MaxInt32*time.Second + 1 }, "SnapshotLead"},
		{"lease TTL of 292 years", func(s *podenv.Settings) { s.LeaseTTL = math.MaxInt64 }, "LeaseTTL"},
		{"probe tries past 32 bits", func(s *podenv.Settings) { s.ProbeTries = math.MaxInt32 + 1 }, "ProbeTries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := seedSettings()
			tc.edit(&s)
			env, err := s.Env()
			if err == nil {
				t.Fatalf("Env() = %v, want an error naming %s", env, tc.field)
			}
			if env != nil {
				t.Errorf("Env() returned a map with its error")
			}
			var fe *podenv.FieldError
			if !errors.As(err, &fe) || fe.Field != "Settings."+tc.field {
				t.Errorf("error %q does not name field %s", err, tc.field)
			}
			if !strings.Contains(err.Error(), "Settings."+tc.field) {
				t.Errorf("error %q does not say Settings.%s", err, tc.field)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "b3BlbnNzaC1rZXktdjE") {
				t.Errorf("error %q quotes key material", err)
			}
		})
	}
}

func TestEveryBadFieldIsReported(t *testing.T) {
	s := podenv.Settings{RunID: "a/b", Workdir: "rel", Rules: podenv.Rules{BootGrace: -1}}
	err := s.Validate()
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *podenv.FieldError
		if errors.As(e, &fe) {
			fields = append(fields, fe.Field)
		}
	}
	want := []string{"Settings.RunID", "Settings.Workdir", "Settings.BootGrace", "Settings.AuthorizedKey", "Settings.Claim"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

// FuzzEnv checks that whatever the input, Env either refuses it or returns
// values that cannot break the pod: one line each, no NUL, a run dir under
// the workdir, and keys that sshd reads as keys of the allowed types.
func FuzzEnv(f *testing.F) {
	f.Add("r1", "/workspace/overbrainer", int64(1_790_021_600), int64(1800), "/data", 200, "https://api.runpod.io/v2", clientKey+" c", hostKey)
	f.Add("r1", "/w", int64(0), int64(0), "", 0, "", skEd25519Key, hostKey+" host")
	f.Add("r1", "/w", int64(0), int64(0), "", 0, "", skECDSAKey+" {{x}}", skECDSAKey)
	f.Add("../x", "rel", int64(-5), int64(-1), "x", -1, "ftp://x", "ssh-rsa\nAAAA", "")
	f.Add("r1", "/w", int64(0), int64(0), "", 0, "", "ssh-rsa "+strings.Fields(clientKey)[1], "ssh-ed25519 AAAAhost")
	f.Fuzz(func(t *testing.T, runID, workdir string, deadline, grace int64, volDir string, volGB int, api, authKey, claim string) {
		s := podenv.Settings{
			RunID: runID, Workdir: workdir,
			Rules: podenv.Rules{
				BootGrace: time.Duration(grace) * time.Second,
			},
			VolumeDir: volDir, VolumeGB: volGB, APIURL: api, AuthorizedKey: authKey, Claim: claim,
		}
		if deadline != 0 {
			s.Deadline = time.Unix(deadline, 0)
		}
		env, err := s.Env()
		if err != nil {
			if env != nil {
				t.Fatal("map returned with an error")
			}
			return
		}
		for k, v := range env {
			if strings.ContainsAny(v, "\n\r\x00") {
				t.Fatalf("%s = %q breaks a line", k, v)
			}
		}
		if !strings.HasPrefix(env["OVERBRAINER_RUN_DIR"], strings.TrimRight(env["OVERBRAINER_WORKDIR"], "/")+"/") {
			t.Fatalf("run dir %q outside workdir %q", env["OVERBRAINER_RUN_DIR"], env["OVERBRAINER_WORKDIR"])
		}
		if env["OVERBRAINER_BOOT_GRACE"] == "0" {
			t.Fatal("a zero boot grace would delete the pod at once")
		}
		for _, k := range []struct {
			line  string
			types []string
		}{{authKey, podenv.AuthorizedKeyTypes()}, {claim, []string{podenv.HostKeyType}}} {
			pub, _, options, rest, err := ssh.ParseAuthorizedKey([]byte(k.line))
			if err != nil || len(options) > 0 || len(rest) > 0 || !slices.Contains(k.types, pub.Type()) ||
				!strings.HasPrefix(k.line, pub.Type()+" ") {
				t.Fatalf("accepted %q, which is not one key line of %v", k.line, k.types)
			}
		}
	})
}
