package podenv

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Version is the SDK version the pod reports in OVERBRAINER_VERSION and the
// watchdog in its User-Agent.
const Version = "0.1.0"

// JobEnv is where the bootstrap writes the job's environment on the pod (mode
// 0600, without secrets); job scripts source it.
const JobEnv = "/etc/overbrainer/job.env"

// HostKeyEnv is the pod variable that carries the base64 of the pod's private
// host key. Its value in the create call is only [HostKeyPlaceholder], which
// Runpod replaces with the run's secret at boot.
const HostKeyEnv = "OVERBRAINER_HOST_KEY"

// MaxCostEnv carries the pod's cost cap in USD, for a sweeper that judges
// the pod from the API alone.
const MaxCostEnv = "OVERBRAINER_MAX_COST_USD"

// DefaultAPIURL is the Runpod REST v2 API the watchdog calls when
// Settings.APIURL is empty.
const DefaultAPIURL = "https://api.runpod.io/v2"

// Defaults for the graces when Settings leaves them zero. A zero boot grace
// would delete the pod at the watchdog's first tick, which is never meant.
const (
	DefaultBootGrace     = 30 * time.Minute
	DefaultRetrieveGrace = time.Hour
)

// Defaults of the watchdog's knobs: what the watchdog uses when Settings
// leaves a knob zero, since Env then passes nothing for it. They are the
// script's own defaults, which a test ties them to.
const (
	DefaultInterval     = time.Minute
	DefaultLeaseTTL     = 15 * time.Minute
	DefaultSnapshotLead = 15 * time.Minute
	DefaultSnapshotWait = 15 * time.Minute
	DefaultProbeTries   = 5
	DefaultProbeWait    = 10 * time.Second
	// DefaultMaxExtension is how long past the deadline a fresh lease may
	// hold the pod: after it, the watchdog deletes the pod whatever the
	// lease, so a client that keeps touching it cannot keep it for ever.
	// It is also what a sweeper waits past the deadline (plus its margin)
	// for a pod whose watchdog is gone, so it is kept short: a run that
	// needs longer says so (Settings.MaxExtension).
	DefaultMaxExtension = time.Hour
	// LegacyMaxExtension is the extension of a pod whose env states none
	// (contract 1): the default of the releases before DefaultMaxExtension
	// became an hour, which such a pod's watchdog took.
	LegacyMaxExtension = 24 * time.Hour
	// StallWarnAfter is how long a job may go without moving (see
	// Rules.StallAfter) before a following client tells it, when the
	// stall rule is off (its default): a warning, nothing deleted. It is
	// also how often the pod's watchdog looks for movement then, a tenth
	// of it (the script's STALL_WATCH, which a test ties to it).
	StallWarnAfter = 30 * time.Minute
	// LegacyStallAfter is the stall rule of a pod whose env states none:
	// the SDK released before the rule became opt-in wrote
	// OVERBRAINER_STALL_AFTER only when it was set, and its watchdog
	// applied this default, deleting a stalled job. Env always writes
	// it now (0: off), so only such a pod lacks it.
	LegacyStallAfter = 30 * time.Minute
	// MaxDeadlineAhead is the longest a run's deadline may be after its
	// start (its id's time), and LongestExtension the longest
	// MaxExtension past it: with them a sweeper knows the latest time a
	// run's host key may be needed (see HostKeySecretNeed), and takes a
	// later one for a description that is not the SDK's.
	MaxDeadlineAhead = 365 * 24 * time.Hour
	LongestExtension = 7 * 24 * time.Hour
	// DefaultKeepIdle is how long a kept pod whose job ended stays unused
	// (see Rules.KeepIdle) before its watchdog stops or deletes it: a kept
	// pod forgotten costs at most this much past its last use, and then
	// only its pod volume's storage.
	DefaultKeepIdle = time.Hour
)

// maxKnob is the largest knob the watchdog can count: under mksh its
// arithmetic and [ -lt ] tests are 32 bits wide, and a larger value wraps
// negative (a snapshot lead past it would even stop the deadline rule).
const maxKnob = math.MaxInt32

// maxVolumeGB is the largest size the watchdog reads: it takes at most 10
// digits (and weighs them as a string, so 32 bits do not bound them).
const maxVolumeGB = 9_999_999_999

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// HostKeyPlaceholder is the value of [HostKeyEnv] in the create call: Runpod
// replaces it with the secret [HostKeySecretName](runID) when the pod boots.
func HostKeyPlaceholder(runID string) string {
	return "{{ RUNPOD_SECRET_" + HostKeySecretName(runID) + " }}"
}

