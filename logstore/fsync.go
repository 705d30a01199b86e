package logstore

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/flightd/flightd/internal/durable"
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
	syncDir:   durable.SyncDir,
}

// mkdirAll creates dir and its missing parents; with sync, it then syncs the parent of
// every directory it created (durable.MkdirAll).
func (o *sysOps) mkdirAll(dir string, sync bool) error {
	return durable.MkdirAll(opsFS{o}, dir, sync)
}

// opsFS is durable.FS over sysOps.
type opsFS struct{ o *sysOps }

func (f opsFS) Stat(name string) (fs.FileInfo, error)     { return f.o.stat(name) }
func (f opsFS) Mkdir(name string, perm fs.FileMode) error { return f.o.mkdir(name, perm) }
func (f opsFS) SyncDir(dir string) error                  { return f.o.syncDir(dir) }
