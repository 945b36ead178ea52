package launcher

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/examples/launch/internal/state"
	"github.com/overbrainer/overbrainer-go/internal/costplan"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/runpod"
	"github.com/overbrainer/overbrainer-go/watchdog"
	"github.com/overbrainer/overbrainer-go/watchdog/jobctl"
)

// followOpts says how to follow a run.
type followOpts struct {
	followFlags
	hfToken string
	// stop asks the job for a checkpoint (snapshot.request "stop") before
	// following it, and gives up waiting after stopWait.
	stop     bool
	stopWait time.Duration
}

// maxChunk bounds the output one poll reads.
const maxChunk = 1 << 20

// shortCommand bounds the small commands (a poll, a put, the clock, the
// start): one that takes longer is taken for a broken connection.
const shortCommand = 3 * time.Minute

// statusEvery is how often a line tells how long the job has run and what
// it cost so far.
const statusEvery = 10 * time.Minute

// driver follows one run from a created pod to its end.
type driver struct {
	a    *app
	r    *state.Run
	o    followOpts
	key  *podssh.Key
	host ssh.PublicKey
	addr string
	conn *podssh.Conn
	// watch is the long-lived look at the run over conn, made on first use.
	watch *jobctl.Watcher
	// ready says the watchdog's verdict was ready: its rules are armed, so
	// the pod may be left to it.
	ready     bool
	live      string
	exitCode  int
	lastState jobctl.State
	// runDirLost says the followed job's job.pid vanished: the pod's
	// container restarted and its run directory went with it.
	runDirLost bool
}

// Errors that decide how a run ends.
type (
	// podGoneError: the pod no longer runs (deleted by its watchdog, by
	// someone else, or it failed).
	podGoneError struct{ what string }
	// verdictError: the watchdog's probe failed; its API key cannot delete
	// the pod either.
	verdictError struct{ verdict string }
	// collectError: the results could not be downloaded.
	collectError struct{ err error }
)

func (e *podGoneError) Error() string { return e.what }
func (e *verdictError) Error() string { return "the watchdog's verdict: " + e.verdict }
func (e *collectError) Error() string { return "downloading the results: " + e.err.Error() }
func (e *collectError) Unwrap() error { return e.err }

// follow drives a run whose pod exists to its end, and decides what happens
// to the pod when it cannot.
func (a *app) follow(ctx context.Context, r *state.Run, o followOpts) error {
	d := &driver{a: a, r: r, o: o, exitCode: -1}
	defer d.dropConn()
	return d.finish(ctx, d.steps(ctx))
}

// connect loads the run's keys, waits for the pod and dials it.
func (d *driver) connect(ctx context.Context) error {
	pem, err := d.a.store.ClientKey(d.r.ID)
	if err != nil {
		return err
	}
	if d.key, err = podssh.ParseKey(pem); err != nil {
		return err
	}
	if d.host, err = podssh.ParsePublicKey(d.r.HostKey); err != nil {
		return err
	}
	if err := d.waitRunning(ctx); err != nil {
		return err
	}
	return d.dial(ctx, d.o.startTimeout)
}

func (d *driver) steps(ctx context.Context) error {
	if err := d.connect(ctx); err != nil {
		return err
	}
	st, err := d.waitVerdict(ctx)
	if err != nil {
		return err
	}
	if !st.Started() {
		if !d.r.JobStarted.IsZero() {
			// Starting it now would run the job again from its
			// beginning, its earlier output and checkpoints gone.
			d.runDirLost = true
			return d.collect(ctx, st)
		}
		if d.o.stop {
			d.a.say("the job never started: nothing to checkpoint")
			return d.collect(ctx, st)
		}
		if err := d.prepare(ctx); err != nil {
			return err
		}
		if err := d.start(ctx); err != nil {
			return err
		}
	} else {
		if d.r.JobStarted.IsZero() {
			d.r.JobStarted = time.Now()
		}
		switch {
		case st.Lost():
			d.a.say("%s: reading the rest of its output from byte %d", lostJob, d.r.LogOffset)
		case st.Ended():
			d.a.say("the job has ended: reading the rest of its output from byte %d", d.r.LogOffset)
		default:
			d.a.say("the job is already running (process group %d): following its output from byte %d", st.PID, d.r.LogOffset)
			d.r.Phase = state.PhaseRunning
		}
		d.save()
	}
	if d.o.stop && !st.Ended() {
		if err := d.requestStop(ctx, st); err != nil {
			return err
		}
	}
	st, err = d.followJob(ctx)
	if err != nil {
		return err
	}
	return d.collect(ctx, st)
}

