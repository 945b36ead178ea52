package jobctl

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

//go:embed start.sh
var startScript string

//go:embed watch.sh
var watchScript string

//go:embed session.sh
var sessionScript string

// Files of the run directory that the job scripts use besides the watchdog
// package's: the job's command, its uploaded directory, its outputs (what
// the client downloads) and its log.
const (
	CommandFile = "command.sh"
	JobDir      = "job"
	OutputsDir  = "outputs"
	JobLog      = "job.log"
)

// Exit statuses of the start command.
const (
	StartOK             = 0
	StartAlreadyStarted = 3
	StartNoLostJob      = 4 // RestartCommand: the run directory holds no lost job
)

// StartCommand is the command line that starts the job of the run directory
// runDir (its command.sh must exist), with jobEnv sourced. Its standard input
// must be JobInput's. It prints the job's process group.
func StartCommand(runDir, jobEnv string) string {
	return podssh.Command(startProgram(), runDir, jobEnv)
}

// RestartCommand is StartCommand for a job lost with an earlier container
// of the pod (State.Lost): it starts the job again in its run directory,
// from the outputs it left there, and fails with StartNoLostJob when the
// run directory holds no such job (one that ended otherwise, or whose
// results were collected).
func RestartCommand(runDir, jobEnv string) string {
	return podssh.Command(startProgram(), runDir, jobEnv, "restart")
}

// SessionCommand is the command line of a user's session on the pod (an
// interactive shell for an empty command): in the run directory runDir,
// with jobEnv sourced and the job's variables set, never its secrets.
func SessionCommand(runDir, jobEnv, command string) string {
	if command == "" {
		return podssh.Command(sessionScript, runDir, jobEnv)
	}
	return podssh.Command(sessionScript, runDir, jobEnv, command)
}

// startProgram is start.sh as the pod runs it: after a line that hands it
// the watchdog's wake-up function for the job's top shell, which wakes the
// watchdog once the job ended.
func startProgram() string {
	return "wake_function=" + podssh.Quote(watchdog.WakeFunction()) + "\n" + startScript
}

// MaxJobInput bounds what JobInput carries: it reaches the job through one
// environment variable, and Linux takes at most 128 KiB in one.
const MaxJobInput = 100 << 10

