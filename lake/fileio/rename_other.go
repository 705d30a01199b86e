//go:build !linux

package fileio

import (
	"io/fs"
	"os"
)

// renameNoReplace renames from to to unless to exists (an empty directory included).
func renameNoReplace(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	}
	return os.Rename(from, to)
}

// renameNoReplaceIn is renameNoReplace beneath root.
func renameNoReplaceIn(root *os.Root, from, to string) error {
	if _, err := root.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	}
	return root.Rename(from, to)
}
