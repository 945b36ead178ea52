// Package demo holds the launcher's built-in job: train.sh, a tiny POSIX sh
// stand-in for a trainer that prints progress, writes a checkpoint into the
// run's outputs, resumes from it, and checkpoints and exits when the launcher
// or the watchdog asks for a snapshot. It runs in about ten seconds.
package demo

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed train.sh
var files embed.FS

// Command is the demo job's command, run in the job directory.
const Command = "sh train.sh"

// WriteTo copies the demo job into dir, which it creates.
func WriteTo(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o755)
	})
}
