package podenv

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The names a run gives its pod and its host-key secret are how every
// client, on any machine, finds them again: they are built and read back
// here only.

// PodNamePrefix starts every guarded pod's name: the pod of run ID is
// named PodNamePrefix+ID.
const PodNamePrefix = "overbrainer-"

// hostKeySecretPrefix starts every run's host-key secret name.
const hostKeySecretPrefix = "overbrainer_host_key_"

// CheckRunID refuses a run id that could not be a pod name, a secret name
// at Runpod and a directory name: 1 to 64 of [A-Za-z0-9_-].
func CheckRunID(id string) error {
	if !runIDPattern.MatchString(id) {
		return fmt.Errorf("%q is not a run id (1 to 64 of [A-Za-z0-9_-])", id)
	}
	return nil
}

// PodName is the name of run runID's pod.
func PodName(runID string) string { return PodNamePrefix + runID }

// RunIDOfPod reads the run id back from a pod's name; ok is false for a
// name that is not a guarded pod's.
func RunIDOfPod(name string) (runID string, ok bool) {
	id, ok := strings.CutPrefix(name, PodNamePrefix)
	return id, ok && CheckRunID(id) == nil
}

// HostKeySecretName is the name of the Runpod secret that holds the run's
// host key (base64 of the OpenSSH private key).
func HostKeySecretName(runID string) string {
	return hostKeySecretPrefix + runID
}

// RunIDOfSecret reads the run id back from a secret's name; ok is false
// for a secret that is not a run's host key.
func RunIDOfSecret(name string) (runID string, ok bool) {
	id, ok := strings.CutPrefix(name, hostKeySecretPrefix)
	return id, ok && CheckRunID(id) == nil
}

// A run's host-key secret may be needed after its pod is gone: a run on
// a network volume goes on on a new pod with the same host key (its claim
// on the run directory there), however long after the lost pod went, up
// to its deadline and extension. Runpod keeps no such time, so the
// secret's description states it, and a sweeper reads it back.
const (
	secretNeedPrefix = "overbrainer: host key of run "
	secretNeedUntil  = ", needed until "
)

// HostKeySecretDescription is the description of run runID's host-key
// secret that says the run may need it, with no pod, until until.
func HostKeySecretDescription(runID string, until time.Time) string {
	return secretNeedPrefix + runID + secretNeedUntil + until.UTC().Format(time.RFC3339)
}

// HostKeySecretNeed reads back the time HostKeySecretDescription wrote in
// the description of run runID's secret. An empty description states no
// time (ok false, no error): a secret made for a run that needs it no
// longer than its pod. Any other text is an error: a reader cannot know
// how long the secret is needed, and must leave it.
func HostKeySecretNeed(runID, description string) (until time.Time, ok bool, err error) {
	if description == "" {
		return time.Time{}, false, nil
	}
	rest, found := strings.CutPrefix(description, secretNeedPrefix+runID+secretNeedUntil)
	if found {
		if until, err = time.Parse(time.RFC3339, rest); err == nil {
			return until, true, nil
		}
	}
	// %.120q: a description is a user's text of up to 64 KiB.
	return time.Time{}, false, fmt.Errorf("the description %.120q is not %q followed by a time (RFC 3339)",
		description, secretNeedPrefix+runID+secretNeedUntil)
}

// runIDTime is the layout of the time that starts NewRunID's ids.
const runIDTime = "20060102-150405"

// NewRunID makes a run id: the UTC time to the second and 4 hex digits,
// e.g. 20260301-120000-a1b2. The digits are a random start for the process
// plus the count of ids it made: 4 random digits each would make the same
// id twice about one time in four among 200 runs launched in one second
// by one program, and two runs of one id undo each other's launch.
func NewRunID(now time.Time) (string, error) {
	runIDs.once.Do(func() { _, runIDs.err = rand.Read(runIDs.start[:]) })
	if runIDs.err != nil {
		return "", runIDs.err
	}
	n := binary.BigEndian.Uint16(runIDs.start[:]) + uint16(runIDs.made.Add(1)-1)
	return now.UTC().Format(runIDTime) + "-" + hex.EncodeToString(binary.BigEndian.AppendUint16(nil, n)), nil
}

// RunIDTime is when a run of NewRunID's id started; ok is false for an id
// not exactly of NewRunID's form (one a caller chose, however like it).
func RunIDTime(id string) (t time.Time, ok bool) {
	n := len(runIDTime)
	if len(id) != n+5 || id[n] != '-' || strings.Trim(id[n+1:], "0123456789abcdef") != "" {
		return time.Time{}, false
	}
	t, err := time.Parse(runIDTime, id[:n])
	return t, err == nil
}

// runIDs numbers the run ids of this process (see NewRunID).
var runIDs struct {
	once  sync.Once
	start [2]byte
	err   error
	made  atomic.Uint32
}

// RunMarker is the run id a pod's env says it belongs to (empty when it
// says none): a guarded pod carries its run's id, so that a pod merely
// named like one is told apart.
func RunMarker(env map[string]string) string { return env[RunIDEnv] }
