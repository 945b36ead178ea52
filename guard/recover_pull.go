package guard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podssh"
)

// puller is Spec.Recover.PullEvery's state: Follow pulls into its dir
// every d while the job runs; a failed pull is a warning, and the last one
// is kept.
type puller struct {
	every time.Duration
	dir   string
	last  time.Time
	// warned says the exclude that matches the job's checkpoint was told.
	warned bool
}

// errTornPull says a pull's checkpoint is not whole (see SnapshotProof):
// the pulls before it are kept.
var errTornPull = errors.New("guard: the pulled checkpoint is not whole")

// The two newest whole pulls under a pull directory: a pull replaces the
// one before only once it is whole, and the one before that is kept.
const (
	pullName     = "latest"
	previousPull = "previous"
)

// PulledOutputs is the outputs of the newest whole pull into dir, "" if none.
func PulledOutputs(dir string) string {
	// A process killed between the renames of a pull left the pull
	// before it as the newest.
	for _, name := range []string{pullName, previousPull} {
		out := filepath.Join(dir, name, jobctl.OutputsDir)
		if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 && wholeCheckpoint(out) == nil {
			return out
		}
	}
	return ""
}

// pullIfDue makes Recover.PullEvery's pull when it is due.
func (r *Run) pullIfDue(ctx context.Context, st jobctl.State) {
	p := r.cfg.pull
	if p == nil || !st.Started() || st.Ended() {
		return
	}
	if p.last.IsZero() {
		// The first pull comes a period after the follow began: the job
		// has nothing to keep before.
		p.last = r.now()
		return
	}
	if r.since(p.last) < p.every {
		return
	}
	p.last = r.now()
	if _, err := r.Pull(ctx, p.dir); err != nil && ctx.Err() == nil {
		r.warn(fmt.Errorf("pulling the outputs so far (the last pull is kept): %w", err))
	}
}

// Pull downloads the results so far, with the checkpoint snapshot.json
// names, into dir/latest once whole, the pull before in dir/previous.
func (r *Run) Pull(ctx context.Context, dir string) (Collected, error) {
	tmp := filepath.Join(dir, ".pull")
	_ = os.RemoveAll(tmp)
	got, err := r.fetch(ctx, tmp, false)
	if err == nil {
		err = r.pullCheckpoint(ctx, tmp)
	}
	if err == nil {
		err = wholeCheckpoint(filepath.Join(tmp, jobctl.OutputsDir))
	}
	if err == nil {
		err = keepPull(tmp, dir)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return Collected{}, err
	}
	got.Dir = filepath.Join(dir, pullName)
	r.emit(Event{Kind: EventPulled, Dir: got.Dir, Files: got.Files, Bytes: got.Bytes})
	return got, nil
}

// pullCheckpoint brings into the pull in tmp the checkpoint its
// snapshot.json names in the outputs when Results.Exclude left it on the
// pod: a resume needs it whatever the results' download leaves.
func (r *Run) pullCheckpoint(ctx context.Context, tmp string) error {
	p, err := ReadSnapshotProof(filepath.Join(tmp, jobctl.OutputsDir))
	if err != nil {
		return nil
	}
	name, ok := checkpointPath(p)
	if !ok {
		return nil
	}
	excludes := r.rec.Results.Exclude
	if len(excludes) == 0 {
		return nil
	}
	pattern := excludedBy(name, excludes)
	if fi, err := os.Stat(filepath.Join(tmp, jobctl.OutputsDir, filepath.FromSlash(name))); pattern == "" && err == nil && fi.IsDir() {
		// A checkpoint directory may hold what an exclude leaves.
		pattern = r.excludedInside(ctx, name, excludes)
	}
	if pattern == "" {
		return nil
	}
	if p := r.cfg.pull; p == nil || !p.warned {
		if p != nil {
			p.warned = true
		}
		r.warn(fmt.Errorf("the exclude %q matches the checkpoint %s that the job named in %s: it is pulled all the same, for a recovery to resume from (the results' download still leaves it)",
			pattern, path.Join(jobctl.OutputsDir, name), SnapshotFile))
	}
	req := podssh.DownloadRequest{RemoteDir: r.rec.RunDir, Names: []string{path.Join(jobctl.OutputsDir, name)},
		Dir: tmp, MaxBytes: r.rec.Results.maxBytes()}
	if _, err := r.conn.Download(ctx, req); err != nil {
		return fmt.Errorf("pulling the checkpoint %s: %w", name, err)
	}
	return nil
}

