package guard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// JobLog is the job's output (its stdout and stderr) among the results
// Collect downloads: a program shows a finished run's output from there.
const JobLog = jobctl.JobLog

// resultNames are what Collect downloads from the run directory (those
// that exist): the cancelled marker says why a job that has no exit code
// ended, when it was lost with an earlier container, and ended_by which
// rule of the watchdog went to end the pod (ReadEndedBy reads it there);
// the bootstrap's log lands next to the watchdog's, in .pod, outside the
// outputs.
var resultNames = []string{jobctl.OutputsDir, JobLog, watchdog.Log, bootstrap.Log, watchdog.ExitCode, watchdog.Cancelled, watchdog.SnapshotRequest, watchdog.EndedByFile}

// growingNames are the logs among them, which a running job and its
// watchdog append to (and a new container's bootstrap replaces) while
// they are sent: checking them against the pod's manifest would fail a
// download for a line written meanwhile.
var growingNames = []string{JobLog, watchdog.Log, bootstrap.Log}

// Results says what Collect and CollectSoFar bring back.
type Results struct {
	MaxGB          float64  `json:"max_gb,omitempty"`          // the download's cap: DefaultMaxResultsGB when 0
	RequireOutputs bool     `json:"require_outputs,omitempty"` // no file in the outputs fails the run: ErrNoOutputs
	Exclude        []string `json:"exclude,omitempty"`         // base-name globs left on the pod, e.g. "ckpt-*"
}

func (s Results) check(prefix string) []error {
	var errs []error
	if math.IsNaN(s.MaxGB) || math.IsInf(s.MaxGB, 0) || s.MaxGB < 0 {
		errs = append(errs, &podenv.FieldError{Field: prefix + "MaxGB", Reason: fmt.Sprintf("%v is not a positive size or 0", s.MaxGB)})
	}
	for _, p := range s.Exclude {
		if p == "" || strings.ContainsAny(p, "/\n\x00") {
			errs = append(errs, &podenv.FieldError{Field: prefix + "Exclude", Reason: fmt.Sprintf("%q is not a base-name glob (no /, no newline)", p)})
		}
	}
	return errs
}

func (s Results) maxBytes() int64 {
	gb := s.MaxGB
	if gb == 0 {
		gb = DefaultMaxResultsGB
	}
	return int64(gb * (1 << 30))
}

// Collected is what Collect downloaded.
type Collected struct {
	Dir          string
	Files, Dirs  int
	Bytes        int64
	Skipped      []string // links and special files, never written
	NotCollected bool     // the job never started: there was nothing to fetch
	Outputs      int      // files in the outputs directory
	Unchecked    bool     // the pod had no sha256sum, so the manifest was not checked
}

// Collect downloads the outputs, job.log, exit code, markers and pod logs
// (the logs with the job's secrets [REDACTED]) into dir alone, holding the lease and checking all but the logs against the
// pod's SHA-256 manifest, then marks them retrieved so the watchdog may
// delete the pod. A failure is a *CollectError; the pod keeps its watchdog.
func (r *Run) Collect(ctx context.Context, dir string) (Collected, error) {
	got, err := r.collect(ctx, dir)
	if err != nil && ctx.Err() == nil {
		r.fail(ctx, err)
	}
	return got, err
}

func (r *Run) collect(ctx context.Context, dir string) (Collected, error) {
	st := r.last
	if st.ExitCode >= 0 {
		code := st.ExitCode
		r.rec.ExitCode = &code
	}
	if !st.Started() {
		return Collected{Dir: dir, NotCollected: true}, nil
	}
	got, err := r.fetch(ctx, dir, true)
	if err != nil {
		return Collected{}, &CollectError{err}
	}
	r.rec.Collected = r.now()
	r.save()
	r.emit(got.event())
	// The pod may go now: the watchdog deletes it on this marker should
	// the caller's delete fail. It is the last thing Collect does, so that
	// a Delete right after it is not raced by the watchdog for longer than
	// it must be.
	if err := r.put(ctx, watchdog.Retrieved, ""); err != nil && !r.podGone(ctx) {
		// A pod gone meanwhile is the marker at work, or gone anyway.
		r.warn(err)
	}
	if r.rec.Results.RequireOutputs && got.Outputs == 0 {
		return got, fmt.Errorf("%w: %s/%s on the pod held no file", ErrNoOutputs, r.rec.RunDir, jobctl.OutputsDir)
	}
	return got, nil
}

// CollectSoFar is Collect without the retrieved marker, for a job that may still
// run; an output file rewritten meanwhile fails with podssh.ErrChecksum.
func (r *Run) CollectSoFar(ctx context.Context, dir string) (Collected, error) {
	got, err := r.fetch(ctx, dir, false)
	if err != nil {
		return Collected{}, err
	}
	r.emit(got.event())
	return got, nil
}

// fetch downloads the result files into dir, holding the lease while it
// does when hold says so.
func (r *Run) fetch(ctx context.Context, dir string, hold bool) (Collected, error) {
	if err := r.liveConn(ctx); err != nil {
		return Collected{}, err
	}
	release := func() {}
	if hold {
		release = r.holdLease(ctx)
	}
	req := podssh.DownloadRequest{RemoteDir: r.rec.RunDir, Names: resultNames, Exclude: r.rec.Results.Exclude,
		Dir: dir, MaxBytes: r.rec.Results.maxBytes(), Growing: growingNames}
	var x podssh.Extracted
	download := func() error {
		return r.transfer(StageDownload, func(progress podssh.Progress) error {
			req := req
			req.Progress = progress
			var err error
			x, err = r.conn.Download(ctx, req)
			return err
		})
	}
	err := download()
	if errors.Is(err, podssh.ErrChecksum) {
		r.warn(fmt.Errorf("%w: downloading them again", err))
		if err = download(); errors.Is(err, podssh.ErrChecksum) {
			err = fmt.Errorf("a second download still differs: %w", err)
		}
	}
	release()
	// A failed download may have written the logs already.
	r.redactFiles(dir, growingNames)
	if err != nil {
		return Collected{}, err
	}
	if x.Unchecked {
		r.warn(errors.New("the pod has neither sha256sum nor busybox: the downloaded results were not checked"))
	}
	return Collected{Dir: dir, Files: x.Files, Dirs: x.Dirs, Bytes: x.Bytes, Skipped: x.Skipped,
		Outputs: x.PerName[jobctl.OutputsDir], Unchecked: x.Unchecked}, nil
}

func (c Collected) event() Event {
	return Event{Kind: EventCollected, Dir: c.Dir, Files: c.Files, Bytes: c.Bytes, Skipped: c.Skipped}
}
