package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/google/uuid"
)

// FileIO is the storage the lake needs. Paths are slash-separated and absolute for the implementation.
// All writes that make something visible go through WriteAtomic (replace) or CreateExclusive (publish
// once); data files are written with Create under fresh unique names.
//
// Durability (what survives a power cut): the content of a file written with Create is durable
// once Close returned, that of WriteAtomic and CreateExclusive once they returned; a directory
// created by Create, WriteAtomic, CreateExclusive or MkdirAll is durable in its parent when the
// call returned. The name of a new, replaced or removed file is durable only after SyncDir of its
// directory: callers group those (one SyncDir per directory before the commit that names the
// files). On S3 a completed PUT or DELETE is durable and SyncDir does nothing.
type FileIO interface {
	// Read returns the whole content of a file. A missing file returns an error matching fs.ErrNotExist.
	Read(ctx context.Context, path string) ([]byte, error)
	// Open opens a file for random access (Parquet footers).
	Open(ctx context.Context, path string) (ReadAtSeekCloser, error)
	// Create creates a new file for streaming writes; the file must not exist. Close makes
	// its content durable.
	Create(ctx context.Context, path string) (io.WriteCloser, error)
	// WriteAtomic replaces path with data so that readers see either the old or the new content.
	WriteAtomic(ctx context.Context, path string, data []byte) error
	// CreateExclusive publishes data at path completely or not at all, failing with an error
	// matching fs.ErrExist when path already exists (also against concurrent creators).
	CreateExclusive(ctx context.Context, path string, data []byte) error
	// List returns the entries of a directory (missing directory: empty, no error).
	List(ctx context.Context, dir string) ([]FileInfo, error)
	Exists(ctx context.Context, path string) (bool, error)
	// Version identifies a file's current content (local: size and modification time;
	// S3: the object's ETag and size): a file replaced by other bytes gets another version.
	// A missing file returns an error matching fs.ErrNotExist. It costs one stat or HEAD.
	Version(ctx context.Context, path string) (string, error)
	// Remove removes a file; RemoveAll a tree. Missing paths are not an error.
	Remove(ctx context.Context, path string) error
	RemoveAll(ctx context.Context, path string) error
	MkdirAll(ctx context.Context, dir string) error
	// SyncDir makes the entries of dir (files created, renamed, linked or removed in it)
	// durable: fsync of the directory locally, nothing on S3. A missing directory is an error.
	SyncDir(ctx context.Context, dir string) error
}

// ReadAtSeekCloser is a random-access file.
type ReadAtSeekCloser interface {
	io.ReaderAt
	io.ReadSeeker
	io.Closer
}

// FileInfo describes a directory entry.
type FileInfo struct {
	Name  string
	IsDir bool
	Size  int64
	// ModTime is the last modification time of a file (zero for directories and when unknown).
	ModTime time.Time
}

// LocalFileIO is FileIO over the local filesystem. Its zero value uses the operating system.
type LocalFileIO struct {
	fs localFS // nil: the operating system (tests put a strict in-memory file system here)
}

var _ FileIO = LocalFileIO{}

func (l LocalFileIO) sys() localFS {
	if l.fs == nil {
		return osFS{}
	}
	return l.fs
}

// Read implements FileIO.
func (l LocalFileIO) Read(_ context.Context, path string) ([]byte, error) {
	return l.sys().ReadFile(path)
}

// localReads reports whether fio reads from a local file system, where a
// small read is a system call, not a request to a store (S3: one GET each).
func localReads(fio FileIO) bool {
	switch f := fio.(type) {
	case LocalFileIO:
		return true
	case *rootedFileIO:
		return localReads(f.inner)
	}
	return false
}

// Open implements FileIO.
func (l LocalFileIO) Open(_ context.Context, path string) (ReadAtSeekCloser, error) {
	return l.sys().OpenFile(path, osRDONLY, 0)
}

// Create implements FileIO: the file is synced when it is closed.
func (l LocalFileIO) Create(_ context.Context, path string) (io.WriteCloser, error) {
	if err := l.mkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := l.sys().OpenFile(path, osCreateExcl, 0o644)
	if err != nil {
		return nil, err
	}
	return &syncOnClose{f: f}, nil
}

// syncOnClose is a file being written that is synced once, when it is closed.
type syncOnClose struct {
	f      localFile
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

func (l LocalFileIO) writeTemp(path string, data []byte) (string, error) {
	dir := filepath.Dir(path)
	if err := l.mkdirAll(dir); err != nil {
		return "", err
	}
	sys := l.sys()
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"."+uuid.NewString()+".tmp")
	f, err := sys.OpenFile(tmp, osCreateExcl, 0o644)
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
func (l LocalFileIO) WriteAtomic(_ context.Context, path string, data []byte) error {
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
func (l LocalFileIO) CreateExclusive(_ context.Context, path string, data []byte) error {
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
func (l LocalFileIO) List(_ context.Context, dir string) ([]FileInfo, error) {
	ents, err := l.sys().ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return ents, err
}

// Exists implements FileIO.
func (l LocalFileIO) Exists(_ context.Context, path string) (bool, error) {
	_, err := l.sys().Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// Version implements FileIO.
func (l LocalFileIO) Version(_ context.Context, path string) (string, error) {
	fi, err := l.sys().Stat(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano()), nil
}

// Remove implements FileIO.
func (l LocalFileIO) Remove(_ context.Context, path string) error {
	err := l.sys().Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// RemoveAll implements FileIO; the removal is durable when it returns (its parent is synced).
func (l LocalFileIO) RemoveAll(_ context.Context, path string) error { return l.removeAllDurable(path) }

// MkdirAll implements FileIO.
func (l LocalFileIO) MkdirAll(_ context.Context, dir string) error { return l.mkdirAll(dir) }

// SyncDir implements FileIO.
func (l LocalFileIO) SyncDir(_ context.Context, dir string) error { return l.sys().SyncDir(dir) }
