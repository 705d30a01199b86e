package fileio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/flightd/flightd/internal/durable"
)

// Local is FileIO over a local file system. Its zero value uses the operating system's
// (paths as they are); NewRooted confines it to a directory by descriptor.
//
// Its files are synced when Close of Create returns, before WriteAtomic renames and before
// CreateExclusive links; MkdirAll (and Create, WriteAtomic, CreateExclusive for the
// directories they create) syncs the parent of each directory it created, RemoveAll the
// parent of what it removed, RenameDir both parents. Names of files created, replaced or
// removed are synced by SyncDir.
type Local struct {
	// FS is the file system; nil is the operating system's (OSFS). Tests put a file system
	// here that keeps only what was synced (fileiotest.StrictMem).
	FS FS
}

var (
	_ FileIO     = Local{}
	_ DirRenamer = Local{}
)

func (l Local) sys() FS {
	if l.FS == nil {
		return OSFS{}
	}
	return l.FS
}

// Read implements FileIO.
func (l Local) Read(_ context.Context, path string) ([]byte, error) {
	return l.sys().ReadFile(path)
}

// Open implements FileIO.
func (l Local) Open(_ context.Context, path string) (ReadAtSeekCloser, error) {
	return l.sys().OpenFile(path, os.O_RDONLY, 0)
}

// Create implements FileIO: the file is synced when it is closed.
func (l Local) Create(_ context.Context, path string) (io.WriteCloser, error) {
	if err := l.mkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := l.sys().OpenFile(path, createExcl, 0o644)
	if err != nil {
		return nil, err
	}
	return &syncOnClose{f: f}, nil
}

// syncOnClose is a file being written that is synced once, when it is closed.
type syncOnClose struct {
	f      File
	closed bool
}

func (w *syncOnClose) Write(p []byte) (int, error) { return w.f.Write(p) }

func (w *syncOnClose) Close() error {
	if w.closed {
		return fs.ErrClosed
	}
	w.closed = true
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l Local) writeTemp(path string, data []byte) (string, error) {
	dir := filepath.Dir(path)
	if err := l.mkdirAll(dir); err != nil {
		return "", err
	}
	sys := l.sys()
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"."+uuid.NewString()+".tmp")
	f, err := sys.OpenFile(tmp, createExcl, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		sys.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// WriteAtomic implements FileIO with temp file + fsync + rename.
func (l Local) WriteAtomic(_ context.Context, path string, data []byte) error {
	tmp, err := l.writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := l.sys().Rename(tmp, path); err != nil {
		l.sys().Remove(tmp)
		return err
	}
	return nil
}

// CreateExclusive implements FileIO with temp file + fsync + link(2), which fails if the target exists.
func (l Local) CreateExclusive(_ context.Context, path string, data []byte) error {
	tmp, err := l.writeTemp(path, data)
	if err != nil {
		return err
	}
	defer l.sys().Remove(tmp)
	if err := l.sys().Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", path, fs.ErrExist)
		}
		return err
	}
	return nil
}

// List implements FileIO.
func (l Local) List(_ context.Context, dir string) ([]FileInfo, error) {
	ents, err := l.sys().ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return ents, err
}

// Exists implements FileIO.
func (l Local) Exists(_ context.Context, path string) (bool, error) {
	_, err := l.sys().Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// Version implements FileIO: the file's size, modification time and, where the file system
// has them, its inode number. A file replaced by WriteAtomic gets another version than the
// file it replaced (the new file has another inode, as both existed at once); a file removed
// and created again gets another unless it has the same size, the same modification time
// (file systems keep it to a clock tick of a few milliseconds) and the removed file's inode
// number.
func (l Local) Version(_ context.Context, path string) (string, error) {
	fi, err := l.sys().Stat(path)
	if err != nil {
		return "", err
	}
	v := fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
	if ino, ok := inode(fi); ok {
		v += fmt.Sprintf("/%d", ino)
	}
	return v, nil
}

// Remove implements FileIO.
func (l Local) Remove(_ context.Context, path string) error {
	err := l.sys().Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// RemoveAll implements FileIO; the removal is durable when it returns (its parent is synced).
func (l Local) RemoveAll(_ context.Context, path string) error { return l.removeAllDurable(path) }

// MkdirAll implements FileIO.
func (l Local) MkdirAll(_ context.Context, dir string) error { return l.mkdirAll(dir) }

// SyncDir implements FileIO.
func (l Local) SyncDir(_ context.Context, dir string) error { return l.sys().SyncDir(dir) }

// mkdirAll creates dir and its missing parents and syncs the parent of every directory it
// created (durable.MkdirAll).
func (l Local) mkdirAll(dir string) error { return durable.MkdirAll(l.sys(), dir, true) }

// RemoveAll of a directory (a dropped table or database) is made durable in its parent.
func (l Local) removeAllDurable(path string) error {
	sys := l.sys()
	if _, err := sys.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := sys.RemoveAll(path); err != nil {
		return err
	}
	if p := filepath.Dir(filepath.Clean(path)); p != path {
		return sys.SyncDir(p)
	}
	return nil
}
