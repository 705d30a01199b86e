package lake

import (
	"context"
	"fmt"
	"path/filepath"
)

// DirRenamer is a FileIO that renames a directory in one step, so that
// readers see it whole under the old name or whole under the new one
// (LocalFileIO: rename(2)). Object stores have no such operation: S3 would
// copy and delete every object of the directory one by one, and a failure
// midway would leave parts of it under both names, so S3FileIO is not one.
type DirRenamer interface {
	// RenameDir renames the directory from to to. to must not exist, not
	// even as an empty directory (an error matching fs.ErrExist); to's
	// parent must exist. The new name is durable when it returns.
	RenameDir(ctx context.Context, from, to string) error
}

var _ DirRenamer = LocalFileIO{}

// RenameDir implements DirRenamer: rename(2) without replacing (RENAME_NOREPLACE where the
// file system has it), then both parents are synced.
func (l LocalFileIO) RenameDir(_ context.Context, from, to string) error {
	sys := l.sys()
	fi, err := sys.Stat(from)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("rename %s: not a directory", from)
	}
	if _, err := sys.Stat(filepath.Dir(to)); err != nil {
		return err
	}
	if err := sys.RenameNoReplace(from, to); err != nil {
		return err
	}
	if err := sys.SyncDir(filepath.Dir(to)); err != nil {
		return err
	}
	if d := filepath.Dir(from); d != filepath.Dir(to) {
		return sys.SyncDir(d)
	}
	return nil
}

// RenameDir implements DirRenamer when the underlying FileIO does; on any other (S3) it
// fails with ErrUnsupported.
func (r *rootedFileIO) RenameDir(ctx context.Context, from, to string) error {
	dr, ok := r.inner.(DirRenamer)
	if !ok {
		return fmt.Errorf("%w: the warehouse's storage cannot rename a directory in one step", ErrUnsupported)
	}
	absFrom, err := r.resolve(from)
	if err != nil {
		return err
	}
	absTo, err := r.resolve(to)
	if err != nil {
		return err
	}
	if absFrom == r.root || absTo == r.root {
		return fmt.Errorf("%w: the warehouse itself cannot be renamed", ErrInvalidPath)
	}
	return r.rel(dr.RenameDir(ctx, absFrom, absTo))
}

// canRenameDirs reports whether fio renames directories in one step.
func canRenameDirs(fio FileIO) bool {
	if r, ok := fio.(*rootedFileIO); ok {
		fio = r.inner
	}
	_, ok := fio.(DirRenamer)
	return ok
}
