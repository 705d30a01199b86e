package fileio

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Rooted is a FileIO confined to a root directory of another (the lake's catalog keeps its
// warehouse in one): every read, create and delete is checked in one place, and the root's
// location is kept out of error messages.
//
//   - Paths are relative to the root ("db.db/t/snapshot/snapshot-3"); absolute paths of the
//     underlying FileIO and, on an ObjectStore, its URLs (s3://bucket/key) are accepted too.
//     After cleaning (filepath.Clean, or path.Clean of the keys of an ObjectStore), a path
//     must be the root or lie below it, and hold no NUL byte, else the call fails with
//     ErrInvalidPath and the underlying FileIO never sees it. RemoveAll and RenameDir of the
//     root itself are refused alike.
//   - That check is on the text. A Local on the operating system's file system (FS nil) is
//     also confined on the file system: NewRooted gives it the os.Root of the root directory,
//     beneath whose descriptor every path is resolved component by component, so that no
//     symbolic link (pointing outside, or absolute), "..", or directory swapped for such a
//     link while in use leads outside: the access fails with ErrInvalidPath. Removing or
//     replacing a link removes or replaces the link, never what it points to. The root
//     directory itself is found by its path at every access, and must exist.
//   - Errors of the underlying FileIO (os.PathError and friends locally, s3://bucket/key on
//     S3), including those of opened readers and writers, name paths relative to the root.
type Rooted struct {
	given FileIO      // the FileIO given to NewRooted
	inner FileIO      // given, or for a Local on the operating system, the Local confined by descriptor
	root  string      // cleaned path of the root in inner
	obj   ObjectStore // inner, when it is an object store (slash paths, URL forms)
	strip []string    // absolute spellings of root+"/" to drop from error messages
	whole []string    // absolute spellings of root itself, shown as "."
}

var (
	_ FileIO     = (*Rooted)(nil)
	_ DirRenamer = (*Rooted)(nil)
)

// NewRooted returns inner confined to root, a path of inner. The root of a Local is made
// absolute; a Local on the operating system's file system is confined by descriptor (see
// Rooted). It does no I/O: the root directory must exist before the first access (inner's
// MkdirAll(root) creates it).
func NewRooted(inner FileIO, root string) *Rooted {
	r := &Rooted{given: inner, inner: inner}
	if s, ok := inner.(ObjectStore); ok {
		// Object store errors name URLs.
		r.obj = s
		r.root = path.Clean("/" + root)
		u := strings.TrimSuffix(s.URL(r.root), "/")
		r.strip = []string{u + "/"}
		if r.root != "/" {
			r.whole = []string{u}
		}
		return r
	}
	r.root = filepath.Clean(root)
	if local, ok := inner.(Local); ok {
		if abs, err := filepath.Abs(r.root); err == nil {
			r.root = abs
		}
		if local.FS == nil {
			// Beneath the root, files are opened by descriptor, not by path text.
			r.inner = Local{FS: rootFS{dir: r.root}}
		}
	}
	if r.root != "/" && r.root != "." {
		r.strip = []string{r.root + string(filepath.Separator)}
		r.whole = []string{r.root}
	}
	return r
}

// Root returns the root: a cleaned path of the underlying FileIO (absolute for a Local).
func (r *Rooted) Root() string { return r.root }

// Location returns where the root is, as its store names it: the URL of the root for an
// ObjectStore (s3://bucket/prefix, without a trailing slash), else the root path.
func (r *Rooted) Location() string {
	if r.obj != nil {
		return strings.TrimSuffix(r.obj.URL(r.root), "/")
	}
	return r.root
}

// Unwrap returns the FileIO given to NewRooted.
func (r *Rooted) Unwrap() FileIO { return r.given }

// Abs returns the underlying FileIO's path of a path relative to the root, cleaned, without
// checking that it stays below the root.
func (r *Rooted) Abs(rel string) string { return r.clean(r.root + "/" + rel) }

func (r *Rooted) isAbs(p string) bool {
	if r.obj != nil {
		return strings.HasPrefix(p, "/")
	}
	return filepath.IsAbs(p)
}

func (r *Rooted) clean(p string) string {
	if r.obj != nil {
		return path.Clean(p)
	}
	return filepath.Clean(p)
}

// within reports whether the cleaned absolute path abs is the root or below it.
func (r *Rooted) within(abs string) bool {
	if abs == r.root {
		return true
	}
	if r.root == "/" {
		return strings.HasPrefix(abs, "/")
	}
	return strings.HasPrefix(abs, r.root+"/")
}

// resolve maps p to the underlying FileIO's path, refusing anything outside the root.
func (r *Rooted) resolve(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: %q holds a NUL byte", ErrInvalidPath, r.display(p))
	}
	var abs string
	if r.obj != nil {
		k, isURL, err := r.obj.PathOf(p) // s3://bucket/key (other buckets are refused there)
		if err != nil {
			return "", fmt.Errorf("%w: %s is not in the root's store", ErrInvalidPath, r.display(p))
		}
		if isURL {
			p = path.Clean(k)
		}
	}
	if r.isAbs(p) {
		abs = r.clean(p)
	} else {
		abs = r.Abs(p)
	}
	if !r.within(abs) {
		return "", fmt.Errorf("%w: %s is outside the root", ErrInvalidPath, r.display(abs))
	}
	return abs, nil
}

