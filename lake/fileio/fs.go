package fileio

import (
	"io"
	"io/fs"
	"os"

	"github.com/flightd/flightd/internal/durable"
)

// FS is the part of a file system Local uses: OSFS (the operating system's, paths as they
// are), the os.Root of a directory (paths confined to it by descriptor, see NewRooted), or, in
// the power-cut tests, a file system in memory that keeps only what was synced when it cuts
// the power (fileiotest.StrictMem). Paths are absolute; errors are *fs.PathError or
// *os.LinkError naming them.
type FS interface {
	// OpenFile opens a file with the flags of os.OpenFile (Local uses O_RDONLY and
	// O_WRONLY|O_CREATE|O_EXCL).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// ReadFile returns a file's content.
	ReadFile(name string) ([]byte, error)
	Mkdir(name string, perm fs.FileMode) error
	Stat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory sorted by name (a missing one: an error matching fs.ErrNotExist).
	ReadDir(name string) ([]FileInfo, error)
	Rename(oldpath, newpath string) error
	// RenameNoReplace renames unless newpath exists (an empty directory included): then it
	// fails with an error matching fs.ErrExist.
	RenameNoReplace(oldpath, newpath string) error
	Link(oldpath, newpath string) error
	Remove(name string) error
	RemoveAll(name string) error
	// SyncDir makes the entries of a directory durable (fsync of the directory).
	SyncDir(name string) error
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Seeker
	io.Closer
	Sync() error
}

// createExcl creates a file that must not exist, for writing.
const createExcl = os.O_WRONLY | os.O_CREATE | os.O_EXCL

// OSFS is the operating system's file system.
type OSFS struct{}

var _ FS = OSFS{}

func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // no typed nil in the interface
	}
	return f, nil
}

// ReadFile reads a whole file, sized by a stat, in one read.
func (OSFS) ReadFile(name string) ([]byte, error)          { return os.ReadFile(name) }
func (OSFS) Mkdir(name string, perm fs.FileMode) error     { return os.Mkdir(name, perm) }
func (OSFS) Stat(name string) (fs.FileInfo, error)         { return os.Stat(name) }
func (OSFS) Rename(oldpath, newpath string) error          { return os.Rename(oldpath, newpath) }
func (OSFS) RenameNoReplace(oldpath, newpath string) error { return renameNoReplace(oldpath, newpath) }
func (OSFS) Link(oldpath, newpath string) error            { return os.Link(oldpath, newpath) }
func (OSFS) Remove(name string) error                      { return os.Remove(name) }
func (OSFS) RemoveAll(name string) error                   { return os.RemoveAll(name) }

func (OSFS) ReadDir(name string) ([]FileInfo, error) {
	ents, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(ents))
	for _, e := range ents {
		fi := FileInfo{Name: e.Name(), IsDir: e.IsDir()}
		if !e.IsDir() {
			if info, err := e.Info(); err == nil {
				fi.Size = info.Size()
				fi.ModTime = info.ModTime()
			}
		}
		out = append(out, fi)
	}
	return out, nil
}

func (OSFS) SyncDir(name string) error { return durable.SyncDir(name) }
