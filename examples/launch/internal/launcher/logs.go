package launcher

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// The run's copy of its pod's log (guard.WithPodLog), capped: a pod that
// prints without end must not fill this machine's disk.
const (
	podLogName = "pod.log"
	podLogCap  = 20 << 20
)

type cappedLog struct {
	f    *os.File
	left int
}

func (c *cappedLog) Write(p []byte) (int, error) {
	if c.left > 0 {
		n := min(len(p), c.left)
		c.left -= n
		if _, err := c.f.Write(p[:n]); err != nil {
			return 0, err
		}
		if c.left == 0 {
			fmt.Fprintf(c.f, "\n[launch: pod.log stops at %d MiB]\n", podLogCap>>20)
		}
	}
	return len(p), nil
}

// openPodLog opens the run's pod.log for appending, 0600; nil when it
// cannot (said once: the run goes on without it).
func (d *driver) openPodLog() *cappedLog {
	file := filepath.Join(d.a.store.RunPath(d.r.ID), podLogName)
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		d.a.say("warning: the pod's log is not kept: %v", err)
		return nil
	}
	size := 0
	if st, err := f.Stat(); err == nil {
		size = int(st.Size())
	}
	d.podLog = &cappedLog{f: f, left: max(podLogCap-size, 0)}
	return d.podLog
}

func (d *driver) closePodLog() {
	if d.podLog != nil {
		d.podLog.f.Close()
	}
}

// lastLines returns the last n lines of the run's pod.log.
func (a *app) lastLines(id string, n int) []string {
	f, err := os.Open(filepath.Join(a.store.RunPath(id), podLogName))
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	br := bufio.NewReader(f)
	for {
		// Bounded: a line past 1 MiB is cut, and the lines after it,
		// the last ones the pod printed, are still read.
		l, _, err := termtext.ReadLine(br, 1<<20)
		if l != "" {
			if lines = append(lines, strings.TrimSuffix(l, "\n")); len(lines) > n {
				lines = lines[1:]
			}
		}
		if err != nil {
			return lines
		}
	}
}

func cmdLogs(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("logs", "RUN", `Shows the run's pod log as Runpod's log stream carried it (what the pod's
setup and watchdog printed, and Runpod's own lines), kept in the run's
state from the create to the delete. --follow then streams new lines from
Runpod while the pod lives. A pod gone is said with the rule that ended
it, where that is known.`)
	tail := fs.Int("tail", 100, "how many of the kept lines to show (0: all)")
	follow := fs.Bool("follow", false, "stream new lines from Runpod after the kept ones")
	source := fs.String("source", "", "with --follow: container or system (default both)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *tail < 0 {
		return usagef("logs takes one run id and a --tail of 0 or more")
	}
	if err := state.CheckID(fs.Arg(0)); err != nil {
		return usagef("%v", err)
	}
	if err := a.openStore(); err != nil {
		return err
	}
	r, err := a.store.Load(fs.Arg(0))
	if err != nil {
		return err
	}
	n := *tail
	if n == 0 {
		n = 1 << 30
	}
	for _, l := range a.lastLines(r.ID, n) {
		fmt.Fprintln(a.stdout, termtext.Escape(l, false))
	}
	if !*follow {
		// The kept log stops at the detach: what ended the pod since, where known.
		if end := endOf(r, time.Now()); end.rule != "" || len(r.DueWhenGone) > 0 {
			a.say("pod %s is gone: %s", r.PodID, end.text())
		}
		return nil
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	opts := runpod.LogOptions{Source: runpod.LogSource(*source), NoBackfill: true}
	err = a.api.StreamPodLogs(ctx, r.PodID, opts, func(l runpod.LogLine) error {
		_, err := fmt.Fprintf(a.stdout, "%s %s %s\n", l.Time.UTC().Format("2006-01-02T15:04:05Z"), l.Source, termtext.Escape(l.Line, false))
		return err
	})
	if err == nil || errors.Is(err, runpod.ErrNotFound) {
		// The stream ends with the pod: say what ended it.
		why := cmp.Or(endOf(r, time.Now()).text(), "nothing here says which rule ended it")
		a.say("pod %s is gone: %s", r.PodID, why)
		return nil
	}
	if ctx.Err() != nil {
		// Ctrl-C is how a follow ends: the user asked, nothing failed.
		return &exitError{code: ExitInterrupted}
	}
	return err
}
