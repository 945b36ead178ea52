package main_test

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitRequest waits until the fake has been asked for a path ending so.
func (w *world) waitRequest(method, suffix string, timeout time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, r := range w.srv.Requests() {
			if r.Method == method && strings.HasSuffix(r.Path, suffix) {
				return
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no %s …%s within %s", method, suffix, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Ctrl-C ends "logs --follow" as the user asked: exit 130, no error.
func TestLogsFollowInterruptedExits130(t *testing.T) {
	t.Parallel()
	w := newAPIWorld(t)
	r, _ := w.seedRun("20260101-000000-cccc")
	p := w.start("logs", r.ID, "--pod", "--follow")
	w.waitRequest("GET", "/logs", patience)
	p.signal(syscall.SIGINT)
	if code := p.wait(patience); code != 130 {
		t.Fatalf("logs --follow after Ctrl-C: exit %d, want 130\n%s", code, p.stderr)
	}
	if strings.Contains(p.stderr.String(), "context canceled") {
		t.Errorf("logs --follow after Ctrl-C says it as an error:\n%s", p.stderr)
	}
}

// lastLine is s's last line, without its newline.
func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}
