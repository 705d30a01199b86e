package fileio

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames from to to unless to exists (an empty directory included), in one
// step where the file system supports RENAME_NOREPLACE; elsewhere it checks first.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	return renamedNoReplace(err, from, to, os.Lstat, os.Rename)
}

// renamedNoReplace is the outcome of renameat2(RENAME_NOREPLACE) of from to to that
// returned err: an existing target is fs.ErrExist; where the file system lacks the flag,
// the rename is made by rename after checking with lstat that to does not exist.
func renamedNoReplace(err error, from, to string, lstat func(string) (fs.FileInfo, error), rename func(string, string) error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		if _, serr := lstat(to); serr == nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
		}
		return rename(from, to)
	}
	return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
}

// renameNoReplaceIn is renameNoReplace beneath root: both parent directories are opened
// through root, and the last elements are renamed between them (renameat2 does not follow
// them).
func renameNoReplaceIn(root *os.Root, from, to string) error {
	fromDir, fromBase := splitBeneath(from)
	toDir, toBase := splitBeneath(to)
	fd, err := root.Open(fromDir)
	if err != nil {
		return err
	}
	defer fd.Close()
	td, err := root.Open(toDir)
	if err != nil {
		return err
	}
	defer td.Close()
	err = unix.Renameat2(int(fd.Fd()), fromBase, int(td.Fd()), toBase, unix.RENAME_NOREPLACE)
	return renamedNoReplace(err, from, to, root.Lstat, root.Rename)
}
