package runpodtest

import (
	"errors"
	mrand "math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/overbrainer/overbrainer-go/internal/localport"
)

// The ports of the pods' sshd. A local pod shares the host's network, so
// its sshd listens on a real port of this machine, which the fake picks and
// the pod reports as its mapping of port 22. Two live pods must never get
// the same one: a client would reach the other pod's sshd (and see a host
// key it does not expect). So the fake reserves each port it hands out, for
// every Server of this process, until no pod shows it and no process of a
// pod may listen on it any more.

// reservedPorts counts the holds on each port handed out: the reservation
// of reservePort, and the pod that shows the port (pod.setSSHPort).
var reservedPorts = struct {
	sync.Mutex
	refs map[int]int
}{refs: map[int]int{}}

// portRange is where reservePort looks first, [lo, hi): below the kernel's
// ephemeral range (localport.Range). A test narrows it.
var portRange = localport.Range

// reservePort picks a TCP port that nothing listens on (on any address: the
// pod's sshd may listen on all of them) and that no pod of this process
// holds, and reserves it until releasePort. It returns the probe's socket
// still listening on the port, as a file, so that no one else (another test
// process above all) can bind the port until the holder closes it: the pod
// runner hands it to the pod's init, which closes it just before it runs the
// pod's command.
func reservePort() (int, *os.File, error) {
	lo, hi := portRange()
	for i := range 110 {
		port := 0 // after 100 tries in the range, the kernel picks
		if i < 100 {
			port = lo + mrand.IntN(hi-lo)
		}
		if port, hold, ok := tryReservePort(port); ok {
			return port, hold, nil
		}
	}
	return 0, nil, errors.New("runpodtest: no free port on this machine for the pod's sshd")
}

func tryReservePort(port int) (int, *os.File, bool) {
	reservedPorts.Lock()
	defer reservedPorts.Unlock()
	if reservedPorts.refs[port] > 0 {
		return 0, nil, false
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{Port: port})
	if err != nil {
		return 0, nil, false
	}
	defer ln.Close()
	port = ln.Addr().(*net.TCPAddr).Port
	if reservedPorts.refs[port] > 0 {
		// The kernel's pick: a pod may show it without anything
		// listening there (API-only pods, a pod whose sshd is not up).
		return 0, nil, false
	}
	// A copy of the socket, which stays bound when ln closes.
	hold, err := ln.File()
	if err != nil {
		return 0, nil, false
	}
	reservedPorts.refs[port] = 1
	return port, hold, true
}

// holdPort adds a hold on a reserved port.
func holdPort(port int) {
	reservedPorts.Lock()
	defer reservedPorts.Unlock()
	reservedPorts.refs[port]++
}

// releasePort drops a hold on a port; without any, the port may be handed
// out again.
func releasePort(port int) {
	reservedPorts.Lock()
	defer reservedPorts.Unlock()
	if reservedPorts.refs[port]--; reservedPorts.refs[port] <= 0 {
		delete(reservedPorts.refs, port)
	}
}

// portReserved reports whether the port is held.
func portReserved(port int) bool {
	reservedPorts.Lock()
	defer reservedPorts.Unlock()
	return reservedPorts.refs[port] > 0
}

// setSSHPort changes the port the pod shows for its sshd (0: none). The pod
// holds the port it shows, so that no other pod gets it meanwhile. s.mu must
// be held.
func (p *pod) setSSHPort(port int) {
	if port == p.sshPort {
		return
	}
	if port != 0 {
		holdPort(port)
	}
	if p.sshPort != 0 {
		releasePort(p.sshPort)
	}
	p.sshPort = port
}

// httpPorts is the pod's http ports as its runtime shows them: Runpod's
// proxy serves them, so none has a public port; the pod shares the
// host's network, so each is at 127.0.0.1 on its own number.
func (p *pod) httpPorts() []wireRuntimePort {
	var out []wireRuntimePort
	for _, port := range p.ports {
		num, proto, _ := strings.Cut(port, "/")
		if n, err := strconv.Atoi(num); err == nil && proto == "http" {
			out = append(out, wireRuntimePort{Private: n, Type: "http", IP: "127.0.0.1"})
		}
	}
	return out
}
