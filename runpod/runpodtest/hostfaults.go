package runpodtest

import (
	"fmt"
	"os"
	"path"
	"time"
)

// OutOfStock takes every GPU of type id out of stock in every data
// center: the catalog shows it NONE and a create of it answers Runpod's
// capacity 400 (CapacityDetail), until the fake's clock reaches until,
// or, with a zero until, until Restock. Pods that hold the type's GPUs
// keep them. A test of a launch that waits for capacity uses it to make
// the capacity come back after a delay, or when the test says.
func (s *Server) OutOfStock(id string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stock.out == nil {
		s.stock.out = map[string]time.Time{}
	}
	s.stock.out[id] = until
	s.notifyLocked()
}

// Restock ends OutOfStock's shortage of GPU type id now.
func (s *Server) Restock(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.stock.out, id)
	s.notifyLocked()
}

// outOfStockLocked says whether OutOfStock holds type id's stock now.
// s.mu must be held.
func (s *Server) outOfStockLocked(id string) bool {
	until, ok := s.stock.out[id]
	if !ok {
		return false
	}
	if !until.IsZero() && !s.cfg.now().Before(until) {
		delete(s.stock.out, id)
		return false
	}
	return true
}

// FailHost fails the machine under pod id, as a host failure at Runpod
// does: every process of the pod dies at once (its watchdog with it), the
// pod turns EXITED and stays so, and its container disk and pod volume
// are lost with the machine; a network volume keeps its files, for the
// next pod that mounts it. The pod cannot be started again (the start
// and restart actions answer 409); only a delete ends it. It fails for a
// pod that is already gone.
func (s *Server) FailHost(id string) error {
	return s.killPod(id, true, func(p *pod, now time.Time) {
		// The machine's disks go: the pod's root and its pod volume (a
		// network volume lives elsewhere, in s.volumes).
		podDir := path.Join(s.tmp, "pods", p.id)
		_ = os.RemoveAll(path.Join(podDir, "ns"))
		_ = os.RemoveAll(path.Join(podDir, "persistent"))
		p.setStatus(StatusExited, now)
		p.exitCode = -1
		p.errMsg = "the pod's machine failed"
	})
}

// RestartForMaintenance restarts pod id's container as Runpod's
// maintenance of its machine does: the command gets SIGTERM, SIGKILL
// after the stop grace, then runs again on a fresh container disk (only
// volumes keep their files), the pod showing STARTING meanwhile. It
// returns once the restart began; the pod must be RUNNING.
func (s *Server) RestartForMaintenance(id string) error {
	s.mu.Lock()
	p, ok := s.pods[id]
	if ok {
		s.refreshLocked(p, s.cfg.now())
	}
	if !ok || p.status != StatusRunning || p.terminating || p.stopping {
		s.mu.Unlock()
		return fmt.Errorf("runpodtest: no RUNNING pod %q to restart", id)
	}
	s.cycleLocked(p, "restart")
	s.mu.Unlock()
	return nil
}