// JobInput is the start command's standard input: variables for the job's
// environment, and for nothing else on the pod (no command line, no file,
// not the pod's env). defaults apply where the pod's job.env leaves a
// name unset or empty; secrets win over job.env. Names must pass
// CheckEnvName, and no value may hold a NUL byte. Errors name the
// variable, never its value.
func JobInput(defaults, secrets map[string]string) (io.Reader, error) {
	var b strings.Builder
	for _, set := range []struct {
		vars map[string]string
		line string
	}{
		// The job's top shell evaluates these after it sourced job.env;
		// each value is single-quoted (Quote), so it stays a word.
		{defaults, "[ -n \"${%[1]s-}\" ] || %[1]s=%[2]s\nexport %[1]s\n"},
		{secrets, "%[1]s=%[2]s\nexport %[1]s\n"},
	} {
		for _, name := range slices.Sorted(maps.Keys(set.vars)) {
			if err := CheckEnvName(name); err != nil {
				return nil, err
			}
			if strings.Contains(set.vars[name], "\x00") {
				return nil, fmt.Errorf("jobctl: the value of %s contains a NUL byte", name)
			}
			fmt.Fprintf(&b, set.line, name, podssh.Quote(set.vars[name]))
		}
	}
	if b.Len() > MaxJobInput {
		return nil, fmt.Errorf("jobctl: the job's variables take %d bytes, more than %d", b.Len(), MaxJobInput)
	}
	return strings.NewReader(b.String()), nil
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedEnv are names a job's variable may not take: the shell's own, or
// ones the job's start relies on.
var reservedEnv = map[string]bool{
	"IFS": true, "PATH": true, "HOME": true, "PWD": true, "OLDPWD": true, "ENV": true, "SHELL": true,
	"CDPATH": true, "PS1": true, "PS2": true, "PS4": true, "OPTIND": true, "OPTARG": true,
	"LINENO": true, "PPID": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true,
}

// CheckEnvName refuses a name that cannot be a variable of the job's
// environment: not [A-Za-z_][A-Za-z0-9_]*, one of the shell's own (PATH,
// IFS, HOME...), or starting with OVERBRAINER_ or RUNPOD_ (the run's and
// Runpod's).
func CheckEnvName(name string) error {
	switch {
	case !envNamePattern.MatchString(name):
		return fmt.Errorf("jobctl: %q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", name)
	case reservedEnv[name]:
		return fmt.Errorf("jobctl: %s is the shell's own variable", name)
	case strings.HasPrefix(name, "OVERBRAINER_"), strings.HasPrefix(name, "RUNPOD_"):
		return fmt.Errorf("jobctl: %s: names starting with OVERBRAINER_ or RUNPOD_ are the run's and Runpod's", name)
	}
	return nil
}

// State is what one poll saw on the pod. guard.JobState is the same
// struct, converted at guard's API (the compiler keeps the two in step),
// and documents the fields.
type State struct {
	PID          int
	ExitCode     int
	Alive        bool
	Cancelled    bool
	CancelReason string
	LogSize      int64
	PodNow       int64
	// Request passes on the first 64 bytes of snapshot.request but
	// newlines, others than [A-Za-z0-9_-] as _, and _ for an empty one.
	Request watchdog.SnapshotReason
	DuKiB   int64
	Verdict watchdog.Verdict
	// DeleteReason is as the watchdog's log says since it last started.
	DeleteReason watchdog.DeleteReason
	// Delete is what the log's tail says of the watchdog's deletes.
	Delete watchdog.DeleteState
	// Progress is the last line of the job's progress file
	// (watchdog.Progress, the job's OVERBRAINER_PROGRESS), empty while
	// the job wrote none; the job writes it, so it is passed on with its
	// control characters dropped, at most 256 bytes.
	Progress string
	// Moved is the pod's time of the watchdog's last look that saw the
	// job move (watchdog.Moved), 0 while there is none.
	Moved int64
}

// Started says the job started (job.pid exists).
func (s State) Started() bool { return s.PID > 0 }

// Ended says the job is over: it wrote its exit code, was cancelled (or
// lost), or its process group is gone (killed before it could write
// anything).
func (s State) Ended() bool {
	return s.ExitCode >= 0 || s.Cancelled || (s.Started() && !s.Alive)
}

// Lost says the job died with an earlier container of the pod before it
// could write its exit code: Runpod restarted the container, the bootstrap
// found the job's job.pid on the volume and marked it cancelled with
// watchdog.CancelContainerRestarted. Its results so far are on the volume.
func (s State) Lost() bool {
	return s.Cancelled && s.CancelReason == watchdog.CancelContainerRestarted && s.ExitCode < 0
}

// reasonWord is what watch.sh passes on of a delete or cancel reason.
var reasonWord = regexp.MustCompile(`^[a-z_]{1,64}$`)

// deleteFailed is watch.sh's FAILED: TIME@CODES.
var deleteFailed = regexp.MustCompile(`^([0-9]{1,12})@([A-Za-z0-9_:,/]{0,240})$`)

// parseHeader reads watch.sh's header and verdict lines; n is the number of
// log bytes that follow.
func parseHeader(header, verdict string) (st State, n int, err error) {
	f := strings.Fields(header)
	if len(f) != 14 || f[0] != "ob1" {
		return State{}, 0, fmt.Errorf("jobctl: bad watch header %.120q", header)
	}
	num := func(s string, none int64) (int64, error) {
		if s == "-" {
			return none, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	var errs []error
	pid, err := num(f[1], 0)
	errs = append(errs, err)
	code, err := num(f[2], -1)
	errs = append(errs, err)
	st.PID, st.ExitCode = int(pid), int(code)
	st.Alive = f[3] == "1"
	switch f[4] {
	case "0":
	case "1":
		st.Cancelled = true
	default:
		if !reasonWord.MatchString(f[4]) {
			errs = append(errs, fmt.Errorf("cancel reason %.70q", f[4]))
		}
		st.Cancelled, st.CancelReason = true, f[4]
	}
	st.LogSize, err = num(f[5], 0)
	errs = append(errs, err)
	st.PodNow, err = num(f[6], 0)
	errs = append(errs, err)
	if f[7] != "-" {
		st.Request = watchdog.SnapshotReason(f[7])
	}
	st.DuKiB, err = num(f[8], -1)
	errs = append(errs, err)
	if f[9] != "-" {
		if !reasonWord.MatchString(f[9]) {
			errs = append(errs, fmt.Errorf("delete reason %.70q", f[9]))
		}
		st.DeleteReason = watchdog.DeleteReason(f[9])
	}
	errs = append(errs, parseDelete(&st, f[10], f[11]))
	st.Moved, err = num(f[12], 0)
	errs = append(errs, err)
	n64, err := strconv.ParseInt(f[13], 10, 32)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil || n64 < 0 {
		return State{}, 0, fmt.Errorf("jobctl: bad watch header %.120q: %v", header, err)
	}
	st.Verdict = watchdog.ParseVerdict(verdict)
	return st, int(n64), nil
}

// parseDelete reads watch.sh's RIGHT and FAILED into st.
func parseDelete(st *State, right, failed string) error {
	if right != "-" {
		if !reasonWord.MatchString(right) {
			return fmt.Errorf("delete right %.70q", right)
		}
		st.Delete.Right = watchdog.DeleteRight(right)
	}
	if failed == "-" {
		return nil
	}
	m := deleteFailed.FindStringSubmatch(failed)
	if m == nil {
		return fmt.Errorf("delete failure %.70q", failed)
	}
	st.Delete.FailedAt, _ = strconv.ParseInt(m[1], 10, 64)
	st.Delete.Codes = m[2]
	return nil
}

// LastLine is the last non-empty line of a command's output: what the
// command printed after anything a login shell's rc file printed first.
func LastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// RunFile is the absolute path on the pod of a run directory's file.
func RunFile(runDir, name string) string { return path.Join(runDir, name) }

// printable drops the control characters of a line the job wrote.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimRight(s, "\n"))
}