// display renders a path for an error message: relative to the root, even when it lies
// outside (then it starts with "..").
func (r *Rooted) display(p string) string {
	if !r.isAbs(p) {
		return r.clean(p)
	}
	var rel string
	var err error
	if r.obj != nil {
		rel, err = filepath.Rel(r.root, path.Clean(p))
	} else {
		rel, err = filepath.Rel(r.root, filepath.Clean(p))
	}
	if err != nil {
		return filepath.Base(p)
	}
	return filepath.ToSlash(rel)
}

// relative rewrites an absolute path of the underlying FileIO for an error message.
func (r *Rooted) relative(p string) string {
	if p == "" || !r.isAbs(p) {
		return p
	}
	return r.display(p)
}

// relErr is an error whose message had the root's location removed; the original stays in
// the chain for errors.Is and errors.As.
type relErr struct {
	msg string
	err error
}

func (e *relErr) Error() string { return e.msg }
func (e *relErr) Unwrap() error { return e.err }

// rel rewrites err so that its message carries no absolute path of the root.
func (r *Rooted) rel(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	switch e := err.(type) {
	case *fs.PathError:
		return &fs.PathError{Op: e.Op, Path: r.relative(e.Path), Err: e.Err}
	case *os.LinkError:
		return &os.LinkError{Op: e.Op, Old: r.relative(e.Old), New: r.relative(e.New), Err: e.Err}
	}
	msg := err.Error()
	out := msg
	for _, s := range r.strip {
		out = strings.ReplaceAll(out, s, "")
	}
	for _, s := range r.whole {
		out = replaceWhole(out, s, ".")
	}
	if out == msg {
		return err
	}
	return &relErr{msg: out, err: err}
}

// replaceWhole replaces old in s where it is not followed by more of a path name.
func replaceWhole(s, old, repl string) string {
	var sb strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			sb.WriteString(s)
			return sb.String()
		}
		end := i + len(old)
		sb.WriteString(s[:i])
		if end < len(s) && s[end] != ':' && s[end] != ' ' && s[end] != '"' && s[end] != '\'' && s[end] != ')' && s[end] != ',' {
			sb.WriteString(old)
		} else {
			sb.WriteString(repl)
		}
		s = s[end:]
	}
}

// Read implements FileIO.
func (r *Rooted) Read(ctx context.Context, p string) ([]byte, error) {
	abs, err := r.resolve(p)
	if err != nil {
		return nil, err
	}
	b, err := r.inner.Read(ctx, abs)
	return b, r.rel(err)
}

// Open implements FileIO.
func (r *Rooted) Open(ctx context.Context, p string) (ReadAtSeekCloser, error) {
	abs, err := r.resolve(p)
	if err != nil {
		return nil, err
	}
	f, err := r.inner.Open(ctx, abs)
	if err != nil {
		return nil, r.rel(err)
	}
	return &rootedReader{f: f, r: r}, nil
}