// Settings is what a pod's bootstrap and watchdog need to know about a run.
type Settings struct {
	// RunID names the run: it ends up in a secret name and in paths, so it
	// is limited to [A-Za-z0-9_-]{1,64}.
	RunID string
	// Workdir is the absolute directory on the pod that holds run
	// directories; the run's directory is Workdir/RunID.
	Workdir string
	// VolumeDir is the absolute mount path of the network volume, if the pod
	// has one: the watchdog's disk rule measures it with du instead of df.
	VolumeDir string
	// VolumeGB is the network volume's size when the pod is created; zero
	// when unknown. The client's .pod/volume_gb replaces it after a grow.
	VolumeGB int
	// PodVolumeGB is the pod volume's size (Runpod's volumeInGb), zero
	// for none: a kept pod's watchdog stops an idle pod that has one,
	// which keeps its data, rather than delete it (kept_idle).
	PodVolumeGB int
	// APIURL is the Runpod REST v2 base URL for the watchdog; empty means
	// DefaultAPIURL.
	APIURL string
	// AuthorizedKey is the client's public key, one authorized_keys line
	// without options, of one of the [AuthorizedKeyTypes].
	AuthorizedKey string
	// Claim is the run's public host key (of [HostKeyType]), the same on
	// every pod of the run: the bootstrap claims the run directory with it
	// and checks that the delivered host key matches it.
	Claim string
	// TakeOver says the pod takes its run directory over from a lost pod
	// of the run (a recovery on the run's network volume): its bootstrap
	// moves the control files that pod and its job left there (job.pid,
	// exit_code, cancelled, snapshot.request, progress, job.log, and the
	// lease, the cost plan, retrieved and the logs of .pod) aside into
	// .pod/earlier/<its RUNPOD_POD_ID> before its watchdog starts, so
	// that neither its watchdog nor a client takes the lost job for its
	// own. The outputs, the job's directory and command.sh stay: the job
	// resumes from them.
	TakeOver bool

	// SecretEnv names variables of the pod's environment (set by the image,
	// or by Runpod from a secret) that the job's environment must not
	// carry, besides those the bootstrap already drops by their name
	// (RUNPOD_API_KEY, *TOKEN*, *SECRET*, *KEY*, *PASSW*, *CREDENTIAL*,
	// *_PASS, *_PWD, DATABASE_URL). Each is a shell variable name.
	SecretEnv []string

	// Rules are the run's deadline, cost cap, keep mode, graces and the
	// watchdog's knobs, each zero left to its default.
	Rules
}

// FieldError reports a field or an argument that cannot be used, named as
// its caller knows it: Settings.RunID (Rules.CheckRules: the Rules field
// alone), Spec.RunID in guard, Policy.Margin in sweep; guard and sweep
// return it too. It never quotes key material.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Validate reports every invalid field, joined; nil when the settings can
// build a pod.
func (s Settings) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "Settings." + field, Reason: fmt.Sprintf(format, args...)})
	}
	for _, f := range []struct{ name, value string }{
		{"RunID", s.RunID}, {"Workdir", s.Workdir}, {"VolumeDir", s.VolumeDir},
		{"APIURL", s.APIURL}, {"AuthorizedKey", s.AuthorizedKey}, {"Claim", s.Claim},
	} {
		if strings.ContainsAny(f.value, "\n\r\x00") {
			bad(f.name, "contains a newline or NUL")
		}
		// Runpod replaces {{ RUNPOD_SECRET_<name> }} anywhere in an env
		// value at boot: only the host key may ask for a secret, or one
		// would land in a public variable and the job's environment.
		if strings.Contains(f.value, "{{") {
			bad(f.name, "contains %q, which Runpod would replace with a secret", "{{")
		}
	}
	if len(errs) > 0 {
		// The checks below would only repeat the same problems.
		return errors.Join(errs...)
	}
	if !runIDPattern.MatchString(s.RunID) {
		bad("RunID", "%q is not 1 to 64 of [A-Za-z0-9_-]", s.RunID)
	}
	switch {
	case s.Workdir == "":
		bad("Workdir", "is empty")
	case !path.IsAbs(s.Workdir):
		bad("Workdir", "%q is not an absolute path", s.Workdir)
	}
	// The rules' errors, as the fields' own: Settings holds them.
	if err := s.CheckRules(); err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			if fe := (*FieldError)(nil); errors.As(e, &fe) {
				bad(fe.Field, "%s", fe.Reason)
			} else {
				errs = append(errs, e)
			}
		}
	}
	if s.VolumeDir != "" && !path.IsAbs(s.VolumeDir) {
		bad("VolumeDir", "%q is not an absolute path", s.VolumeDir)
	}
	switch {
	case s.VolumeGB < 0:
		bad("VolumeGB", "%d is negative", s.VolumeGB)
	case int64(s.VolumeGB) > maxVolumeGB:
		bad("VolumeGB", "%d has more than the 10 digits the watchdog reads", s.VolumeGB)
	case s.VolumeGB > 0 && s.VolumeDir == "":
		bad("VolumeGB", "is set without VolumeDir")
	}
	switch {
	case s.PodVolumeGB < 0:
		bad("PodVolumeGB", "%d is negative", s.PodVolumeGB)
	case int64(s.PodVolumeGB) > maxVolumeGB:
		bad("PodVolumeGB", "%d has more than the 10 digits the watchdog reads", s.PodVolumeGB)
	}
	if s.APIURL != "" {
		u, err := url.Parse(s.APIURL)
		switch {
		case err != nil:
			bad("APIURL", "does not parse as a URL")
		case u.Scheme != "http" && u.Scheme != "https":
			bad("APIURL", "%q is not an http(s) URL", s.APIURL)
		case u.Host == "":
			bad("APIURL", "%q has no host", s.APIURL)
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			// Credentials or a query would end up in the watchdog's curl
			// command line.
			bad("APIURL", "must not carry user info, a query or a fragment")
		}
	}
	for _, name := range s.SecretEnv {
		if !envNamePattern.MatchString(name) {
			bad("SecretEnv", "%q is not a variable name", clip(name))
		}
	}
	if err := checkPublicKey(s.AuthorizedKey, authorizedKeyTypes); err != nil {
		bad("AuthorizedKey", "%v", err)
	}
	if err := checkPublicKey(s.Claim, []string{HostKeyType}); err != nil {
		bad("Claim", "%v", err)
	}
	return errors.Join(errs...)
}

