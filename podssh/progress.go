package podssh

import (
	"archive/tar"
	"io"
	"io/fs"
	"path/filepath"
)

// Progress is told how far a transfer got: done bytes of file content of
// total (-1 when unknown). It is called often, as the bytes move, from the
// transfer's own goroutine: keep it cheap, and safe for that goroutine.
type Progress func(done, total int64)

// Counter adds trees and files to one upload's tar stream, as AddTree and
// AddFile do, telling Progress the bytes of file content added so far of
// Total (TreeSize sums a tree's). The zero Counter counts for no one.
type Counter struct {
	Total    int64
	Progress Progress
	done     int64
}

// AddTree is AddTree, counted.
func (c *Counter) AddTree(tw *tar.Writer, dir, prefix string) error {
	return addTree(tw, dir, prefix, c.add)
}

// AddFile is AddFile, counted.
func (c *Counter) AddFile(tw *tar.Writer, name string, content []byte, mode fs.FileMode) error {
	if err := AddFile(tw, name, content, mode); err != nil {
		return err
	}
	c.add(int64(len(content)))
	return nil
}

// Done is the bytes of file content added so far.
func (c *Counter) Done() int64 { return c.done }

func (c *Counter) add(n int64) {
	c.done += n
	if c.Progress != nil {
		c.Progress(c.done, c.Total)
	}
}

// TreeSize counts the regular files under dir and their bytes, as
// AddTree would send them (links are not followed).
func TreeSize(dir string) (files int, bytes int64, err error) {
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		bytes += info.Size()
		return nil
	})
	return files, bytes, err
}

// counting tells add the size of each chunk read through it.
type counting struct {
	r   io.Reader
	add func(int64)
}

func (c counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && c.add != nil {
		c.add(int64(n))
	}
	return n, err
}
