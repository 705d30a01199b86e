package fileio

import (
	"context"
	"errors"
	"io"
	"sort"
	"sync"
	"time"
)

// ErrInvalidPath marks a file access a Rooted FileIO refused: a path that does not resolve
// under its root, one holding a NUL byte, or, on a local disk, one that leads outside the
// root through a symbolic link.
var ErrInvalidPath = errors.New("fileio: invalid path")

// FileIO is the storage the lake needs. Paths are slash-separated and absolute for the
// implementation (a Rooted FileIO takes paths relative to its root too). All writes that make
// something visible go through WriteAtomic (replace) or CreateExclusive (publish once); data
// files are written with Create under fresh unique names.
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
	// Open opens a file for random access (Parquet footers). A missing file returns an error
	// matching fs.ErrNotExist.
	Open(ctx context.Context, path string) (ReadAtSeekCloser, error)
	// Create creates a new file for streaming writes, and the directories above it. The file
	// must not exist: then Create or Close fails with an error matching fs.ErrExist and the
	// file keeps its content. Close makes the content durable.
	Create(ctx context.Context, path string) (io.WriteCloser, error)
	// WriteAtomic replaces path with data so that readers see either the old or the new content.
	WriteAtomic(ctx context.Context, path string, data []byte) error
	// CreateExclusive publishes data at path completely or not at all, failing with an error
	// matching fs.ErrExist when path already exists. Of concurrent creators of one path, in
	// this process or another, exactly one succeeds.
	CreateExclusive(ctx context.Context, path string, data []byte) error
	// List returns the entries of a directory sorted by name (missing directory: empty, no error).
	List(ctx context.Context, dir string) ([]FileInfo, error)
	// Exists reports whether a file or a directory exists at path.
	Exists(ctx context.Context, path string) (bool, error)
	// Version identifies a file's current content (see Local.Version and the S3 FileIO's): a
	// file replaced by other bytes gets another version. A missing file returns an error
	// matching fs.ErrNotExist. It costs one stat or HEAD.
	Version(ctx context.Context, path string) (string, error)
	// Remove removes a file; RemoveAll a tree (or a file). Missing paths are not an error.
	Remove(ctx context.Context, path string) error
	RemoveAll(ctx context.Context, path string) error
	// MkdirAll creates a directory and its missing parents; an existing one is not an error.
	MkdirAll(ctx context.Context, dir string) error
	// SyncDir makes the entries of dir (files created, renamed, linked or removed in it)
	// durable: fsync of the directory locally, where a missing directory is an error matching
	// fs.ErrNotExist; nothing on S3.
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

// DirRenamer is a FileIO that renames a directory in one step, so that
// readers see it whole under the old name or whole under the new one
// (Local: rename(2)). Object stores have no such operation: S3 would
// copy and delete every object of the directory one by one, and a failure
// midway would leave parts of it under both names, so the S3 FileIO is not one.
type DirRenamer interface {
	// RenameDir renames the directory from to to. to must not exist, not
	// even as an empty directory (an error matching fs.ErrExist); to's
	// parent must exist. The new name is durable when it returns.
	RenameDir(ctx context.Context, from, to string) error
}

// ObjectStore is implemented by a FileIO over an object store (the S3 FileIO): its paths are
// slash-separated keys below "/", which it also names by URL. A Rooted FileIO over one cleans
// paths as keys, accepts the store's URLs and removes them from error messages.
type ObjectStore interface {
	FileIO
	// URL returns the URL of the object or prefix at path p ("s3://bucket/key").
	URL(p string) string
	// PathOf returns the path of u when u is a URL of the store's kind (isURL); err is set
	// when u is such a URL but names another store (another bucket).
	PathOf(u string) (p string, isURL bool, err error)
}

// unwrapper is a FileIO that wraps another (Rooted).
type unwrapper interface{ Unwrap() FileIO }

// IsLocal reports whether fio, or the FileIO it wraps, is a Local: reads from a local
// file system, where a small read is a system call, not a request to a store (S3: one GET
// each).
func IsLocal(fio FileIO) bool {
	for {
		switch f := fio.(type) {
		case Local:
			return true
		case unwrapper:
			fio = f.Unwrap()
		default:
			return false
		}
	}
}

// SyncDirs syncs each directory once (the directories of the files a commit is about to
// name), up to 16 at a time: concurrent fsyncs share the file system's journal commits.
func SyncDirs(ctx context.Context, fio FileIO, dirs map[string]bool) error {
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	if len(sorted) == 1 {
		return fio.SyncDir(ctx, sorted[0])
	}
	sem := make(chan struct{}, syncParallel)
	errs := make([]error, len(sorted))
	var wg sync.WaitGroup
	for i, d := range sorted {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := ctx.Err(); err != nil {
				errs[i] = err
				return
			}
			errs[i] = fio.SyncDir(ctx, d)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

const syncParallel = 16