// authorizedKeyTypes are the key types of [Settings.AuthorizedKey]: those
// OpenSSH's sshd accepts for a login by default (its PubkeyAcceptedAlgorithms,
// ssh-rsa standing for the rsa-sha2 signatures), which the bootstrap's own
// check (`ssh-*`, `ecdsa-*` or `sk-*`, then base64) lets through. ssh-dss is
// not among them: sshd refuses DSA keys since OpenSSH 7.0. Certificates are
// not either: an authorized_keys line needs cert-authority for them.
var authorizedKeyTypes = []string{
	ssh.KeyAlgoED25519,
	ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256,
	ssh.KeyAlgoRSA,
}

// minRSABits is the smallest RSA client key accepted. sshd itself takes
// 1024 bits (its RequiredRSASize default, OpenSSH 9.1 on), but a key of
// fewer than 3072 bits is below what NIST counts as 128-bit strength, and
// this key logs in as root.
const minRSABits = 3072

// HostKeyType is the only key type of [Settings.Claim]. The bootstrap
// installs the run's host key as sshd's ssh_host_ed25519_key, and the
// claim is that key's public half; a security key (sk-*) could not be a
// host key at all, since signing needs its hardware token.
const HostKeyType = ssh.KeyAlgoED25519

// AuthorizedKeyTypes returns the key types [Settings.AuthorizedKey] may have.
func AuthorizedKeyTypes() []string {
	return slices.Clone(authorizedKeyTypes)
}

// publicKeyLine is one authorized_keys line without options: a key type, a
// base64 blob, and an optional comment, one space apart as ssh-keygen writes
// them (the job environment keeps a variable named like a secret only in
// this shape).
var publicKeyLine = regexp.MustCompile(`^([a-z0-9@.-]+) ([A-Za-z0-9+/]+={0,2})( [^\x00-\x1f\x7f]*)?$`)

// checkPublicKey accepts one line `<type> <base64> [comment]` whose type is
// one of types and whose blob is a valid public key of that type, as sshd
// would read it from authorized_keys. It never echoes the key: a pasted
// private key must not reach an error string (the type word, checked
// against a short pattern first, is no secret).
func checkPublicKey(line string, types []string) error {
	if line == "" {
		return errors.New("is empty")
	}
	m := publicKeyLine.FindStringSubmatch(line)
	if m == nil {
		return errors.New("is not one line of `<key type> <base64> [comment]`, without options")
	}
	typ := m[1]
	if !slices.Contains(types, typ) {
		return fmt.Errorf("key type %q is not one of %s", clip(typ), strings.Join(types, ", "))
	}
	// ParseAuthorizedKey skips the type word: the blob's own type must
	// match it, as sshd checks.
	pub, _, options, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	switch {
	case err != nil || pub.Type() != typ:
		return fmt.Errorf("does not hold a valid %s public key", typ)
	case len(options) > 0 || len(rest) > 0:
		return errors.New("is not one line of `<key type> <base64> [comment]`, without options")
	}
	if typ == ssh.KeyAlgoRSA {
		rsaKey, ok := pub.(ssh.CryptoPublicKey).CryptoPublicKey().(*rsa.PublicKey)
		if !ok || rsaKey.N.BitLen() < minRSABits {
			return fmt.Errorf("is an RSA key of fewer than %d bits", minRSABits)
		}
	}
	return nil
}

