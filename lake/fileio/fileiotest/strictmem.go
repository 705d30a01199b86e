package fileiotest

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flightd/flightd/lake/fileio"
)

// ErrPowerCut is what every operation of a StrictMem returns once its power was cut.
var ErrPowerCut = errors.New("fileiotest: power cut")

// StrictMem is a fileio.FS in memory that keeps, when its power is cut, only what was synced
// (after pebble's vfs.NewStrictMem): a file's content as of its last Sync, a directory's
// entries (names of files and subdirectories, created, renamed, linked or removed) as of its
// last SyncDir. Everything else is dropped or reverted by Crash. fileio.Local{FS: m} runs
// the local FileIO's own code over it.
//
// It counts the operations that change or sync something (create, mkdir, sync, sync of a
// directory, rename, link, remove); CutAt(n) makes operation number n (from 0) and every
// operation after it, reads included, fail with ErrPowerCut without effect.
//
// Its modification times are the wall clock's, made unique: every counted operation is at
// least a nanosecond after the one before, so that a rewritten file always gets another
// fileio.Local Version.
type StrictMem struct {
	mu    sync.Mutex
	root  *memNode
	ops   int
	cutAt int // -1: never
	cut   bool
	clock int64
}

type memNode struct {
	dir     bool
	data    []byte // file: live content
	synced  []byte // file: content as of the last Sync
	mtime   int64
	entries map[string]*memNode // directory: live entries
	durable map[string]*memNode // directory: entries as of the last SyncDir
}

func newDirNode() *memNode {
	return &memNode{dir: true, entries: map[string]*memNode{}, durable: map[string]*memNode{}}
}

// NewStrictMem returns an empty StrictMem (its root directory "/" exists).
func NewStrictMem() *StrictMem { return &StrictMem{root: newDirNode(), cutAt: -1} }

var _ fileio.FS = (*StrictMem)(nil)

// Ops is the number of counted operations so far.
func (m *StrictMem) Ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// CutAt arms the power cut at operation n (counted from 0 over the file system's life).
func (m *StrictMem) CutAt(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cutAt = n
}

// Crash returns the file system as it is after a power cut now: only synced contents and
// synced directory entries, reachable from the root by synced entries.
func (m *StrictMem) Crash() *StrictMem {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*memNode]*memNode{} // hard links stay one file
	var copyNode func(n *memNode) *memNode
	copyNode = func(n *memNode) *memNode {
		if c, ok := seen[n]; ok {
			return c
		}
		if !n.dir {
			c := &memNode{data: bytes.Clone(n.synced), synced: bytes.Clone(n.synced), mtime: n.mtime}
			seen[n] = c
			return c
		}
		c := newDirNode()
		seen[n] = c
		for name, child := range n.durable {
			cc := copyNode(child)
			c.entries[name] = cc
			c.durable[name] = cc
		}
		return c
	}
	return &StrictMem{root: copyNode(m.root), cutAt: -1, clock: m.clock}
}

// step counts one operation; it fails once the power is cut. Called with mu held.
func (m *StrictMem) step(counted bool) error {
	if m.cut {
		return ErrPowerCut
	}
	if !counted {
		return nil
	}
	if m.ops == m.cutAt {
		m.cut = true
		return ErrPowerCut
	}
	m.ops++
	m.clock = max(time.Now().UnixNano(), m.clock+1)
	return nil
}

func split(name string) []string {
	name = filepath.Clean(name)
	if name == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(name, "/"), "/")
}

// lookup finds a node by its live entries.
func (m *StrictMem) lookup(name string) (*memNode, error) {
	n := m.root
	for _, p := range split(name) {
		if !n.dir {
			return nil, &fs.PathError{Op: "lookup", Path: name, Err: syscall.ENOTDIR}
		}
		c, ok := n.entries[p]
		if !ok {
			return nil, &fs.PathError{Op: "lookup", Path: name, Err: fs.ErrNotExist}
		}
		n = c
	}
	return n, nil
}

// parent finds the directory holding name and name's last element.
func (m *StrictMem) parent(op, name string) (*memNode, string, error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	d, err := m.lookup("/" + strings.Join(parts[:len(parts)-1], "/"))
	if err != nil {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	if !d.dir {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
	}
	return d, parts[len(parts)-1], nil
}

func (m *StrictMem) OpenFile(name string, flag int, _ fs.FileMode) (fileio.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	create := flag&os.O_CREATE != 0
	if err := m.step(create); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if create {
		d, base, err := m.parent("open", name)
		if err != nil {
			return nil, err
		}
		if _, ok := d.entries[base]; ok && flag&os.O_EXCL != 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
		}
		n := &memNode{mtime: m.clock}
		d.entries[base] = n
		return &memFile{fs: m, n: n, name: name, write: true}, nil
	}
	n, err := m.lookup(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if n.dir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	return &memFile{fs: m, n: n, name: name, r: bytes.NewReader(bytes.Clone(n.data))}, nil
}

func (m *StrictMem) Mkdir(name string, _ fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(true); err != nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	d, base, err := m.parent("mkdir", name)
	if err != nil {
		return err
	}
	if _, ok := d.entries[base]; ok {
		return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
	}
	d.entries[base] = newDirNode()
	return nil
}

type memInfo struct {
	name  string
	size  int64
	dir   bool
	mtime int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return time.Unix(0, i.mtime) }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

func (m *StrictMem) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(false); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	n, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	return memInfo{name: filepath.Base(name), size: int64(len(n.data)), dir: n.dir, mtime: n.mtime}, nil
}

