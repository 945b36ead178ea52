package runpodtest

import (
	"maps"
	"slices"
	"time"
)

// SeedPod is a pod for AddPods: one the account already has.
type SeedPod struct {
	Name, Image string
	// Args, or Entrypoint and Cmd, are the pod's start command, given as
	// a create call would give them (Args then reads back as Runpod
	// stores the two).
	Args            string
	Entrypoint, Cmd []string
	Env             map[string]string
	// Status is PROVISIONING, RUNNING (the default), EXITED or ERROR.
	Status string
	// CreatedAt defaults to the fake's now; StartedAt, for a pod that
	// ran, to CreatedAt.
	CreatedAt, StartedAt time.Time
}

// AddPods adds pods to the account, as if they had been created earlier,
// and returns their ids in order. It is for tests of a large account: no
// request is made and no process runs for them, even with WithPodRunner.
// Each is a one-GPU pod of the catalog's first type in the fake's data
// center (it takes no stock), billed from its start; the API lists, reads
// and deletes it as any other.
func (s *Server) AddPods(pods ...SeedPod) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.now()
	ids := make([]string, 0, len(pods))
	for _, sp := range pods {
		p := &pod{
			id: newID(), key: newKey(), name: sp.Name, image: sp.Image,
			disk: 50, env: maps.Clone(sp.Env), ports: []string{"22/tcp"}, cloud: "SECURE",
			dataCenter: fakeDataCenter, status: StatusProvisioning, exitCode: -1,
			createdAt: sp.CreatedAt, log: newPodLog(s),
		}
		var args *string
		if sp.Args != "" {
			args = &sp.Args
		}
		stored, ep, cmd, err := startCommand(args, sp.Entrypoint, sp.Cmd)
		if err != nil {
			panic("runpodtest: AddPods: " + err.Error())
		}
		p.args, p.entrypoint, p.cmd = stored, ep, cmd
		if len(ep)+len(cmd) > 0 {
			p.words = slices.Concat(ep, cmd)
		}
		if p.env == nil {
			p.env = map[string]string{}
		}
		if len(s.cfg.gpus) > 0 {
			g := s.cfg.gpus[0]
			p.gpuID, p.gpuCount, p.costPerHr = g.ID, 1, g.SecurePrice
		}
		if p.createdAt.IsZero() {
			p.createdAt = now
		}
		started := sp.StartedAt
		if started.IsZero() {
			started = p.createdAt
		}
		switch sp.Status {
		case "", StatusRunning:
			p.setStatus(StatusRunning, started)
		case StatusExited, StatusError:
			p.setStatus(StatusRunning, started)
			p.setStatus(sp.Status, now)
		}
		s.pods[p.id] = p
		s.order = append(s.order, p.id)
		s.podKeys[p.key] = p.id
		ids = append(ids, p.id)
	}
	s.notifyLocked()
	return slices.Clip(ids)
}
