package runpodtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A Server keeps its files in a runpodtest-* temporary directory and
// removes it on Close. A process killed before Close (SIGKILL, a test
// binary's timeout) leaves it behind, with pod disks and volumes that may
// be large; the next NewServer removes it. Only a directory whose owner is
// provably gone is touched: each holds an owner file with the pid and the
// start time of the process that made it, so that a pid reused since by
// another process is not taken for the owner.

const ownerFile = ".runpodtest-owner"

// processStart is the start time of process pid in clock ticks since boot
// (field 22 of /proc/pid/stat), or "" when it cannot be read: there is no
// such process, or no /proc.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// ownerText is what a Server writes in its owner file.
func ownerText() string {
	return fmt.Sprintf("%d %s\n", os.Getpid(), processStart(os.Getpid()))
}

// writeOwner marks dir as this process's. Without /proc it writes nothing,
// and the directory is never cleaned up by another process.
func writeOwner(dir string) {
	if processStart(os.Getpid()) == "" {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, ownerFile), []byte(ownerText()), 0o600)
}

// removeAbandoned removes the runpodtest-* directories under tmp whose
// owner process is gone.
func removeAbandoned(tmp string) {
	if processStart(os.Getpid()) == "" {
		return // no /proc: an owner's life cannot be proved either way
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "runpodtest-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not a Server's, or one still being made
		}
		var pid int
		var start string
		if n, _ := fmt.Sscanf(string(b), "%d %s", &pid, &start); n != 2 || pid <= 0 || start == "" {
			continue
		}
		if processStart(pid) == start {
			continue // its owner still runs
		}
		_ = os.RemoveAll(dir)
	}
}