func (m *StrictMem) ReadDir(name string) ([]fileio.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(false); err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	n, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR}
	}
	out := make([]fileio.FileInfo, 0, len(n.entries))
	for k, c := range n.entries {
		fi := fileio.FileInfo{Name: k, IsDir: c.dir}
		if !c.dir {
			fi.Size = int64(len(c.data))
			fi.ModTime = time.Unix(0, c.mtime)
		}
		out = append(out, fi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *StrictMem) Rename(oldpath, newpath string) error { return m.rename(oldpath, newpath, false) }

// RenameNoReplace is Rename that fails when newpath exists, in one step.
func (m *StrictMem) RenameNoReplace(oldpath, newpath string) error {
	return m.rename(oldpath, newpath, true)
}

func (m *StrictMem) rename(oldpath, newpath string, noReplace bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if noReplace { // refused before it counts, as a check before a rename
		if err := m.step(false); err != nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
		}
		if _, err := m.lookup(newpath); err == nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
		}
	}
	if err := m.step(true); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	od, ob, err := m.parent("rename", oldpath)
	if err != nil {
		return err
	}
	nd, nb, err := m.parent("rename", newpath)
	if err != nil {
		return err
	}
	n, ok := od.entries[ob]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	if old, ok := nd.entries[nb]; ok && (old.dir || noReplace) {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
	}
	delete(od.entries, ob)
	nd.entries[nb] = n
	return nil
}

func (m *StrictMem) ReadFile(name string) ([]byte, error) {
	f, err := m.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (m *StrictMem) Link(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(true); err != nil {
		return &os.LinkError{Op: "link", Old: oldpath, New: newpath, Err: err}
	}
	n, err := m.lookup(oldpath)
	if err != nil || n.dir {
		return &os.LinkError{Op: "link", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	nd, nb, err := m.parent("link", newpath)
	if err != nil {
		return err
	}
	if _, ok := nd.entries[nb]; ok {
		return &os.LinkError{Op: "link", Old: oldpath, New: newpath, Err: fs.ErrExist}
	}
	nd.entries[nb] = n
	return nil
}

func (m *StrictMem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(true); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	d, base, err := m.parent("remove", name)
	if err != nil {
		return err
	}
	n, ok := d.entries[base]
	if !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.dir && len(n.entries) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
	}
	delete(d.entries, base)
	return nil
}

func (m *StrictMem) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(true); err != nil {
		return &fs.PathError{Op: "removeall", Path: name, Err: err}
	}
	d, base, err := m.parent("removeall", name)
	if err != nil {
		return nil
	}
	delete(d.entries, base) // the subtree goes with its entry
	return nil
}

func (m *StrictMem) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(true); err != nil {
		return &fs.PathError{Op: "sync", Path: name, Err: err}
	}
	n, err := m.lookup(name)
	if err != nil {
		return err
	}
	if !n.dir {
		return &fs.PathError{Op: "sync", Path: name, Err: syscall.ENOTDIR}
	}
	n.durable = make(map[string]*memNode, len(n.entries))
	for k, c := range n.entries {
		n.durable[k] = c
	}
	return nil
}

// memFile is an open file: a writer appending to the node, or a reader of its content at open.
type memFile struct {
	fs     *StrictMem
	n      *memNode
	name   string
	write  bool
	r      *bytes.Reader
	closed bool
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.step(false); err != nil {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: err}
	}
	if !f.write || f.closed {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrClosed}
	}
	f.n.data = append(f.n.data, p...)
	f.n.mtime = f.fs.clock
	return len(p), nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.step(true); err != nil {
		return &fs.PathError{Op: "sync", Path: f.name, Err: err}
	}
	f.n.synced = bytes.Clone(f.n.data)
	return nil
}

func (f *memFile) Close() error {
	f.closed = true
	return nil
}

func (f *memFile) reader() (*bytes.Reader, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.step(false); err != nil {
		return nil, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	if f.r == nil {
		return nil, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	return f.r, nil
}

func (f *memFile) Read(p []byte) (int, error) {
	r, err := f.reader()
	if err != nil {
		return 0, err
	}
	return r.Read(p)
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	r, err := f.reader()
	if err != nil {
		return 0, err
	}
	return r.ReadAt(p, off)
}

func (f *memFile) Seek(off int64, whence int) (int64, error) {
	r, err := f.reader()
	if err != nil {
		return 0, err
	}
	return r.Seek(off, whence)
}

var _ io.ReaderAt = (*memFile)(nil)
