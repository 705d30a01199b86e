// Package durable makes the directories flightd creates survive a power
// cut. A file's contents are durable once it is fsynced, but its name is
// durable only once the directory that holds it is fsynced too, and so on
// up for every directory that was created: the lake (package lake) and the
// log (package logstore) both create directory trees before acknowledging
// what they hold, through the file system layer their power-cut tests
// replace.
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// FS is the part of a file system MkdirAll uses.
type FS interface {
	Stat(name string) (fs.FileInfo, error)
	Mkdir(name string, perm fs.FileMode) error
	// SyncDir makes a directory's entries durable (fsync of the directory).
	SyncDir(dir string) error
}

// MkdirAll creates dir and its missing parents (0755). With sync it then
// syncs the parent of every directory it created, so that they exist after
// a power cut once MkdirAll returned; existing directories cost one stat
// and no sync. A concurrent creator that wins a Mkdir is fine: the parent is
// synced all the same, as that creator may not have synced yet.
func MkdirAll(fsys FS, dir string, sync bool) error {
	var missing []string // deepest first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := fsys.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return &fs.PathError{Op: "mkdir", Path: d, Err: syscall.ENOTDIR}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fsys.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	if !sync {
		return nil
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if p := filepath.Dir(missing[i]); p != missing[i] {
			if err := fsys.SyncDir(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// SyncDir fsyncs a directory of the operating system's file system.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