// excludedInside is the exclude that matches a file or directory inside
// the checkpoint directory name on the pod, "" when none does.
func (r *Run) excludedInside(ctx context.Context, name string, excludes []string) string {
	ctx, cancel := context.WithTimeout(ctx, shortCommand)
	defer cancel()
	dir := jobctl.RunFile(r.rec.RunDir, path.Join(jobctl.OutputsDir, name))
	for _, pattern := range excludes {
		out, err := r.conn.Output(ctx, podssh.Command(`[ -n "$(find "$1" -name "$2" -print 2>/dev/null | head -n 1)" ] && echo excluded`, dir, pattern), nil)
		if err == nil && jobctl.LastLine(out) == "excluded" {
			return pattern
		}
	}
	return ""
}

// checkpointPath is the proof's checkpoint as a clean path inside the
// outputs; false when it names a place outside them.
func checkpointPath(p SnapshotProof) (string, bool) {
	name := path.Clean(p.Checkpoint)
	if path.IsAbs(name) || name == "." || name == ".." || strings.HasPrefix(name, "../") {
		return "", false
	}
	return name, true
}

// excludedBy is the pattern of excludes that matches an element of name,
// which the results' download would then leave; "" when none does.
func excludedBy(name string, excludes []string) string {
	for _, elem := range strings.Split(name, "/") {
		for _, pattern := range excludes {
			if ok, _ := path.Match(pattern, elem); ok {
				return pattern
			}
		}
	}
	return ""
}

// wholeCheckpoint checks the checkpoint that the snapshot.json of the
// outputs in out names: there, and of the size and SHA-256 the proof
// gives for a file. Outputs without a proof, or with a checkpoint outside
// them, claim nothing to check.
func wholeCheckpoint(out string) error {
	p, err := ReadSnapshotProof(out)
	switch {
	case errors.Is(err, ErrNoSnapshotProof):
		return nil
	case err != nil:
		return err
	}
	name, ok := checkpointPath(p)
	if !ok {
		return nil
	}
	file := filepath.Join(out, filepath.FromSlash(name))
	fi, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("%w: the checkpoint %s that %s names is missing: %w", errTornPull, name, SnapshotFile, err)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	if p.Bytes > 0 && fi.Size() != p.Bytes {
		return fmt.Errorf("%w: the checkpoint %s holds %d bytes, %s says %d", errTornPull, name, fi.Size(), SnapshotFile, p.Bytes)
	}
	if p.SHA256 != "" {
		sum, err := fileSHA256(file)
		if err != nil {
			return err
		}
		if !strings.EqualFold(sum, p.SHA256) {
			return fmt.Errorf("%w: the checkpoint %s's SHA-256 is %s, %s says %s", errTornPull, name, sum, SnapshotFile, p.SHA256)
		}
	}
	return nil
}

// fileSHA256 is a file's SHA-256 in hex.
func fileSHA256(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// keepPull makes the whole pull in tmp dir's latest, the latest before it
// its previous: at every moment a whole pull is there to resume from.
func keepPull(tmp, dir string) error {
	latest, previous := filepath.Join(dir, pullName), filepath.Join(dir, previousPull)
	if _, err := os.Stat(latest); err == nil {
		if err := os.RemoveAll(previous); err != nil {
			return err
		}
		if err := os.Rename(latest, previous); err != nil {
			return err
		}
	}
	return os.Rename(tmp, latest)
}

// pullDir is where the run's outputs are pulled, "" when nowhere.
func (r *Run) pullDir() string {
	if r.cfg.pull != nil {
		return r.cfg.pull.dir
	}
	return r.rec.Recovery.PullDir
}

// pullFromRecovery arms the Recovery's pulls.
func (c *config) pullFromRecovery(rc Recovery) {
	if c.pull == nil && rc.PullEvery > 0 && rc.PullDir != "" {
		c.pull = &puller{every: rc.PullEvery, dir: rc.PullDir}
	}
}
