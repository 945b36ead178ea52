package watchdog

import "strings"

// Verdict is what the watchdog found when it first tried the pod's own API
// key on the pod: the line it writes in VerdictFile before its loop starts,
// `ready`, `failed <reason>` (the probe failed) or `failed bootstrap:
// <reason>` (the bootstrap failed before it). After a failure the watchdog
// deletes the pod. The zero Verdict is no verdict yet: the file is missing
// or empty.
type Verdict struct {
	// Ready says the pod's key read the pod: the watchdog guards it.
	Ready bool
	// Failed says the pod cannot be guarded: the watchdog deletes it.
	Failed bool
	// Bootstrap says the failure is the bootstrap's, not the probe's.
	Bootstrap bool
	// Reason is why it failed: for the probe missing_key, no_curl,
	// unreachable or http_<status>; for the bootstrap the first line of
	// BootstrapFailed (one of package bootstrap's reasons), or unknown.
	Reason string
	// Other is a line of none of these shapes, as read (a newer
	// watchdog's, or another writer's: the job can write the file too).
	// Neither Ready nor Failed is set then.
	Other string
}

// ParseVerdict reads the verdict line of VerdictFile. Only its first line
// counts, and surrounding white space (its newline) does not, so the file's
// whole content may be passed. An empty line is no verdict yet.
func ParseVerdict(line string) Verdict {
	line, _, _ = strings.Cut(line, "\n")
	line = strings.TrimSpace(line)
	switch line {
	case "":
		return Verdict{}
	case "ready":
		return Verdict{Ready: true}
	case "failed":
		return Verdict{Failed: true}
	}
	rest, ok := strings.CutPrefix(line, "failed ")
	if !ok {
		return Verdict{Other: line}
	}
	rest = strings.TrimSpace(rest)
	if why, ok := strings.CutPrefix(rest, "bootstrap:"); ok {
		return Verdict{Failed: true, Bootstrap: true, Reason: strings.TrimSpace(why)}
	}
	return Verdict{Failed: true, Reason: rest}
}

// String is the line the watchdog writes for v (empty for no verdict).
// ParseVerdict reads it back as v, for every v it returns.
func (v Verdict) String() string {
	switch {
	case v.Ready:
		return "ready"
	case v.Failed && v.Bootstrap:
		return "failed bootstrap: " + v.Reason
	case v.Failed && v.Reason == "":
		return "failed"
	case v.Failed:
		return "failed " + v.Reason
	}
	return v.Other
}