// Create implements FileIO.
func (r *Rooted) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	abs, err := r.resolve(p)
	if err != nil {
		return nil, err
	}
	w, err := r.inner.Create(ctx, abs)
	if err != nil {
		return nil, r.rel(err)
	}
	return &rootedWriter{w: w, r: r}, nil
}

// WriteAtomic implements FileIO.
func (r *Rooted) WriteAtomic(ctx context.Context, p string, data []byte) error {
	abs, err := r.resolve(p)
	if err != nil {
		return err
	}
	return r.rel(r.inner.WriteAtomic(ctx, abs, data))
}

// CreateExclusive implements FileIO.
func (r *Rooted) CreateExclusive(ctx context.Context, p string, data []byte) error {
	abs, err := r.resolve(p)
	if err != nil {
		return err
	}
	return r.rel(r.inner.CreateExclusive(ctx, abs, data))
}

// List implements FileIO.
func (r *Rooted) List(ctx context.Context, dir string) ([]FileInfo, error) {
	abs, err := r.resolve(dir)
	if err != nil {
		return nil, err
	}
	ents, err := r.inner.List(ctx, abs)
	return ents, r.rel(err)
}

// Exists implements FileIO.
func (r *Rooted) Exists(ctx context.Context, p string) (bool, error) {
	abs, err := r.resolve(p)
	if err != nil {
		return false, err
	}
	ok, err := r.inner.Exists(ctx, abs)
	return ok, r.rel(err)
}

// Version implements FileIO.
func (r *Rooted) Version(ctx context.Context, p string) (string, error) {
	abs, err := r.resolve(p)
	if err != nil {
		return "", err
	}
	v, err := r.inner.Version(ctx, abs)
	return v, r.rel(err)
}

// Remove implements FileIO.
func (r *Rooted) Remove(ctx context.Context, p string) error {
	abs, err := r.resolve(p)
	if err != nil {
		return err
	}
	return r.rel(r.inner.Remove(ctx, abs))
}

// RemoveAll implements FileIO. The root itself is never removed.
func (r *Rooted) RemoveAll(ctx context.Context, p string) error {
	abs, err := r.resolve(p)
	if err != nil {
		return err
	}
	if abs == r.root {
		return fmt.Errorf("%w: refusing to remove the root itself", ErrInvalidPath)
	}
	return r.rel(r.inner.RemoveAll(ctx, abs))
}

// MkdirAll implements FileIO.
func (r *Rooted) MkdirAll(ctx context.Context, dir string) error {
	abs, err := r.resolve(dir)
	if err != nil {
		return err
	}
	return r.rel(r.inner.MkdirAll(ctx, abs))
}

// SyncDir implements FileIO.
func (r *Rooted) SyncDir(ctx context.Context, dir string) error {
	abs, err := r.resolve(dir)
	if err != nil {
		return err
	}
	return r.rel(r.inner.SyncDir(ctx, abs))
}

// rootedReader relativises the errors of an opened file.
type rootedReader struct {
	f ReadAtSeekCloser
	r *Rooted
}

func (x *rootedReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := x.f.ReadAt(p, off)
	return n, x.r.rel(err)
}

func (x *rootedReader) Read(p []byte) (int, error) {
	n, err := x.f.Read(p)
	return n, x.r.rel(err)
}

func (x *rootedReader) Seek(offset int64, whence int) (int64, error) {
	n, err := x.f.Seek(offset, whence)
	return n, x.r.rel(err)
}

func (x *rootedReader) Close() error { return x.r.rel(x.f.Close()) }

// rootedWriter relativises the errors of a file being written.
type rootedWriter struct {
	w io.WriteCloser
	r *Rooted
}

func (x *rootedWriter) Write(p []byte) (int, error) {
	n, err := x.w.Write(p)
	return n, x.r.rel(err)
}

func (x *rootedWriter) Close() error { return x.r.rel(x.w.Close()) }
