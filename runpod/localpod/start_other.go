//go:build !linux

package localpod

import (
	"errors"
	"io"
)

var errPodRunnerLinux = errors.New("localpod: the pod runner needs Linux (mount and PID namespaces); use the fake without WithPodRunner here")

// Check returns nil when this machine can run local pods. Only Linux, as
// root, can.
func Check() error { return errPodRunnerLinux }

func podInitHere() {}

// Start runs a pod's command; only Linux can.
func Start(*Spec, io.Writer) (Process, error) { return nil, errPodRunnerLinux }
