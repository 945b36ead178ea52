package watchdog

import (
	_ "embed"
)

//go:embed group_signal.sh
var groupSignal string

//go:embed watchdog.sh
var script string

//go:embed wake_watchdog.sh
var wakeFunction string

// GroupSignal is the POSIX sh function `group_signal SIG PGID`, which sends a
// signal to a whole process group (0 only tests that the group exists). The
// watchdog uses it to see whether a job is alive; job scripts use it to stop a
// job's whole process tree.
func GroupSignal() string { return groupSignal }

// Script returns the watchdog as the pod runs it: the group_signal helper
// followed by watchdog.sh.
func Script() string { return groupSignal + script }

// Files of the pod file protocol, relative to the run directory
// ($OVERBRAINER_RUN_DIR). The watchdog writes VerdictFile (read it with
// [ParseVerdict]), Log, Du, DuRunning, Moved and EndedByFile; the client writes Lease,
// SnapshotAt, CostCapAt, VolumeGB and Retrieved; the bootstrap writes
// BootstrapFailed; the job scripts write JobPID, ExitCode and Cancelled, and
// so does the bootstrap for a job lost with an earlier container
// (CancelContainerRestarted); SnapshotRequest is written by the client or
// the watchdog and read by the trainer.
const (
	PodDir          = ".pod"
	VerdictFile     = ".pod/watchdog"
	PID             = ".pod/watchdog.pid"
	Log             = ".pod/watchdog.log"
	Lease           = ".pod/lease"
	SnapshotAt      = ".pod/snapshot_at"
	CostCapAt       = ".pod/cost_cap_at"
	VolumeGB        = ".pod/volume_gb"
	Du              = ".pod/du"
	DuRunning       = ".pod/du.running"
	Retrieved       = ".pod/retrieved"
	BootstrapFailed = ".pod/bootstrap_failed"
	// Moved holds the pod's Unix time of the watchdog's last look that
	// saw the job move (output, progress, outputs, CPU, a busy GPU: see
	// the stall rule), for a client to judge it by the same reading.
	Moved           = ".pod/moved"
	JobPID          = "job.pid"
	ExitCode        = "exit_code"
	Cancelled       = "cancelled"
	SnapshotRequest = "snapshot.request"
	// Progress is the job's progress file (its OVERBRAINER_PROGRESS, see
	// package podenv): one line a step, appended; the last line is the
	// job's progress, and a new one counts as movement, as new output
	// does.
	Progress = "progress"
)

// CancelContainerRestarted is what the bootstrap writes in Cancelled (with a
// newline) when it finds the job of an earlier container of the pod: Runpod
// restarted the container (its restart action, a host problem), the run
// directory survived, but every process of the old container is gone, the
// job with them. The job's process group in JobPID is meaningless in the new
// container (the number may name an unrelated live group), so the job must
// be read as ended, never alive; its results so far can still be collected.
// An empty Cancelled is a cancel without a reason.
const CancelContainerRestarted = "container_restarted"

// SnapshotReason is why the job is asked to checkpoint and stop: the
// content of SnapshotRequest, and the reason field of a KindSnapshotRequested
// log line. The client may write a word of its own; these are the ones the
// SDK and the watchdog write.
type SnapshotReason string

// Snapshot request reasons: the client's stop, and the watchdog's cost,
// deadline, full disk and stall.
const (
	ReasonStop     SnapshotReason = "stop"
	ReasonCost     SnapshotReason = "cost"
	ReasonDeadline SnapshotReason = "deadline"
	ReasonDisk     SnapshotReason = "disk"
	// ReasonStall: the job has not moved for the stall limit (see
	// DeleteStalled).
	ReasonStall SnapshotReason = "stall"
)

// WakeFunction is the POSIX sh function `wake_watchdog RUN_DIR`, which sends
// HUP to the run's watchdog so that it reads a file just written (SnapshotAt,
// CostCapAt, VolumeGB, Retrieved, SnapshotRequest, ExitCode) at once instead
// of at its next tick, up to INTERVAL (60 s) later. It never fails, so a
// missing watchdog does not break the caller. The pid file is the pod's (the
// job can write it): it is read only when regular and only its first bytes,
// and only a plain pid above 1 is signalled, never a group, -1 (every
// process) or init. Every wake-up of the watchdog, ours or a job script's,
// is this function.
func WakeFunction() string { return wakeFunction }

// WakeCommand is the pod-side shell command a client runs, from the run
// directory, right after it wrote a control file: WakeFunction applied to
// the current directory.
func WakeCommand() string { return wakeFunction + "wake_watchdog .\n" }
