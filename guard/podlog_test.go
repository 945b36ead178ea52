package guard_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// lockedBuffer is a Builder safe for the pod log's goroutine and the test.
type lockedBuffer struct {
	mu     sync.Mutex
	b      strings.Builder
	closed bool
	late   int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.late++
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) close() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.b.String(), l.late
}

// WithPodLog copies what the pod's command printed (its bootstrap's lines)
// from the create to the delete, and writes nothing once Delete returned.
func TestWithPodLogCopiesThePodsOutput(t *testing.T) {
	srv, api := podRunner(t)
	dir := t.TempDir()
	job := writeJob(dir, "echo training done")
	var podLog lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := guard.Spec{Job: guard.Job{Dir: job, Command: "sh train.sh"}, Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)}}
	run, err := guard.Launch(ctx, api, spec, guard.WithPodLog(&podLog), guard.WithPoll(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(ctx, guard.Job{}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Follow(ctx, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	// What the pod printed before its delete: lines of its end may come
	// after the stream ended.
	want := srv.PodLog(run.Record().PodID)
	if _, err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := podLog.close()
	time.Sleep(500 * time.Millisecond)
	if _, late := podLog.close(); late > 0 {
		t.Errorf("%d lines written after Delete returned", late)
	}
	if strings.TrimSpace(want) == "" {
		t.Fatal("the pod printed nothing: nothing to compare")
	}
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		if !strings.Contains(got, " container "+line+"\n") {
			t.Errorf("the copy lacks the pod's line %q\ncopy:\n%s", line, got)
			break
		}
	}
}
