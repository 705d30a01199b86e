package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrInvalidPath marks a file access the catalog's FileIO refused: a path that does not
// resolve under the warehouse root, one holding a NUL byte, or, on a local warehouse, one
// that leads outside it through a symbolic link. Every file the lake reads, creates or
// deletes goes through those checks, so no table option, name, link or future bug can make
// it touch files outside the warehouse.
var ErrInvalidPath = errors.New("lake: invalid path")

// rootedFileIO is the FileIO of a Catalog: it confines every access to the warehouse and keeps
// the server's own paths out of error messages.
//
//   - Paths are warehouse-relative ("db.db/t/snapshot/snapshot-3"); absolute paths and, on S3,
//     s3://bucket/key URLs are accepted too. After cleaning, a path must be the root or lie
//     below it, else the call fails with ErrInvalidPath and the underlying FileIO never sees it.
//     That check is on the text; locally, the catalog's LocalFileIO then resolves the path on
//     the file system beneath the warehouse's descriptor (rootFS), so that a symbolic link
//     cannot lead out either.
//   - Errors of the underlying FileIO (os.PathError and friends locally, s3://bucket/key on S3),
//     including those of opened readers and writers, name paths relative to the warehouse.
type rootedFileIO struct {
	inner FileIO
	root  string    // cleaned FileIO path of the warehouse
	s3    *S3FileIO // inner, when it is S3 (slash paths, URL forms)
	strip []string  // absolute spellings of root+"/" to drop from error messages
	whole []string  // absolute spellings of root itself, shown as "."
}

var _ FileIO = (*rootedFileIO)(nil)

func newRootedFileIO(inner FileIO, root string) *rootedFileIO {
	r := &rootedFileIO{inner: inner}
	if s, ok := inner.(*S3FileIO); ok {
		// S3 errors name s3://bucket/key.
		r.s3 = s
		r.root = path.Clean("/" + root)
		u := strings.TrimSuffix(s.URL(r.root), "/")
		r.strip = []string{u + "/"}
		if r.root != "/" {
			r.whole = []string{u}
		}
		return r
	}
	r.root = filepath.Clean(root)
	if r.root != "/" && r.root != "." {
		r.strip = []string{r.root + string(filepath.Separator)}
		r.whole = []string{r.root}
	}
	return r
}

// hasS3Scheme reports whether p is an S3 URL (the forms S3FileIO accepts).
func hasS3Scheme(p string) bool {
	for _, scheme := range []string{"s3:/", "s3a:/"} {
		if strings.HasPrefix(p, scheme) {
			return true
		}
	}
	return false
}

func (r *rootedFileIO) isAbs(p string) bool {
	if r.s3 != nil {
		return strings.HasPrefix(p, "/")
	}
	return filepath.IsAbs(p)
}

func (r *rootedFileIO) clean(p string) string {
	if r.s3 != nil {
		return path.Clean(p)
	}
	return filepath.Clean(p)
}

// abs is the underlying FileIO's path of a warehouse-relative path.
func (r *rootedFileIO) abs(rel string) string { return r.clean(r.root + "/" + rel) }

// within reports whether the cleaned absolute path abs is the root or below it.
func (r *rootedFileIO) within(abs string) bool {
	if abs == r.root {
		return true
	}
	if r.root == "/" {
		return strings.HasPrefix(abs, "/")
	}
	return strings.HasPrefix(abs, r.root+"/")
}

// resolve maps p to the underlying FileIO's path, refusing anything outside the warehouse.
func (r *rootedFileIO) resolve(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: %q holds a NUL byte", ErrInvalidPath, r.display(p))
	}
	var abs string
	switch {
	case r.s3 != nil && hasS3Scheme(p):
		k, err := r.s3.key(p) // s3://bucket/key (other buckets are refused there)
		if err != nil {
			return "", fmt.Errorf("%w: %s is not in the warehouse", ErrInvalidPath, r.display(p))
		}
		abs = "/" + k
	case r.isAbs(p):
		abs = r.clean(p)
	default:
		abs = r.abs(p)
	}
	if !r.within(abs) {
		return "", fmt.Errorf("%w: %s is outside the warehouse", ErrInvalidPath, r.display(abs))
	}
	return abs, nil
}