func (d *driver) save() {
	if err := d.a.store.Save(d.r); err != nil {
		d.a.say("saving the run's state: %v", err)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ramp paces the waits for a pod coming up: the first comes after
// firstLook, each next one twice as long, up to limit. A pod that is ready
// within a second is seen within a quarter of a second of it, and a slow one
// is asked no more often than the poll interval (a handful of extra
// requests at most).
type ramp struct{ next, limit time.Duration }

const firstLook = 250 * time.Millisecond

func newRamp(limit time.Duration) *ramp { return &ramp{next: min(firstLook, limit), limit: limit} }

// step returns the next wait and doubles the one after it.
func (r *ramp) step() time.Duration {
	d := r.next
	r.next = min(2*r.next, r.limit)
	return d
}

func (r *ramp) wait(ctx context.Context) error { return sleep(ctx, r.step()) }

// podEnded says a pod in this status will not run the job any more.
func podEnded(s runpod.PodStatus) bool {
	return s == runpod.StatusExited || s == runpod.StatusError || s == runpod.StatusTerminated
}

// waitRunning waits until the pod runs with its SSH port published.
func (d *driver) waitRunning(ctx context.Context) error {
	start, pace := time.Now(), newRamp(d.r.Poll)
	var lastErr error
	for {
		pod, err := d.a.api.GetPod(ctx, d.r.PodID)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, runpod.ErrNotFound):
			return d.goneError(fmt.Sprintf("pod %s no longer exists", d.r.PodID))
		case err != nil:
			if lastErr == nil {
				d.a.say("reading pod %s: %v (trying again)", d.r.PodID, err)
			}
			lastErr = err
		case podEnded(pod.Status):
			return d.goneError(fmt.Sprintf("pod %s is %s", d.r.PodID, pod.Status))
		default:
			lastErr = nil
			if pod.CostPerHr > 0 {
				d.r.CostPerHr = pod.CostPerHr
			}
			if ip, port, ok := pod.PublicPort(22); ok && pod.Status == runpod.StatusRunning {
				d.addr = fmt.Sprintf("%s:%d", ip, port)
				d.a.say("pod %s is running; SSH at %s", d.r.PodID, d.addr)
				return nil
			}
			d.a.live(&d.live, fmt.Sprintf("pod %s: %s | %s", d.r.PodID, pod.Status, d.costLine()))
		}
		if time.Since(start) > d.o.startTimeout {
			if lastErr != nil {
				return fmt.Errorf("pod %s: no answer for %s: %w", d.r.PodID, d.o.startTimeout, lastErr)
			}
			return fmt.Errorf("pod %s was not running with SSH after %s", d.r.PodID, d.o.startTimeout)
		}
		if err := pace.wait(ctx); err != nil {
			return err
		}
	}
}

// costLine is "elapsed, cost so far" since the billing start.
func (d *driver) costLine() string {
	el := time.Since(d.r.BillingStart)
	return fmt.Sprintf("%s elapsed, ~%s so far", since(el), money(costplan.Spent(d.r.CostPerHr, d.r.BillingStart, time.Now())))
}

