package localpod

import (
	"errors"
	"os"
)

// ErrNeedsRoot is what Check returns, and what a pod's error starts with,
// when this machine cannot run local pods.
var ErrNeedsRoot = errors.New("localpod: the pod runner needs root on Linux: " +
	"each pod runs in its own mount, PID, UTS and IPC namespaces, over a private overlay of /, " +
	"so that it never changes the host (run the tests as root, e.g. in a container or with sudo -E go test)")

// BasePath is the PATH of a pod whose env sets none, as an image's would.
const BasePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Spec is everything Start needs to run a pod's command.
type Spec struct {
	PodID string
	// Argv is the container's argv: ENTRYPOINT then CMD (see
	// ContainerArgv).
	Argv []string
	// Files are the image's files, path -> executable content, written
	// into the pod's root before the command runs.
	Files map[string]string
	// Env is the command's whole env, NAME=value, secrets resolved.
	Env []string
	// Dir is the host directory the pod's private root is built on.
	Dir    string
	DiskGB int
	// Mounts are in mounting order, parents first.
	Mounts []Mount
	// Hostname is the pod's, set in its own UTS namespace.
	Hostname string
	// Hidden lists the host directories the pod gets an empty tmpfs over.
	Hidden []string
	// PortHold, when not nil, keeps the pod's ssh port bound until the
	// pod's init closes it, just before it runs the command. Start closes
	// the caller's copy once the init has its own.
	PortHold *os.File
}

// Mount is one mount inside the pod's root: a bind of a host directory,
// or a fresh tmpfs when Source is empty.
type Mount struct {
	Source string `json:"source,omitempty"`
	Target string `json:"target"`
	Mode   uint32 `json:"mode,omitempty"`
}

// Process is a started pod: its namespace's init and everything under it.
type Process interface {
	// Terminate asks the pod to stop, as docker stop does (SIGTERM).
	Terminate()
	// Kill kills every process of the pod at once.
	Kill()
	// Wait returns the command's exit status once every process of the
	// pod is gone.
	Wait() int
}