// display renders a path for an error message: relative to the warehouse, even when it
// lies outside (then it starts with "..").
func (r *rootedFileIO) display(p string) string {
	if !r.isAbs(p) {
		return r.clean(p)
	}
	var rel string
	var err error
	if r.s3 != nil {
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
func (r *rootedFileIO) relative(p string) string {
	if p == "" || !r.isAbs(p) {
		return p
	}
	return r.display(p)
}

// relErr is an error whose message had the warehouse location removed; the original stays in
// the chain for errors.Is and errors.As.
type relErr struct {
	msg string
	err error
}

func (e *relErr) Error() string { return e.msg }
func (e *relErr) Unwrap() error { return e.err }

// rel rewrites err so that its message carries no absolute warehouse path.
func (r *rootedFileIO) rel(err error) error {
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
func (r *rootedFileIO) Read(ctx context.Context, p string) ([]byte, error) {
	abs, err := r.resolve(p)
	if err != nil {
		return nil, err
	}
	b, err := r.inner.Read(ctx, abs)
	return b, r.rel(err)
}

// Open implements FileIO.
func (r *rootedFileIO) Open(ctx context.Context, p string) (ReadAtSeekCloser, error) {
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
func (r *rootedFileIO) Create(ctx context.Context, p string) (io.WriteCloser, error) {
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
func (r *rootedFileIO) WriteAtomic(ctx context.Context, p string, data []byte) error {
	abs, err := r.resolve(p)
	if err != nil {
		return err
	}
	return r.rel(r.inner.WriteAtomic(ctx, abs, data))
}

// CreateExclusive implements FileIO.
func (r *rootedFileIO) CreateExclusive(ctx context.Context, p string, data []byte) error {
	abs, err := r.resolve(p)
	if err != nil {
		return err
	}
	return r.rel(r.inner.CreateExclusive(ctx, abs, data))
}

// List implements FileIO.
func (r *rootedFileIO) List(ctx context.Context, dir string) ([]FileInfo, error) {
	abs, err := r.resolve(dir)
	if err != nil {
		return nil, err
	}
	ents, err := r.inner.List(ctx, abs)
	return ents, r.rel(err)
}

// Exists implements FileIO.
func (r *rootedFileIO) Exists(ctx context.Context, p string) (bool, error) {
	abs, err := r.resolve(p)
	if err != nil {
		return false, err
	}
	ok, err := r.inner.Exists(ctx, abs)
	return ok, r.rel(err)
}

// Version implements FileIO.
func (r *rootedFileIO) Version(ctx context.Context, p string) (string, error) {
	abs, err := r.resolve(p)
	if err != nil {
		return "", err
	}
	v, err := r.inner.Version(ctx, abs)
	return v, r.rel(err)
}

// Remove implements FileIO.
func (r *rootedFileIO) Remove(ctx context.Context, p string) error {
	abs, err := r.resolve(p)
	if err != nil {
		return err
	}
	return r.rel(r.inner.Remove(ctx, abs))
}

// RemoveAll implements FileIO. The warehouse root itself is never removed.
func (r *rootedFileIO) RemoveAll(ctx context.Context, p string) error {
	abs, err := r.resolve(p)
	if err != nil {
		return err
	}
	if abs == r.root {
		return fmt.Errorf("%w: refusing to remove the whole warehouse", ErrInvalidPath)
	}
	return r.rel(r.inner.RemoveAll(ctx, abs))
}

// MkdirAll implements FileIO.
func (r *rootedFileIO) MkdirAll(ctx context.Context, dir string) error {
	abs, err := r.resolve(dir)
	if err != nil {
		return err
	}
	return r.rel(r.inner.MkdirAll(ctx, abs))
}

// SyncDir implements FileIO.
func (r *rootedFileIO) SyncDir(ctx context.Context, dir string) error {
	abs, err := r.resolve(dir)
	if err != nil {
		return err
	}
	return r.rel(r.inner.SyncDir(ctx, abs))
}

// rootedReader relativises the errors of an opened file.
type rootedReader struct {
	f ReadAtSeekCloser
	r *rootedFileIO
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
	r *rootedFileIO
}

func (x *rootedWriter) Write(p []byte) (int, error) {
	n, err := x.w.Write(p)
	return n, x.r.rel(err)
}

func (x *rootedWriter) Close() error { return x.r.rel(x.w.Close()) }
