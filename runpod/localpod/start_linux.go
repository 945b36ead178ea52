//go:build linux

package localpod

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// initEnvVar marks the process Start starts as a pod's init: this same
// binary, re-executed, which builds the pod's root and runs its command
// (podinit_linux.go).
const initEnvVar = "RUNPODTEST_POD_INIT"

// initConfig is what Start sends a pod's init on its fd 3. It carries
// the pod's env, secrets included, so it travels through a pipe: never a
// command line, an env var of the init, or a file.
type initConfig struct {
	Words []string `json:"words"`
	// Files are the image's files, written into the pod's root before
	// the command runs.
	Files  map[string]string `json:"files,omitempty"`
	Env    []string          `json:"env"`
	NSDir  string            `json:"nsDir"`
	DiskGB int               `json:"diskGB"`
	Mounts []Mount           `json:"mounts"`
	// Hostname is the pod's, set in its own UTS namespace.
	Hostname string `json:"hostname,omitempty"`
	// Hidden are host directories the pod must not see: each gets an
	// empty tmpfs over it before the pod's own mounts.
	Hidden []string `json:"hidden,omitempty"`
	// HoldsPort says that fd 5 is the socket that keeps the pod's ssh
	// port bound: the init closes it just before it runs the command.
	HoldsPort bool `json:"holdsPort,omitempty"`
}

// portHoldFD is the init's fd of the socket that holds the pod's port.
const portHoldFD = 5

// initStatus is what a pod's init answers on its fd 4 once the command
// started, or why it could not start it.
type initStatus struct {
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}

// Check returns nil when this machine can run local pods, and
// ErrNeedsRoot otherwise. Tests that need pods call it to skip (or fail)
// with that reason.
func Check() error {
	if geteuid() != 0 {
		return ErrNeedsRoot
	}
	return nil
}

// geteuid is os.Geteuid, a variable so that a test run as root can see what
// a user without root gets.
var geteuid = os.Geteuid

type linuxPod struct {
	cmd  *exec.Cmd
	pid  int
	mu   sync.Mutex
	gone bool
	done chan struct{}
	code int
}

// Start runs the pod's command as spec says: an init of its own (this
// binary, re-executed: see PodInit) builds the pod's root in new mount,
// PID, UTS and IPC namespaces and runs the command there, its output (and
// the init's) to out. It returns once the command runs, or why it could
// not start it.
func Start(spec *Spec, out io.Writer) (Process, error) {
	podID := spec.PodID
	if !podInitCalled.Load() {
		return nil, errNoPodInit
	}
	if strings.ContainsAny(spec.Dir, ",:\\") {
		return nil, fmt.Errorf("localpod: the pod's directory %q holds a character overlayfs options cannot carry", spec.Dir)
	}
	payload, err := json.Marshal(initConfig{
		Words:     spec.Argv,
		Files:     spec.Files,
		Env:       spec.Env,
		NSDir:     spec.Dir,
		DiskGB:    spec.DiskGB,
		Mounts:    spec.Mounts,
		Hostname:  spec.Hostname,
		Hidden:    spec.Hidden,
		HoldsPort: spec.PortHold != nil,
	})
	if err != nil {
		return nil, err
	}
	lp := &linuxPod{done: make(chan struct{})}
	started := make(chan error, 1)
	go lp.run(podID, payload, spec.PortHold, out, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return lp, nil
}

// run starts the pod's init and waits for it. The init gets SIGKILL when the
// thread that started it ends (Pdeathsig), which covers this process dying
// too; so the goroutine keeps its thread until the pod is gone.
func (lp *linuxPod) run(podID string, payload []byte, portHold *os.File, out io.Writer, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(lp.done)

	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		started <- err
		return
	}
	stR, stW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		started <- err
		return
	}
	cmd := exec.Command("/proc/self/exe")
	// The pod's id names its init in ps; it is no secret.
	cmd.Args = []string{"runpodtest-pod-init", podID}
	// The init's own env is only its marker: the pod's env comes on fd 3.
	cmd.Env = []string{initEnvVar + "=1"}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{cfgR, stW}
	if portHold != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, portHold) // portHoldFD
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Mounts, processes, hostname and System V IPC of its own; the
		// network stays the host's (see the package doc).
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	err = cmd.Start()
	cfgR.Close()
	stW.Close()
	// From now on only the init holds the port: it closes its copy before
	// it runs the command, which may bind the port at once. It runs
	// nothing before it has the config, written below.
	if portHold != nil {
		portHold.Close()
	}
	if err != nil {
		cfgW.Close()
		stR.Close()
		started <- fmt.Errorf("localpod: start the pod's init: %w", err)
		return
	}
	lp.mu.Lock()
	lp.cmd, lp.pid = cmd, cmd.Process.Pid
	lp.mu.Unlock()
	_, _ = cfgW.Write(payload)
	cfgW.Close()
	raw, _ := io.ReadAll(io.LimitReader(stR, 64<<10))
	stR.Close()
	var st initStatus
	if json.Unmarshal(raw, &st) != nil || !st.OK {
		lp.Kill()
		waitErr := cmd.Wait()
		lp.markGone()
		msg := st.Error
		if msg == "" {
			msg = fmt.Sprintf("the pod's init ended before it started the command (%v)", waitErr)
		}
		started <- errors.New("localpod: " + msg)
		return
	}
	started <- nil
	_ = cmd.Wait()
	lp.markGone()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Exited():
		lp.code = ws.ExitStatus()
	case ws.Signaled():
		lp.code = 128 + int(ws.Signal())
	default:
		lp.code = -1
	}
}

func (lp *linuxPod) markGone() {
	lp.mu.Lock()
	lp.gone = true
	lp.mu.Unlock()
}

func (lp *linuxPod) signal(sig syscall.Signal, group bool) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.gone || lp.pid <= 1 {
		return
	}
	if group {
		_ = syscall.Kill(-lp.pid, sig)
	}
	// The init is PID 1 of the pod's PID namespace: when it dies, the
	// kernel kills everything else in the namespace, daemons that left
	// the process group (sshd) included.
	_ = lp.cmd.Process.Signal(sig)
}

func (lp *linuxPod) Terminate() { lp.signal(syscall.SIGTERM, false) }
func (lp *linuxPod) Kill()      { lp.signal(syscall.SIGKILL, true) }

func (lp *linuxPod) Wait() int {
	<-lp.done
	return lp.code
}
