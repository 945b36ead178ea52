package jobctl

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

//go:embed start.sh
var startScript string

//go:embed poll.sh
var pollScript string

//go:embed put.sh
var putScript string

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
)

// StartCommand is the command line that starts the job of the run directory
// runDir (its command.sh must exist), with jobEnv sourced. Its standard input
// must be StartInput. It prints the job's process group.
func StartCommand(runDir, jobEnv string) string {
	return podssh.Command(startScript, runDir, jobEnv)
}

// StartInput is the start command's standard input: the HF token (empty for
// none) on one line. A token with a newline is refused, since only its first
// line would arrive.
func StartInput(hfToken string) (io.Reader, error) {
	if strings.ContainsAny(hfToken, "\r\n\x00") {
		return nil, errors.New("jobctl: the HF token contains a newline or NUL")
	}
	return strings.NewReader(hfToken + "\n"), nil
}

// PutCommand is the command line that atomically replaces the file at the
// absolute path file with its standard input.
func PutCommand(file string) string {
	return podssh.Command(putScript, file)
}

// PollCommand is the command line of one look at the run: see State. With
// touchLease it first renews the lease. It returns at most max bytes of the
// job's log from offset on.
func PollCommand(runDir string, offset int64, touchLease bool, max int) string {
	touch := "0"
	if touchLease {
		touch = "1"
	}
	return podssh.Command(watchdog.GroupSignal()+pollScript, runDir,
		strconv.FormatInt(offset, 10), touch, strconv.Itoa(max))
}

// State is what one poll saw on the pod.
type State struct {
	// PID is the job's process group, 0 before the job started.
	PID int
	// ExitCode is the job's exit status once it wrote one, else -1.
	ExitCode int
	// Alive says whether the job's process group exists.
	Alive bool
	// Cancelled says the cancelled marker exists.
	Cancelled bool
	// LogSize is job.log's size when the poll looked.
	LogSize int64
	// PodNow is the pod's clock, Unix seconds.
	PodNow int64
	// Request is the reason in snapshot.request, empty when there is none.
	Request string
	// DuKiB is the watchdog's last measure of the network volume, -1 when
	// there is none.
	DuKiB int64
	// Verdict is the watchdog's verdict line, empty until it wrote one.
	Verdict string
}

// Started says the job started (job.pid exists).
func (s State) Started() bool { return s.PID > 0 }

// Ended says the job is over: it wrote its exit code, was cancelled, or its
// process group is gone (killed before it could write anything).
func (s State) Ended() bool {
	return s.ExitCode >= 0 || s.Cancelled || (s.Started() && !s.Alive)
}

// VerdictFailed returns the reason of a `failed <reason>` verdict.
func (s State) VerdictFailed() (reason string, failed bool) {
	if s.Verdict == "failed" {
		return "", true
	}
	reason, failed = strings.CutPrefix(s.Verdict, "failed ")
	return reason, failed
}

// ParsePoll splits a poll's output into the state and the log bytes. Lines
// before the header (a login shell's rc file may print some) are skipped.
func ParsePoll(out []byte) (State, []byte, error) {
	if i := bytes.Index(out, []byte("\nob1 ")); i >= 0 && !bytes.HasPrefix(out, []byte("ob1 ")) {
		out = out[i+1:]
	}
	header, rest, ok := bytes.Cut(out, []byte("\n"))
	if !ok {
		return State{}, nil, fmt.Errorf("jobctl: poll output has no header: %.80q", out)
	}
	verdict, logBytes, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return State{}, nil, fmt.Errorf("jobctl: poll output has no verdict line: %.80q", out)
	}
	f := strings.Fields(string(header))
	if len(f) != 9 || f[0] != "ob1" {
		return State{}, nil, fmt.Errorf("jobctl: bad poll header %.120q", header)
	}
	num := func(s string, none int64) (int64, error) {
		if s == "-" {
			return none, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	var st State
	var errs []error
	pid, err := num(f[1], 0)
	errs = append(errs, err)
	code, err := num(f[2], -1)
	errs = append(errs, err)
	st.PID, st.ExitCode = int(pid), int(code)
	st.Alive = f[3] == "1"
	st.Cancelled = f[4] == "1"
	st.LogSize, err = num(f[5], 0)
	errs = append(errs, err)
	st.PodNow, err = num(f[6], 0)
	errs = append(errs, err)
	if f[7] != "-" {
		st.Request = f[7]
	}
	st.DuKiB, err = num(f[8], -1)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return State{}, nil, fmt.Errorf("jobctl: bad poll header %.120q: %w", header, err)
	}
	st.Verdict = strings.TrimSpace(string(verdict))
	return st, logBytes, nil
}

// LastLine is the last non-empty line of a command's output: what the
// command printed after anything a login shell's rc file printed first.
func LastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// RunFile is the absolute path on the pod of a run directory's file.
func RunFile(runDir, name string) string { return path.Join(runDir, name) }
