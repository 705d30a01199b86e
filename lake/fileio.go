package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
)

// FileIO is the storage the lake needs. Paths are slash-separated and absolute for the implementation.
// All writes that make something visible go through WriteAtomic (replace) or CreateExclusive (publish
// once); data files are written with Create under fresh unique names.
type FileIO interface {
	// Read returns the whole content of a file. A missing file returns an error matching fs.ErrNotExist.
	Read(ctx context.Context, path string) ([]byte, error)
	// Open opens a file for random access (Parquet footers).
	Open(ctx context.Context, path string) (ReadAtSeekCloser, error)
	// Create creates a new file for streaming writes; the file must not exist.
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

// LocalFileIO is FileIO over the local filesystem.
type LocalFileIO struct{}

var _ FileIO = LocalFileIO{}

// Read implements FileIO.
func (LocalFileIO) Read(_ context.Context, path string) ([]byte, error) { return os.ReadFile(path) }

// Open implements FileIO.
func (LocalFileIO) Open(_ context.Context, path string) (ReadAtSeekCloser, error) {
	return os.Open(path)
}

// Create implements FileIO.
func (LocalFileIO) Create(_ context.Context, path string) (io.WriteCloser, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

func writeTemp(path string, data []byte) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"."+uuid.NewString()+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
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
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// WriteAtomic implements FileIO with temp file + fsync + rename.
func (LocalFileIO) WriteAtomic(_ context.Context, path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// CreateExclusive implements FileIO with temp file + fsync + link(2), which fails if the target exists.
func (LocalFileIO) CreateExclusive(_ context.Context, path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", path, fs.ErrExist)
		}
		return err
	}
	return nil
}

// List implements FileIO.
func (LocalFileIO) List(_ context.Context, dir string) ([]FileInfo, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
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

// Exists implements FileIO.
func (LocalFileIO) Exists(_ context.Context, path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// Version implements FileIO.
func (LocalFileIO) Version(_ context.Context, path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano()), nil
}

// Remove implements FileIO.
func (LocalFileIO) Remove(_ context.Context, path string) error {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// RemoveAll implements FileIO.
func (LocalFileIO) RemoveAll(_ context.Context, path string) error { return os.RemoveAll(path) }

// MkdirAll implements FileIO.
func (LocalFileIO) MkdirAll(_ context.Context, dir string) error { return os.MkdirAll(dir, 0o755) }