// clip bounds what an error quotes of a bad value.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// wholeSeconds rounds a positive duration up to whole seconds, so that a
// positive grace never becomes zero.
func wholeSeconds(d time.Duration) string {
	return strconv.FormatInt(seconds(d), 10)
}

// seconds is d in whole seconds, rounded away from zero: no nonzero value
// becomes zero, whatever its sign. Integer arithmetic keeps it exact at any
// size.
func seconds(d time.Duration) int64 {
	n, rest := int64(d/time.Second), d%time.Second
	switch {
	case rest > 0:
		n++
	case rest < 0:
		n--
	}
	return n
}

// RunDir is the run's directory on the pod: Workdir/RunID.
func (s Settings) RunDir() string {
	return path.Join(path.Clean(s.Workdir), s.RunID)
}

// Env returns the pod's environment variables, or the validation error. The
// map holds no secret.
func (s Settings) Env() (map[string]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	api := strings.TrimRight(s.APIURL, "/")
	if api == "" {
		api = DefaultAPIURL
	}
	keep := "0"
	if s.Keep {
		keep = "1"
	}
	env := map[string]string{
		RunIDEnv:         s.RunID,
		HostKeyEnv:       HostKeyPlaceholder(s.RunID),
		WorkdirEnv:       path.Clean(s.Workdir),
		RunDirEnv:        s.RunDir(),
		KeepEnv:          keep,
		APIURLEnv:        api,
		AuthorizedKeyEnv: s.AuthorizedKey,
		ClaimEnv:         s.Claim,
		VersionEnv:       BuildVersion(),
		ContractEnv:      strconv.Itoa(ContractVersion),
		jupyterEnv:       "1",
	}
	if !s.Deadline.IsZero() {
		env[DeadlineEnv] = strconv.FormatInt(s.Deadline.Unix(), 10)
	}
	if len(s.SecretEnv) > 0 {
		env[SecretEnvEnv] = strings.Join(s.SecretEnv, ",")
	}
	if s.VolumeDir != "" {
		env[VolumeDirEnv] = path.Clean(s.VolumeDir)
	}
	if s.VolumeGB > 0 {
		env[VolumeGBEnv] = strconv.Itoa(s.VolumeGB)
	}
	if s.PodVolumeGB > 0 {
		env[PodVolumeGBEnv] = strconv.Itoa(s.PodVolumeGB)
	}
	effective := s.EffectiveRules()
	for i, k := range s.knobs() {
		switch {
		case k.always:
			env[k.env] = strconv.FormatInt(effective.knobs()[i].value(), 10)
		case k.value() > 0:
			env[k.env] = strconv.FormatInt(k.value(), 10)
		}
	}
	switch {
	case s.HardDeadline:
		env[MaxExtensionEnv] = "0"
	case s.MaxExtension == 0 && !s.Deadline.IsZero():
		// Explicit (contract 2): a reader that finds none cannot take a
		// lost value for the default.
		env[MaxExtensionEnv] = wholeSeconds(DefaultMaxExtension)
	}
	if s.Keep {
		// Explicit (contract 3), as the extension is: a reader that finds
		// none takes the pod for one of before the idle bound, unbounded.
		env[KeepIdleEnv] = strconv.FormatInt(seconds(effective.KeepIdle), 10)
	} else {
		delete(env, KeepIdleEnv)
	}
	// Always said, 0 for off: a reader that finds none takes the pod for
	// one of before the rule was opt-in (LegacyStallAfter).
	env[StallAfterEnv] = strconv.FormatInt(seconds(s.StallAfter), 10)
	if s.MaxCostUSD > 0 {
		SetMaxCost(env, s.MaxCostUSD)
	}
	if s.TakeOver {
		env[TakeOverEnv] = "1"
	}
	return env, nil
}

// SetMaxCost writes a cost cap of usd dollars into env, in the form
// [Parse] and the watchdog read. A run whose earlier pods spent part of
// its cap gives the next pod what is left this way, so that the sweeper,
// which judges a pod from its env alone, sees the same cap as its
// watchdog.
func SetMaxCost(env map[string]string, usd float64) {
	env[MaxCostEnv] = strconv.FormatFloat(usd, 'f', -1, 64)
}
