//go:build !linux

package runpodtest

import (
	"errors"
	"io"
)

var errPodRunnerLinux = errors.New("runpodtest: the pod runner needs Linux (mount and PID namespaces); use the fake without WithPodRunner here")

// CheckPodRunner returns nil when this machine can run pods (WithPodRunner).
// Only Linux, as root, can.
func CheckPodRunner() error { return errPodRunnerLinux }

func podInitHere() {}

func startPodProcess(*podSpec, io.Writer) (podProcess, error) { return nil, errPodRunnerLinux }
