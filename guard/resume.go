package guard

import (
	"fmt"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/overbrainer/overbrainer-go/internal/jobctl"
	"github.com/overbrainer/overbrainer-go/podssh"
)

// checkResume refuses a Job.ResumeFrom that could not be uploaded whole
// into the job's outputs and collected back: not a directory, a link that
// leads out of it (the pod has no such place) or into nothing, a special
// file, or more bytes than the results' cap (the run could then never
// bring its outputs home).
func (j Job) checkResume(prefix string, maxBytes int64) []error {
	if j.ResumeFrom == "" {
		return nil
	}
	bad := func(format string, args ...any) []error {
		return []error{&FieldError{Field: prefix + "ResumeFrom", Reason: fmt.Sprintf(format, args...)}}
	}
	root, err := filepath.EvalSymlinks(j.ResumeFrom)
	if err != nil {
		return bad("%s: %v", j.ResumeFrom, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return bad("%s is not a directory", j.ResumeFrom)
	}
	var size int64
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch t := d.Type(); {
		case t.IsDir():
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			size += info.Size()
		case t&fs.ModeSymlink != 0:
			to, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("the link %s leads nowhere: %w", p, err)
			}
			if rel, err := filepath.Rel(root, to); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return fmt.Errorf("the link %s leads out of it, to %s", p, to)
			}
		default:
			return fmt.Errorf("%s is not a regular file, directory or link", p)
		}
		return nil
	})
	if err != nil {
		return bad("%v", err)
	}
	if size > maxBytes {
		return bad("%s holds %s, more than the results' cap of %s (Results.MaxGB): the run could not collect them back",
			j.ResumeFrom, termtext.ByteSize(size), termtext.ByteSize(maxBytes))
	}
	return nil
}

// resumeEvent tells what of Job.ResumeFrom went into the outputs.
func (r *Run) resumeEvent(dir string) {
	files, size, err := podssh.TreeSize(dir)
	if err != nil {
		r.warn(fmt.Errorf("counting the resumed outputs: %w", err))
	}
	r.emit(Event{Kind: EventResumed, Dir: dir, Remote: jobctl.RunFile(r.rec.RunDir, jobctl.OutputsDir), Files: files, Bytes: size, Proof: proofIn(dir)})
}
