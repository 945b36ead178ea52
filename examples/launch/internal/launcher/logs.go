package launcher

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
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
	return tailLines(f, n)
}

// podLine is a line of the run's pod.log ("TIME SOURCE TEXT") as it is
// printed: escaped, the times of a watchdog line in RFC 3339.
func podLine(l string) string {
	if f := strings.SplitN(l, " ", 3); len(f) == 3 {
		l = f[0] + " " + f[1] + " " + watchdog.Readable(f[2])
	}
	return termtext.Escape(l, false)
}

// tailLines returns the last n lines of r.
func tailLines(r io.Reader, n int) []string {
	var lines []string
	br := bufio.NewReader(r)
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

// tailWindow is how much of the end of a job's output on the pod is read
// for its last lines.
const tailWindow = 4 << 20

func cmdLogs(ctx context.Context, a *app, args []string) error {
	fs := a.newFlags("logs", "RUN", `Shows the job's output (what it printed, its job.log): the copy
downloaded with its results once they are collected, else read live from
the pod, with its secrets [REDACTED] (the variables that hold them must be
set, as for run). --follow then streams it until the job ends.

--pod shows the pod's log instead, as Runpod's log stream carried it (what
the pod's setup and watchdog printed, and Runpod's own lines), kept in the
run's state from the create to the delete; --pod --follow then streams new
lines from Runpod while the pod lives. A pod gone is said with the rule
that ended it, where that is known.`)
	tail := fs.Int("tail", 100, "how many of the last lines to show (0: all)")
	follow := fs.Bool("follow", false, "stream new lines after the last ones, until the job (--pod: the pod) ends")
	pod := fs.Bool("pod", false, "show the pod's log (setup, watchdog, Runpod), not the job's output")
	source := fs.String("source", "", "with --pod --follow: container or system (default both)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *tail < 0 {
		return usagef("logs takes one run id and a --tail of 0 or more")
	}
	if *source != "" && !*pod {
		return usagef("--source is for the pod's log: add --pod")
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
	if *pod {
		err = a.podLogs(ctx, r, n, *follow, *source)
	} else {
		err = a.jobLogs(ctx, r, n, *follow)
	}
	if err != nil && ctx.Err() != nil {
		// Ctrl-C is how a follow ends: the user asked, nothing failed.
		return &exitError{code: ExitInterrupted}
	}
	return err
}

// jobLogs shows the job's output: the copy collected with the results,
// or, while the run's pod lives, live from the pod.
func (a *app) jobLogs(ctx context.Context, r *state.Run, n int, follow bool) error {
	saved := filepath.Join(r.OutDir, guard.JobLog)
	if r.PodID == "" || !r.Ended.IsZero() {
		return a.savedJobLog(r, saved, n, follow)
	}
	if err := a.connectAPI(ctx); err != nil {
		return err
	}
	if _, err := a.loadRun(r.ID); err != nil {
		return err
	}
	secrets, err := a.secretValues(r.SecretSources())
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			return fmt.Errorf("the job's output is read from the pod with its secrets redacted: %s", ue.msg)
		}
		return err
	}
	run, err := guard.Attach(ctx, a.api, r.Record, guard.WithLeaveOnFailure(), guard.WithStartTimeout(time.Minute),
		guard.WithLogger(a.logger), guard.WithSecrets(secrets))
	var gone *guard.PodGoneError
	if errors.Is(err, guard.ErrNoPod) || errors.As(err, &gone) {
		a.say("pod %s is gone: showing the output downloaded with the results, if any", r.PodID)
		return a.savedJobLog(r, saved, n, false)
	}
	if err != nil {
		return err
	}
	defer run.Close()
	next := int64(0)
	if n < 1<<30 {
		var b bytes.Buffer
		if next, err = run.ReadOutput(ctx, &b, -tailWindow, false); err != nil {
			return err
		}
		if next > tailWindow {
			// The window may start within a line: not a line to show.
			_, _ = b.ReadString('\n')
		}
		for _, l := range tailLines(&b, n) {
			if _, err := fmt.Fprintln(a.stdout, l); err != nil {
				return err
			}
		}
		if !follow {
			return nil
		}
	}
	if !follow {
		_, err = run.ReadOutput(ctx, a.stdout, 0, false)
		return err
	}
	off, err := run.ReadOutput(ctx, a.stdout, next, true)
	if err != nil && ctx.Err() == nil {
		// The run's own launcher deletes the pod once it has the results,
		// which can cut this session before it reads the job's last lines:
		// a pod found gone ended the output, and the rest is in the
		// downloaded copy.
		if p, gerr := a.api.GetPod(ctx, r.PodID); errors.Is(gerr, runpod.ErrNotFound) || gerr == nil && p.Status == runpod.StatusTerminated {
			return a.restOfSavedLog(r, saved, off)
		}
	}
	return err
}

// restOfSavedLog shows the downloaded job output from byte off on, for a
// follow whose pod went before it read the end.
func (a *app) restOfSavedLog(r *state.Run, file string, off int64) error {
	f, err := os.Open(file)
	if err != nil {
		a.say("pod %s is gone: its output ended above, and its results are not here", r.PodID)
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(a.stdout, f); err != nil {
		return err
	}
	a.say("pod %s is gone: the rest of its output came from the downloaded results", r.PodID)
	return nil
}

// savedJobLog shows the job's output downloaded with the run's results.
func (a *app) savedJobLog(r *state.Run, file string, n int, follow bool) error {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("run %s has no job output here: its results were not downloaded (\"launch logs %s --pod\" shows its pod's log)", r.ID, r.ID)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for _, l := range tailLines(f, n) {
		if _, err := fmt.Fprintln(a.stdout, l); err != nil {
			return err
		}
	}
	if follow {
		a.say("run %s has ended: its output is all above", r.ID)
	}
	return nil
}

// podLogs shows the run's pod.log, then with follow the pod's log stream.
func (a *app) podLogs(ctx context.Context, r *state.Run, n int, follow bool, source string) error {
	for _, l := range a.lastLines(r.ID, n) {
		fmt.Fprintln(a.stdout, podLine(l))
	}
	if !follow {
		// The kept log stops at the detach: what ended the pod since, where known.
		if end := endOf(r, time.Now()); end.rule != "" || len(r.DueWhenGone) > 0 {
			a.say("pod %s is gone: %s", r.PodID, end.text())
		}
		return nil
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	opts := runpod.LogOptions{Source: runpod.LogSource(source), NoBackfill: true}
	err := a.api.StreamPodLogs(ctx, r.PodID, opts, func(l runpod.LogLine) error {
		_, err := fmt.Fprintf(a.stdout, "%s %s %s\n", l.Time.UTC().Format(time.RFC3339), l.Source, termtext.Escape(watchdog.Readable(l.Line), false))
		return err
	})
	if err == nil || errors.Is(err, runpod.ErrNotFound) {
		// The stream ends with the pod: say what ended it.
		why := cmp.Or(endOf(r, time.Now()).text(), "nothing here says which rule ended it")
		a.say("pod %s is gone: %s", r.PodID, why)
		return nil
	}
	return err
}
