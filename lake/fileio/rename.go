package fileio

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
)

// RenameDir implements DirRenamer: rename(2) without replacing (RENAME_NOREPLACE where the
// file system has it), then both parents are synced.
func (l Local) RenameDir(_ context.Context, from, to string) error {
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
// fails with an error matching errors.ErrUnsupported. Neither name may be the root.
func (r *Rooted) RenameDir(ctx context.Context, from, to string) error {
	dr, ok := r.inner.(DirRenamer)
	if !ok {
		return fmt.Errorf("fileio: the storage cannot rename a directory in one step: %w", errors.ErrUnsupported)
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
		return fmt.Errorf("%w: the root itself cannot be renamed", ErrInvalidPath)
	}
	return r.rel(dr.RenameDir(ctx, absFrom, absTo))
}
