package guard

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod"
)

// WithPodLog copies the pod's log from Runpod's log stream to w, as "TIME
// SOURCE TEXT\n" lines from a goroutine of its own, secrets [REDACTED], until
// Delete, Close or Detach; an attached Run starts with the last 100 lines.
func WithPodLog(w io.Writer) Option { return func(c *config) { c.podLog = w } }

// podLogDrain is how long the copy may go on after the delete, for the
// last lines of a pod on its way out.
const podLogDrain = 2 * time.Second

// podLog is the running copy of a pod's log.
type podLog struct {
	cancel context.CancelFunc
	done   chan struct{}
	*redactor
}

// podLogEvent starts the copy once the run has a pod, and ends it a little
// after the pod's delete.
func (r *Run) podLogEvent(e Event) {
	if r.cfg.podLog == nil {
		return
	}
	switch {
	case r.plog == nil && r.rec.PodID != "" && !r.ended && e.Kind != EventDeleted:
		r.startPodLog()
	case r.plog != nil && e.Kind == EventDeleted:
		// The stream ends with the pod; past the drain it is ended here,
		// so that nothing writes to w once Delete returned.
		select {
		case <-r.plog.done:
		case <-time.After(podLogDrain):
		}
		r.stopPodLog()
	}
}

func (r *Run) startPodLog() {
	ctx, cancel := context.WithCancel(context.Background())
	p := &podLog{cancel: cancel, done: make(chan struct{}), redactor: r.redacting()}
	r.plog = p
	opts := runpod.LogOptions{}
	if !r.rec.BillingStart.IsZero() && r.since(r.rec.BillingStart) < 10*time.Minute {
		// A new pod: everything from its create on.
		opts.Since = r.rec.BillingStart.Add(-time.Minute)
	}
	w, id, log := r.cfg.podLog, r.rec.PodID, r.cfg.log
	go func() {
		defer close(p.done)
		err := r.api.StreamPodLogs(ctx, id, opts, func(l runpod.LogLine) error {
			_, err := io.WriteString(w, p.redact(fmt.Sprintf("%s %s %s\n", l.Time.UTC().Format(time.RFC3339), cmp.Or(string(l.Source), "-"), l.Line)))
			return err
		})
		if err != nil && ctx.Err() == nil {
			log.Info("guard: the pod's log stream ended", "pod", id, "err", err)
		}
	}()
}

// stopPodLog ends the copy and waits for it.
func (r *Run) stopPodLog() {
	if r.plog == nil {
		return
	}
	r.plog.cancel()
	<-r.plog.done
	r.plog = nil
}

// deadPodLogLines is how many of a dead pod's last log lines its
// PodGoneError carries.
const deadPodLogLines = 10

// lastPodLog reads the last lines of the pod's log from Runpod's log
// stream, secrets [REDACTED]. The stream stays open while the pod exists:
// it is read until no line came for half a second, 5 s at most.
func (r *Run) lastPodLog(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	quiet := time.AfterFunc(time.Second, cancel)
	defer quiet.Stop()
	red := r.redacting()
	var lines []string
	_ = r.api.StreamPodLogs(ctx, r.rec.PodID, runpod.LogOptions{Tail: deadPodLogLines}, func(l runpod.LogLine) error {
		quiet.Reset(500 * time.Millisecond)
		if lines = append(lines, red.redact(l.Line)); len(lines) > deadPodLogLines {
			lines = lines[1:]
		}
		return nil
	})
	return strings.Join(lines, "\n")
}
