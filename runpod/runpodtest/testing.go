package runpodtest

// TB is the part of testing.TB that NewTestServer uses. It is an interface
// of its own so that this package does not import testing: a program that
// embeds the emulator (the launcher's --local) links no test framework.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
}

// NewTestServer starts a fake Runpod for a test and closes it when the test
// ends. At that point it fails the test if a pod is still billing (running,
// or stopped with a volume), unless the test passed AllowPodsLeft: a test
// that leaves a pod behind in the fake would leave it billing on Runpod.
func NewTestServer(t TB, opts ...Option) *Server {
	t.Helper()
	s := NewServer(opts...)
	t.Cleanup(func() {
		if !s.cfg.allowLeft {
			for _, p := range s.Billing() {
				t.Errorf("runpodtest: pod %s (%s) was left %s and billing $%.4f so far", p.ID, p.Name, p.Status, p.Bill.USD)
			}
		}
		s.Close()
	})
	return s
}
