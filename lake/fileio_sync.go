package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/flightd/flightd/internal/durable"
)

// localFS is the part of the operating system LocalFileIO uses: osFS (paths as they are),
// rootFS (paths confined to the warehouse by file descriptor, a catalog's), or, in the power-cut
// test, a strict in-memory file system, which keeps only what was synced when it cuts the power.
type localFS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (localFile, error)
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

// localFile is an open file of a localFS.
type localFile interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Seeker
	io.Closer
	Sync() error
}

const (
	osRDONLY     = os.O_RDONLY
	osCreateExcl = os.O_WRONLY | os.O_CREATE | os.O_EXCL
)

// osFS is localFS over the operating system.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (localFile, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // no typed nil in the interface
	}
	return f, nil
}

func (osFS) ReadFile(name string) ([]byte, error)          { return os.ReadFile(name) } // sized by a stat, one read
func (osFS) Mkdir(name string, perm fs.FileMode) error     { return os.Mkdir(name, perm) }
func (osFS) Stat(name string) (fs.FileInfo, error)         { return os.Stat(name) }
func (osFS) Rename(oldpath, newpath string) error          { return os.Rename(oldpath, newpath) }
func (osFS) RenameNoReplace(oldpath, newpath string) error { return renameNoReplace(oldpath, newpath) }
func (osFS) Link(oldpath, newpath string) error            { return os.Link(oldpath, newpath) }
func (osFS) Remove(name string) error                      { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                   { return os.RemoveAll(name) }

func (osFS) ReadDir(name string) ([]FileInfo, error) {
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

func (osFS) SyncDir(name string) error { return durable.SyncDir(name) }

// mkdirAll creates dir and its missing parents and syncs the parent of every directory it
// created (durable.MkdirAll).
func (l LocalFileIO) mkdirAll(dir string) error { return durable.MkdirAll(l.sys(), dir, true) }

// RemoveAll of a directory (a dropped table or database) is made durable in its parent.
func (l LocalFileIO) removeAllDurable(path string) error {
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

// syncDirs syncs each directory once (the directories of the files a commit is about to name),
// up to syncParallel at a time: concurrent fsyncs share the file system's journal commits.
func syncDirs(ctx context.Context, fio FileIO, dirs map[string]bool) error {
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

// commitDirs are the directories whose entries must be durable before a snapshot that adds the
// given entries is published: the bucket directory of every added data file (and its extra
// files) and the manifest directory. Their parents were synced when they were created.
func (t *Table) commitDirs(entries []ManifestEntry) (map[string]bool, error) {
	dirs := map[string]bool{filepath.Join(t.path, "manifest"): true}
	ts := t.schema
	types := make([]DataType, len(ts.PartitionKeys))
	for i, pk := range ts.PartitionKeys {
		types[i] = ts.Fields[ts.FieldIndex(pk)].Type
	}
	seen := map[string]bool{}
	for i := range entries {
		e := &entries[i]
		if e.Kind != FileKindAdd || (e.File.ExternalPath != nil && *e.File.ExternalPath != "") {
			continue
		}
		k := string(e.Partition) + "/" + strconv.Itoa(int(e.Bucket))
		if seen[k] {
			continue
		}
		seen[k] = true
		_, row, err := deserializeBinaryRow(e.Partition)
		if err != nil {
			return nil, err
		}
		vals, err := decodeBinaryRow(types, row)
		if err != nil {
			return nil, err
		}
		dirs[t.bucketDir(types, vals, e.Bucket)] = true
	}
	return dirs, nil
}

// syncBeforePublish makes the files a snapshot will name durable under their names: their
// contents were synced when they were closed or created, their directories are synced here,
// once each.
func (t *Table) syncBeforePublish(ctx context.Context, entries []ManifestEntry) error {
	dirs, err := t.commitDirs(entries)
	if err != nil {
		return fmt.Errorf("lake: %s: %w", t.FullName(), err)
	}
	if err := syncDirs(ctx, t.fio, dirs); err != nil {
		return fmt.Errorf("lake: %s: sync before commit: %w", t.FullName(), err)
	}
	return nil
}

// errPublishedNotSynced: the snapshot was created, visible to readers, but its directory could
// not be synced. Nothing it names may be removed.
var errPublishedNotSynced = errors.New("created but not synced")

// syncPublished makes snapshot-id durable once it was created. If that fails the snapshot is
// visible but may not survive a power cut: the commit fails, but the files it names stay
// (*written is cleared), since readers may already use them.
func (t *Table) syncPublished(ctx context.Context, id int64, written *[]string) error {
	if err := t.fio.SyncDir(ctx, t.snapshotDir()); err != nil {
		*written = nil
		return fmt.Errorf("lake: %s: snapshot %d %w: %w", t.FullName(), id, errPublishedNotSynced, err)
	}
	return nil
}