// dial connects to the pod with the run's host key pinned, retrying while
// sshd comes up. A host key mismatch is final: this is not the run's pod, or
// someone is in between.
func (d *driver) dial(ctx context.Context, timeout time.Duration) error {
	start, checked, pace := time.Now(), time.Now(), newRamp(time.Second)
	var lastErr error
	for {
		c, err := podssh.Dial(ctx, podssh.Target{Addr: d.addr, Key: d.key, HostKey: d.host, Timeout: 20 * time.Second})
		if err == nil {
			d.dropConn()
			d.conn = c
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, podssh.ErrHostKeyMismatch) {
			return fmt.Errorf("SSH to %s refused: the server's host key is not this run's host key (never trusted on first use): %w", d.addr, err)
		}
		lastErr = err
		if time.Since(start) > timeout {
			return fmt.Errorf("SSH to pod %s at %s failed for %s: %w", d.r.PodID, d.addr, timeout, lastErr)
		}
		if time.Since(checked) > 5*time.Second {
			// A pod whose bootstrap failed is deleted by its watchdog:
			// no need to knock until the timeout.
			checked = time.Now()
			if pod, err := d.a.api.GetPod(ctx, d.r.PodID); errors.Is(err, runpod.ErrNotFound) {
				return d.goneError(fmt.Sprintf("pod %s no longer exists (SSH never answered: %v)", d.r.PodID, lastErr))
			} else if err == nil && podEnded(pod.Status) {
				return d.goneError(fmt.Sprintf("pod %s is %s (SSH never answered: %v)", d.r.PodID, pod.Status, lastErr))
			}
		}
		if err := pace.wait(ctx); err != nil {
			return err
		}
	}
}

// dropConn closes the connection and its watcher.
func (d *driver) dropConn() {
	if d.watch != nil {
		d.watch.Close()
		d.watch = nil
	}
	if d.conn != nil {
		d.conn.Close()
		d.conn = nil
	}
}

// poll is one look at the run over SSH.
func (d *driver) poll(ctx context.Context, touch bool) (jobctl.State, []byte, error) {
	w, err := d.watcher()
	if err != nil {
		return jobctl.State{}, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, shortCommand)
	defer cancel()
	st, b, err := w.Poll(ctx, d.r.LogOffset, touch, maxChunk)
	if err != nil {
		d.watch.Close()
		d.watch = nil
		return st, nil, err
	}
	d.lastState = st
	d.noteDeleteReason(string(st.DeleteReason))
	return st, b, nil
}

// noteDeleteReason tells, once, that the pod's watchdog is deleting the pod
// and why, and keeps the reason for ls and for when the pod is gone.
func (d *driver) noteDeleteReason(reason string) {
	if reason == "" || reason == d.r.DeleteReason {
		return
	}
	d.r.DeleteReason = reason
	d.save()
	d.a.say("pod %s's watchdog is deleting it (%s): %s", d.r.PodID, reason, explainDelete(reason))
}

// goneError is a podGoneError, with the watchdog's reason when one was
// seen.
func (d *driver) goneError(what string) *podGoneError {
	if d.r.DeleteReason != "" {
		what += fmt.Sprintf("; its watchdog was deleting it (%s): %s", d.r.DeleteReason, explainDelete(d.r.DeleteReason))
	}
	return &podGoneError{what}
}

// waitVerdict waits for the watchdog's verdict. Its looks renew the lease:
// a client that is here holds it, even before the job has output.
func (d *driver) waitVerdict(ctx context.Context) (jobctl.State, error) {
	start, pace := time.Now(), newRamp(d.r.Poll)
	for {
		st, _, err := d.poll(ctx, true)
		var ce *podssh.CommandError
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return st, ctx.Err()
		case errors.As(err, &ce):
			return st, fmt.Errorf("reading the watchdog's verdict: %w", err)
		default:
			// The connection broke: the pod may be gone.
			if err := d.reconnect(ctx, err); err != nil {
				return st, err
			}
			continue
		}
		if st.Verdict != (watchdog.Verdict{}) {
			d.r.Verdict = st.Verdict.String()
			d.save()
			if st.Verdict.Failed {
				return st, &verdictError{st.Verdict.String()}
			}
			d.ready = true
			d.a.say("watchdog verdict: %s", st.Verdict)
			return st, nil
		}
		if time.Since(start) > d.o.verdictTimeout {
			return st, fmt.Errorf("the watchdog wrote no verdict within %s", d.o.verdictTimeout)
		}
		if err := pace.wait(ctx); err != nil {
			return st, err
		}
	}
}

// watcher returns the connection's watcher, made on first use.
func (d *driver) watcher() (*jobctl.Watcher, error) {
	if d.watch == nil {
		w, err := jobctl.Watch(d.conn, d.r.RunDir)
		if err != nil {
			return nil, err
		}
		d.watch = w
	}
	return d.watch, nil
}

