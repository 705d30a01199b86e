package fileio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// rootFS is an FS confined to a directory (a Rooted Local's root) by file descriptor: every
// call opens the directory as an os.Root and resolves its path beneath it, component by
// component from the directory's descriptor, so no symbolic link, ".." or concurrent rename
// leads outside. Relative symbolic links that stay inside the directory are followed; an
// absolute one is refused wherever it points. A path that would leave the directory fails
// with an error matching ErrInvalidPath.
//
// Paths given to it and named in its errors are absolute (the directory's path joined with the
// part beneath it), as those of OSFS. The directory itself is found by its path at every call:
// a directory moved or replaced is used at its path, as OSFS does.
type rootFS struct {
	dir string // absolute and clean
}

var _ FS = rootFS{}

// errLeavesRoot is the cause of an access that os.Root refused because the path leads
// outside the root (a symbolic link pointing out, or "..").
var errLeavesRoot = fmt.Errorf("%w: it leads outside the root (a symbolic link or ..)", ErrInvalidPath)

// pathEscapes is os.Root's (unexported) error for a path that leads outside its directory;
// found once, from a Root, by a path that escapes by its text alone (no file is touched).
var (
	pathEscapesOnce sync.Once
	pathEscapes     error
)

func learnPathEscapes(root *os.Root) {
	pathEscapesOnce.Do(func() {
		_, err := root.Lstat("..")
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pathEscapes = pe.Err
		}
	})
}

func isPathEscape(err error) bool {
	return pathEscapes != nil && err == pathEscapes
}

// beneath returns name relative to the directory ("." for the directory itself).
func (r rootFS) beneath(op, name string) (string, error) {
	rel, err := filepath.Rel(r.dir, filepath.Clean(name))
	if err != nil || !filepath.IsLocal(rel) {
		return "", &fs.PathError{Op: op, Path: name, Err: errLeavesRoot}
	}
	return rel, nil
}

// in runs fn with the directory opened as a Root and name relative to it, and gives fn's
// errors the absolute paths and plain operation names of OSFS's.
func (r rootFS) in(op, name string, fn func(root *os.Root, rel string) error) error {
	rel, err := r.beneath(op, name)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	learnPathEscapes(root)
	return r.fix(fn(root, rel))
}

// rootOps maps os.Root's operation names to those of the calls without a Root.
var rootOps = map[string]string{
	"openat": "open", "mkdirat": "mkdir", "statat": "stat", "lstatat": "lstat", "removeat": "remove",
	"renameat": "rename", "linkat": "link", "RemoveAll": "removeall",
}

func (r rootFS) fix(err error) error {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(r.dir, p)
	}
	cause := func(e error) error {
		if isPathEscape(e) {
			return errLeavesRoot
		}
		return e
	}
	op := func(o string) string {
		if plain, ok := rootOps[o]; ok {
			return plain
		}
		return o
	}
	switch e := err.(type) {
	case *fs.PathError:
		return &fs.PathError{Op: op(e.Op), Path: abs(e.Path), Err: cause(e.Err)}
	case *os.LinkError:
		return &os.LinkError{Op: op(e.Op), Old: abs(e.Old), New: abs(e.New), Err: cause(e.Err)}
	}
	return err
}

func (r rootFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	var f *os.File
	err := r.in("open", name, func(root *os.Root, rel string) (err error) {
		f, err = root.OpenFile(rel, flag, perm)
		return err
	})
	if err != nil {
		return nil, err // no typed nil in the interface
	}
	return f, nil
}

func (r rootFS) ReadFile(name string) ([]byte, error) {
	var b []byte
	err := r.in("open", name, func(root *os.Root, rel string) (err error) {
		b, err = root.ReadFile(rel)
		return err
	})
	return b, err
}

func (r rootFS) Mkdir(name string, perm fs.FileMode) error {
	return r.in("mkdir", name, func(root *os.Root, rel string) error { return root.Mkdir(rel, perm) })
}

func (r rootFS) Stat(name string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := r.in("stat", name, func(root *os.Root, rel string) (err error) {
		fi, err = root.Stat(rel)
		return err
	})
	return fi, err
}

func (r rootFS) ReadDir(name string) ([]FileInfo, error) {
	var out []FileInfo
	err := r.in("open", name, func(root *os.Root, rel string) error {
		d, err := root.Open(rel)
		if err != nil {
			return err
		}
		defer d.Close()
		ents, err := d.ReadDir(-1)
		if err != nil {
			return err
		}
		out = make([]FileInfo, 0, len(ents))
		for _, e := range ents {
			fi := FileInfo{Name: e.Name(), IsDir: e.IsDir()}
			if !e.IsDir() {
				if info, err := e.Info(); err == nil { // lstat beneath d
					fi.Size = info.Size()
					fi.ModTime = info.ModTime()
				}
			}
			out = append(out, fi)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (r rootFS) Rename(oldpath, newpath string) error {
	return r.in2("rename", oldpath, newpath, func(root *os.Root, from, to string) error { return root.Rename(from, to) })
}

func (r rootFS) RenameNoReplace(oldpath, newpath string) error {
	return r.in2("rename", oldpath, newpath, renameNoReplaceIn)
}

func (r rootFS) Link(oldpath, newpath string) error {
	return r.in2("link", oldpath, newpath, func(root *os.Root, from, to string) error { return root.Link(from, to) })
}

// in2 is in for a call on two paths.
func (r rootFS) in2(op, oldpath, newpath string, fn func(root *os.Root, from, to string) error) error {
	to, err := r.beneath(op, newpath)
	if err != nil {
		return &os.LinkError{Op: op, Old: oldpath, New: newpath, Err: errLeavesRoot}
	}
	return r.in(op, oldpath, func(root *os.Root, from string) error { return fn(root, from, to) })
}

func (r rootFS) Remove(name string) error {
	return r.in("remove", name, func(root *os.Root, rel string) error { return root.Remove(rel) })
}

func (r rootFS) RemoveAll(name string) error {
	return r.in("removeall", name, func(root *os.Root, rel string) error { return root.RemoveAll(rel) })
}

func (r rootFS) SyncDir(name string) error {
	err := r.in("open", name, func(root *os.Root, rel string) error {
		d, err := root.Open(rel)
		if err != nil {
			return err
		}
		err = d.Sync()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", name, err)
	}
	return nil
}

// splitBeneath splits a path relative to a Root into its directory and its last element.
func splitBeneath(rel string) (dir, base string) {
	rel = filepath.Clean(rel)
	if i := strings.LastIndexByte(rel, filepath.Separator); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return ".", rel
}
