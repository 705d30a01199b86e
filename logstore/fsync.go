package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// sysOps are the file system calls through which the store makes its own files durable:
// the directories it creates (the store's directory, before Badger opens it, and
// segments/) and the segment files. Badger makes its own files durable (SyncWrites: msync
// of the memtable WAL; its new files' directory is synced when they are created). Tests
// wrap these calls to check that everything is synced before an Append is acknowledged.
type sysOps struct {
	stat      func(name string) (fs.FileInfo, error)
	mkdir     func(name string, perm fs.FileMode) error
	create    func(name string) (*os.File, error)
	writeAt   func(f *os.File, b []byte, off int64) (int, error)
	fdatasync func(f *os.File) error
	syncDir   func(dir string) error
}

var osOps = &sysOps{
	stat:  os.Stat,
	mkdir: os.Mkdir,
	create: func(name string) (*os.File, error) {
		return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	},
	writeAt:   func(f *os.File, b []byte, off int64) (int, error) { return f.WriteAt(b, off) },
	fdatasync: func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) },
	syncDir:   syncDir,
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// mkdirAll creates dir and its missing parents; with sync, it then syncs the parent of
// every directory it created, so that they survive a power loss.
func (o *sysOps) mkdirAll(dir string, sync bool) error {
	var missing []string // deepest first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := o.stat(d)
		if err == nil {
			if !fi.IsDir() {
				return &fs.PathError{Op: "mkdir", Path: d, Err: unix.ENOTDIR}
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
		if err := o.mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	if !sync {
		return nil
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if p := filepath.Dir(missing[i]); p != missing[i] {
			if err := o.syncDir(p); err != nil {
				return err
			}
		}
	}
	return nil
}
