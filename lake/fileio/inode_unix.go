//go:build unix

package fileio

import (
	"io/fs"
	"syscall"
)

// inode returns the inode number of a file the operating system described.
func inode(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Ino), true
}
