//go:build !unix

package fileio

import "io/fs"

// inode: no inode numbers here.
func inode(fs.FileInfo) (uint64, bool) { return 0, false }
