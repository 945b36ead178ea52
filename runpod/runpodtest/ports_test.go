package runpodtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// tryCreatePod is createPod for a goroutine other than the test's: it
// returns what went wrong instead of failing the test.
func tryCreatePod(srv *Server, body map[string]any) (wirePod, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return wirePod{}, err
	}
	req, err := http.NewRequest("POST", srv.BaseURL()+"/pods", bytes.NewReader(raw))
	if err != nil {
		return wirePod{}, err
	}
	req.Header.Set("Authorization", "Bearer "+srv.APIKey())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return wirePod{}, err
	}
	defer resp.Body.Close()
	var p wirePod
	if resp.StatusCode != http.StatusCreated {
		return p, fmt.Errorf("create: status %d", resp.StatusCode)
	}
	return p, json.NewDecoder(resp.Body).Decode(&p)
}

// createPods creates n pods at once and returns their ids.
func createPods(t *testing.T, srv *Server, n int) []string {
	t.Helper()
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var p wirePod
			p, errs[i] = tryCreatePod(srv, gpuPodBody(fmt.Sprint("many", i)))
			ids[i] = p.ID
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// narrowPorts makes the fake pick its ports in a window of n ports only,
// for the rest of the test.
func narrowPorts(t *testing.T, n int) {
	saved := portRange
	t.Cleanup(func() { portRange = saved })
	lo, hi := saved()
	start := lo + mrand.IntN(hi-lo-n)
	portRange = func() (int, int) { return start, start + n }
}

// livePorts checks that every running pod has a port of its own, reserved by
// the fake, and returns the ports by pod id.
func livePorts(t *testing.T, srv *Server) map[string]int {
	t.Helper()
	byID := map[string]int{}
	owner := map[int]string{}
	for _, p := range srv.Pods() {
		if p.Status == StatusTerminated || p.Status == StatusExited {
			continue
		}
		if p.SSHPort == 0 {
			t.Errorf("%s pod %s has no port", p.Status, p.ID)
			continue
		}
		if other, ok := owner[p.SSHPort]; ok {
			t.Errorf("pods %s and %s share port %d", other, p.ID, p.SSHPort)
		}
		if !portReserved(p.SSHPort) {
			t.Errorf("pod %s's port %d is not reserved", p.ID, p.SSHPort)
		}
		owner[p.SSHPort] = p.ID
		byID[p.ID] = p.SSHPort
	}
	return byID
}

// Pods created at once never share a port, even where few ports are free:
// the fake keeps a live pod's port to itself until the pod ends.
func TestPodPortsAreNeverShared(t *testing.T) {
	// Three pods for each port of the window: without the reservation,
	// some must collide.
	narrowPorts(t, 8)
	srv := newTestServer(t)
	first := createPods(t, srv, 24)
	ports := livePorts(t, srv)
	if len(ports) != len(first) {
		t.Fatalf("%d live pods with ports, want %d", len(ports), len(first))
	}

	// Half end: their ports are free again, while the others' stay taken.
	for _, id := range first[:12] {
		mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+id, nil, http.StatusNoContent)
		if port := ports[id]; portReserved(port) {
			t.Errorf("port %d of deleted pod %s is still reserved", port, id)
		}
	}
	for _, id := range first[12:] {
		if !portReserved(ports[id]) {
			t.Errorf("port %d of live pod %s was released", ports[id], id)
		}
	}
	// A stop frees the port as well; the new pods never take a live one.
	mustCall(t, srv, srv.APIKey(), "POST", "/v2/pods/"+first[12]+"/action", map[string]string{"action": "stop"}, http.StatusOK)
	if portReserved(ports[first[12]]) {
		t.Errorf("port %d of stopped pod %s is still reserved", ports[first[12]], first[12])
	}
	second := createPods(t, srv, 12)
	for id, port := range livePorts(t, srv) {
		ports[id] = port
	}
	for _, id := range append(first[12:], second...) {
		mustCall(t, srv, srv.APIKey(), "DELETE", "/v2/pods/"+id, nil, http.StatusNoContent)
	}
	for id, port := range ports {
		if portReserved(port) {
			t.Errorf("port %d of pod %s is still reserved after every pod ended", port, id)
		}
	}
}

// reservePort hands out a port that nothing listens on and no live pod
// holds, and keeps it bound until its holder lets it go.
func TestReservePortHoldsThePort(t *testing.T) {
	narrowPorts(t, 2)
	var held []int
	for range 4 {
		port, hold, err := reservePort()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(held, port) {
			t.Fatalf("port %d handed out twice: %v", port, held)
		}
		held = append(held, port)
		// Held: nobody else may listen there.
		if ln, err := net.Listen("tcp", ":"+strconv.Itoa(port)); err == nil {
			ln.Close()
			t.Errorf("port %d could be bound while held", port)
		}
		hold.Close()
		// Let go: the pod's sshd may take it.
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			t.Errorf("port %d cannot be bound once let go: %v", port, err)
		} else {
			ln.Close()
		}
	}
	for _, port := range held {
		if !portReserved(port) {
			t.Errorf("port %d is not reserved", port)
		}
		releasePort(port)
		if portReserved(port) {
			t.Errorf("port %d is still reserved after its release", port)
		}
	}
}