// put replaces one of the client's pod files with value, through the
// watcher. A write replaces the file whole, so it is tried a second time
// on a fresh watch session when the first one broke.
func (d *driver) put(ctx context.Context, name, value string) error {
	var err error
	for try := 0; try < 2 && ctx.Err() == nil; try++ {
		if err = d.putOnce(ctx, name, value); err == nil {
			return nil
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	return fmt.Errorf("writing %s on the pod: %w", name, err)
}

func (d *driver) putOnce(ctx context.Context, name, value string) error {
	w, err := d.watcher()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, shortCommand)
	defer cancel()
	if err := w.Put(ctx, name, value); err != nil {
		d.watch.Close()
		d.watch = nil
		return err
	}
	return nil
}

// prepare writes the cost plan, and uploads the job and its command in one
// tar stream.
func (d *driver) prepare(ctx context.Context) error {
	if d.r.MaxCostUSD > 0 {
		if err := d.planCost(ctx); err != nil {
			return err
		}
	}
	defer d.holdLease(ctx)()
	err := d.conn.UploadTar(ctx, d.r.RunDir, func(tw *tar.Writer) error {
		if err := podssh.AddTree(tw, d.r.JobDir, jobctl.JobDir+"/"); err != nil {
			return err
		}
		return podssh.AddFile(tw, jobctl.CommandFile, []byte(d.r.Command+"\n"), 0o644)
	})
	if err != nil {
		return fmt.Errorf("uploading the job: %w", err)
	}
	d.a.say("uploaded %s to %s", d.r.JobDir, jobctl.RunFile(d.r.RunDir, jobctl.JobDir))
	return nil
}

// planCost writes .pod/snapshot_at and .pod/cost_cap_at on the pod's clock.
func (d *driver) planCost(ctx context.Context) error {
	if d.r.CostPerHr <= 0 {
		perHr, err := d.a.api.PodCostPerHour(ctx, d.r.PodID)
		if err != nil {
			return fmt.Errorf("reading the pod's price for the cost cap: %w", err)
		}
		d.r.CostPerHr = perHr
	}
	// A look carries the pod's clock; its round trip bounds the error.
	sent := time.Now()
	st, _, err := d.poll(ctx, false)
	received := time.Now()
	if err != nil {
		return fmt.Errorf("reading the pod's clock: %w", err)
	}
	offset := costplan.ClockOffset(sent, received, st.PodNow)
	plan, err := costplan.CostCap(d.r.BillingStart, d.r.CostPerHr, d.r.MaxCostUSD, d.r.SnapshotLead, offset)
	if err != nil {
		return err
	}
	if err := d.put(ctx, watchdog.SnapshotAt, strconv.FormatInt(plan.SnapshotAt, 10)); err != nil {
		return err
	}
	if err := d.put(ctx, watchdog.CostCapAt, strconv.FormatInt(plan.CostCapAt, 10)); err != nil {
		return err
	}
	local := func(podUnix int64) string {
		return time.Unix(podUnix, 0).Add(-offset).Local().Format(time.TimeOnly)
	}
	d.a.say("cost cap %s at %s/h: snapshot asked at %s, pod deleted at %s (pod clock %+.1fs from ours)",
		money(d.r.MaxCostUSD), money(d.r.CostPerHr), local(plan.SnapshotAt), local(plan.CostCapAt), offset.Seconds())
	return nil
}

// holdLease renews the lease every LeaseEvery through the watch session
// while the launcher works in other sessions (an upload, a download): the
// client is there, output or not. The returned function stops it.
func (d *driver) holdLease(ctx context.Context) (release func()) {
	w, err := d.watcher()
	if err != nil {
		return func() {}
	}
	// release stops the loop between looks and lets a look in flight end:
	// cancelling it would break the watcher the caller shares, and the
	// caller's next write (the retrieved marker) would fail with it.
	stop, done := make(chan struct{}), make(chan struct{})
	offset := d.r.LogOffset
	go func() {
		defer close(done)
		t := time.NewTicker(d.r.LeaseEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case <-t.C:
			}
			lctx, lcancel := context.WithTimeout(ctx, shortCommand)
			_, _, err := w.Poll(lctx, offset, true, 0)
			lcancel()
			if err != nil {
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

// start starts the job, the HF token on the session's stdin only.
func (d *driver) start(ctx context.Context) error {
	in, err := jobctl.StartInput(d.o.hfToken)
	if err != nil {
		return err
	}
	defer d.holdLease(ctx)()
	sctx, cancel := context.WithTimeout(ctx, shortCommand)
	defer cancel()
	out, err := d.conn.Output(sctx, jobctl.StartCommand(d.r.RunDir, podenv.JobEnv), in)
	var ce *podssh.CommandError
	if errors.As(err, &ce) && ce.Status == jobctl.StartAlreadyStarted {
		d.a.say("the job had already been started")
	} else if err != nil {
		return fmt.Errorf("starting the job: %w", err)
	} else {
		d.a.say("job started (process group %s): %s", jobctl.LastLine(out), d.r.Command)
	}
	d.r.JobStarted = time.Now()
	d.r.Phase = state.PhaseRunning
	d.save()
	return nil
}

// requestStop asks the job for a checkpoint, unless a request is there.
func (d *driver) requestStop(ctx context.Context, st jobctl.State) error {
	if st.Request != "" {
		d.a.say("a snapshot was already requested (%s): waiting for the job", st.Request)
		return nil
	}
	if err := d.put(ctx, watchdog.SnapshotRequest, string(watchdog.ReasonStop)); err != nil {
		return err
	}
	d.a.say("snapshot requested (stop): waiting for the job's checkpoint")
	return nil
}

// followJob streams the job's output until it ended and all of it was read,
// renewing the lease while the output progresses and growing a network
// volume that fills.
func (d *driver) followJob(ctx context.Context) (jobctl.State, error) {
	var lastLease, lastProgress, lastStatus, lastVolume time.Time
	var announced watchdog.SnapshotReason
	stopAsked := time.Now()
	lastStatus = time.Now()
	for {
		// The first look renews the lease; after that, a renewal needs
		// output since the last one.
		touch := lastLease.IsZero() || (time.Since(lastLease) >= d.r.LeaseEvery && lastProgress.After(lastLease))
		st, b, err := d.poll(ctx, touch)
		if err != nil {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			var ce *podssh.CommandError
			if errors.As(err, &ce) {
				return st, fmt.Errorf("following the job: %w", err)
			}
			if err := d.reconnect(ctx, err); err != nil {
				return st, err
			}
			continue
		}
		now := time.Now()
		if touch {
			lastLease = now
		}
		if len(b) > 0 {
			if _, err := d.a.stdout.Write(b); err != nil {
				return st, fmt.Errorf("writing the job's output: %w", err)
			}
			d.r.LogOffset += int64(len(b))
			lastProgress = now
		}
		if st.Verdict.String() != d.r.Verdict || len(b) > 0 {
			d.r.Verdict = st.Verdict.String()
			d.save()
		}
		if st.Request != "" && st.Request != announced {
			announced = st.Request
			if st.Request != watchdog.ReasonStop || !d.o.stop {
				d.a.say("snapshot requested (%s): the job is asked to checkpoint and stop", st.Request)
			}
		}
		if d.r.NetworkVolumeID != "" && st.DuKiB >= 0 && now.Sub(lastVolume) >= time.Minute {
			lastVolume = now
			if err := d.growVolume(ctx, st.DuKiB); err != nil {
				d.a.say("growing network volume %s: %v", d.r.NetworkVolumeID, err)
			}
		}
		if st.Ended() && d.r.LogOffset >= st.LogSize {
			return st, nil
		}
		// The job was started (or seen started) before the follow began,
		// and job.pid is never removed: without it, the run directory is
		// a new one. The pod's container restarted on a disk that did not
		// keep it (no volume), and the job died with the container.
		if !st.Started() {
			d.runDirLost = true
			return st, nil
		}
		if d.o.stop && d.o.stopWait > 0 && time.Since(stopAsked) > d.o.stopWait {
			d.a.say("the job did not end within %s of the stop request: collecting what there is", d.o.stopWait)
			return st, nil
		}
		if now.Sub(lastStatus) >= statusEvery {
			lastStatus = now
			d.a.say("job running: %s", d.costLine())
		}
		if len(b) == maxChunk {
			continue
		}
		if err := sleep(ctx, d.r.Poll); err != nil {
			return st, err
		}
	}
}

// reconnect replaces a broken SSH connection, unless the pod is gone.
func (d *driver) reconnect(ctx context.Context, cause error) error {
	d.dropConn()
	d.a.say("lost the SSH connection (%v): reconnecting", cause)
	wait := d.r.Poll
	for {
		if err := d.waitRunning(ctx); err != nil {
			return err
		}
		err := d.dial(ctx, 30*time.Second)
		if err == nil {
			d.a.say("reconnected")
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, podssh.ErrHostKeyMismatch) {
			return err
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// growVolume grows the network volume when it is 92% full and tells the
// watchdog its new size.
func (d *driver) growVolume(ctx context.Context, usedKiB int64) error {
	newGB, grow := costplan.Grow(d.r.VolumeGB, usedKiB)
	if !grow {
		return nil
	}
	newGB = min(newGB, runpod.MaxVolumeGB)
	if newGB <= d.r.VolumeGB {
		return fmt.Errorf("the volume is %d GB, Runpod's largest: it cannot grow", d.r.VolumeGB)
	}
	v, err := d.a.api.GrowNetworkVolume(ctx, d.r.NetworkVolumeID, newGB)
	if err != nil {
		return err
	}
	if err := d.put(ctx, watchdog.VolumeGB, strconv.Itoa(v.SizeGB)); err != nil {
		return err
	}
	d.a.say("network volume %s grown from %d to %d GB (%.1f GB used)", d.r.NetworkVolumeID, d.r.VolumeGB, v.SizeGB, float64(usedKiB)*1024/1e9)
	d.r.VolumeGB = v.SizeGB
	d.save()
	return nil
}

// lostJob is what the launcher says of a job lost with an earlier container
// of the pod (jobctl.State.Lost).
const lostJob = "job lost: the pod's container restarted (Runpod restarted it, or its host failed), which ended the job before it could write its exit code"

// resultNames are what the client downloads from the run directory (those
// that exist): the cancelled marker says why a job that has no exit code
// ended, when it was lost with an earlier container.
var resultNames = []string{jobctl.OutputsDir, jobctl.JobLog, watchdog.Log, watchdog.ExitCode, watchdog.Cancelled, watchdog.SnapshotRequest}

// collect downloads the results, marks them retrieved and ends the run.
func (d *driver) collect(ctx context.Context, st jobctl.State) error {
	switch {
	case st.ExitCode >= 0:
		d.exitCode = st.ExitCode
		code := st.ExitCode
		d.r.ExitCode = &code
		d.a.say("job ended: exit code %d", st.ExitCode)
	case st.Lost():
		d.a.say("%s; collecting its results so far", lostJob)
	case st.Cancelled:
		d.a.say("job ended: cancelled")
	case st.Started() && !st.Alive:
		d.a.say("job ended without an exit code (killed)")
	case d.runDirLost:
		d.a.say("%s, and its run directory %s went with it (no volume kept it): the output shown so far is all there is", lostJob, d.r.RunDir)
	}
	if st.Started() {
		release := d.holdLease(ctx)
		got, err := d.conn.Download(ctx, d.r.RunDir, resultNames, d.r.OutDir)
		release()
		if err != nil {
			return &collectError{err}
		}
		d.a.say("results downloaded to %s (%d files, %d bytes)", d.r.OutDir, got.Files, got.Bytes)
		d.a.listOutputs(filepath.Join(d.r.OutDir, jobctl.OutputsDir))
		if len(got.Skipped) > 0 {
			d.a.say("skipped (links and special files): %s", strings.Join(got.Skipped, ", "))
		}
		// The pod may go now: the watchdog deletes it on this marker
		// should the delete below fail.
		if err := d.put(ctx, watchdog.Retrieved, ""); err != nil {
			d.a.say("%v", err)
		}
	}
	if d.r.Keep {
		d.r.Phase = state.PhaseDone
		d.r.Note = "pod kept (--keep-pod)"
		d.save()
		d.a.say("pod %s is kept (--keep-pod) and keeps billing (~%s/h): remove it with \"launch rm %s\"", d.r.PodID, money(d.r.CostPerHr), d.r.ID)
		return d.jobResult()
	}
	d.teardown(state.PhaseDone)
	return d.jobResult()
}

// listOutputs names the first downloaded outputs.
func (a *app) listOutputs(dir string) {
	const most = 10
	var names []string
	n := 0
	_ = filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return nil
		}
		n++
		if len(names) < most {
			names = append(names, p)
		}
		return nil
	})
	for _, p := range names {
		a.say("  output: %s", p)
	}
	if n > most {
		a.say("  ... and %d more in %s", n-most, dir)
	}
}

// jobResult is the run's result from the job's exit code.
func (d *driver) jobResult() error {
	if d.exitCode == 0 {
		return nil
	}
	if d.exitCode > 0 {
		return &exitError{code: ExitFailed, msg: fmt.Sprintf("the job failed with exit code %d", d.exitCode)}
	}
	if d.lastState.Lost() || d.runDirLost {
		return &exitError{code: ExitFailed, msg: "the job was lost when the pod's container restarted, before it could finish"}
	}
	if d.lastState.Started() {
		return &exitError{code: ExitFailed, msg: "the job ended without an exit code"}
	}
	return &exitError{code: ExitFailed, msg: "the job never ran"}
}

// teardown deletes the pod and the secret, whatever ctx says, and prints the
// cost.
func (d *driver) teardown(phase string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := d.a.deletePod(ctx, d.r)
	d.a.deleteSecret(ctx, d.r)
	d.r.Ended = time.Now()
	d.r.CostUSD = costplan.Spent(d.r.CostPerHr, d.r.BillingStart, d.r.Ended)
	d.r.Phase = phase
	if res == runpod.Stopped {
		d.r.Phase = state.PhaseStopped
	}
	d.save()
	d.a.printCost(d.r)
}

// printCost says what the run cost and how that was computed.
func (a *app) printCost(r *state.Run) {
	where := "Runpod's"
	if r.Local {
		where = "the local emulator's"
	}
	a.say("cost: ~%s (%s/h x %s from the create call to the delete; an estimate from %s price, the bill is authoritative)",
		money(r.CostUSD), money(r.CostPerHr), since(r.Ended.Sub(r.BillingStart)), where)
}

// finish decides what happens to the pod when the run did not end well.
func (d *driver) finish(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var gone *podGoneError
	var verdict *verdictError
	var collect *collectError
	var jobFailed *exitError
	switch {
	case errors.As(err, &jobFailed):
		// The run is over (results collected, the pod deleted or kept):
		// only the job failed, which the exit status says.
		return err
	case ctx.Err() != nil:
		return d.interrupted()
	case errors.As(err, &gone):
		d.a.say("%s: the job's results were not collected", gone.what)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		d.a.deleteSecret(ctx, d.r)
		d.r.Ended = time.Now()
		d.r.CostUSD = costplan.Spent(d.r.CostPerHr, d.r.BillingStart, d.r.Ended)
		d.r.Phase, d.r.Note = state.PhaseFailed, gone.what
		d.save()
		d.a.printCost(d.r)
		return &exitError{code: ExitFailed}
	case errors.As(err, &collect) && d.podGone():
		d.a.say("error: %v", err)
		d.a.say("pod %s is gone: its results were not collected", d.r.PodID)
		d.r.Note = err.Error()
		d.teardown(state.PhaseFailed)
		return &exitError{code: ExitFailed}
	case errors.As(err, &collect):
		// The outputs exist only on the pod: deleting it would lose them.
		d.a.say("error: %v", err)
		d.r.Phase, d.r.Note = state.PhaseLeftToPod, err.Error()
		d.save()
		d.a.say("pod %s is left to its watchdog, which deletes it %s after the job ended if nobody collects the results: retry with \"launch attach %s\" before that",
			d.r.PodID, d.retrieveGrace(), d.r.ID)
		return &exitError{code: ExitFailed}
	case errors.As(err, &verdict):
		reason, _ := strings.CutPrefix(verdict.verdict, "failed ")
		d.a.say("error: %v: %s", verdict, explainVerdict(reason))
	case d.o.onFailure == "leave" && d.ready:
		d.a.say("error: %v", err)
		d.r.Phase, d.r.Note = state.PhaseLeftToPod, err.Error()
		d.save()
		d.a.say("pod %s is left to its watchdog (--on-failure leave): %s", d.r.PodID, d.guarantees())
		return &exitError{code: ExitFailed}
	default:
		d.a.say("error: %v", err)
		d.a.say("deleting pod %s", d.r.PodID)
	}
	d.r.Note = err.Error()
	d.teardown(state.PhaseFailed)
	return &exitError{code: ExitFailed}
}

// podGone says the API knows the pod no more, or as ended.
func (d *driver) podGone() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pod, err := d.a.api.GetPod(ctx, d.r.PodID)
	return errors.Is(err, runpod.ErrNotFound) || (err == nil && podEnded(pod.Status))
}

// interrupted ends a run on Ctrl-C: detach, or down when asked or when the
// pod would die with this process anyway.
func (d *driver) interrupted() error {
	if d.o.downOnInterrupt || d.a.inProcess() {
		if d.a.inProcess() && !d.o.downOnInterrupt {
			d.a.say("the in-process local emulator ends with this launcher: collecting what there is and deleting the pod (run \"launch local-server\" to be able to detach)")
		}
		if d.addr != "" && d.lastState.Started() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			// An interrupted look may have taken the connection down.
			err := d.liveConn(ctx)
			var got podssh.Extracted
			if err == nil {
				got, err = d.conn.Download(ctx, d.r.RunDir, resultNames, d.r.OutDir)
			}
			cancel()
			if err != nil {
				d.a.say("downloading the results: %v", err)
			} else {
				d.a.say("results downloaded to %s (%d files, %d bytes)", d.r.OutDir, got.Files, got.Bytes)
			}
		}
		d.r.Note = "interrupted"
		d.teardown(state.PhaseFailed)
		return &exitError{code: ExitInterrupted}
	}
	d.r.Phase = state.PhaseDetached
	d.save()
	d.a.say("detached from pod %s: it goes on under its watchdog. %s", d.r.PodID, d.guarantees())
	d.a.say("resume with: launch attach %s   (or: launch stop %s, launch rm %s)", d.r.ID, d.r.ID, d.r.ID)
	return &exitError{code: ExitInterrupted}
}

// liveConn makes sure the driver has an open connection.
func (d *driver) liveConn(ctx context.Context) error {
	if d.conn != nil {
		select {
		case <-d.conn.Done():
		default:
			return nil
		}
	}
	return d.dial(ctx, 30*time.Second)
}

// guarantees says what the watchdog will do with a pod left to it.
func (d *driver) guarantees() string {
	var parts []string
	if !d.lastState.Started() {
		parts = append(parts, fmt.Sprintf("no job runs yet, so the watchdog deletes the pod %s after it booted (boot grace)", since(d.r.BootGrace)))
	} else if d.r.Keep {
		parts = append(parts, "the pod is kept (--keep-pod): nothing deletes it but \"launch rm\"")
	}
	if !d.r.Deadline.IsZero() && !d.r.Keep {
		parts = append(parts, fmt.Sprintf("the lease is no longer renewed, so at the deadline (%s) it asks the job for a snapshot and deletes the pod",
			d.r.Deadline.Local().Format(time.DateTime)))
	}
	if d.r.MaxCostUSD > 0 && !d.r.Keep {
		parts = append(parts, fmt.Sprintf("the cost cap of %s still holds", money(d.r.MaxCostUSD)))
	}
	if d.lastState.Started() && !d.r.Keep {
		parts = append(parts, fmt.Sprintf("once the job ends, the pod goes %s later unless its results are collected (or later, while a launcher downloading them holds the lease)", d.retrieveGrace()))
	}
	return strings.Join(parts, "; ")
}

// retrieveGrace is the run's retrieve grace, as the pod's env has it.
func (d *driver) retrieveGrace() string {
	if d.r.RetrieveGrace <= 0 {
		return "the retrieve grace"
	}
	return since(d.r.RetrieveGrace)
}
