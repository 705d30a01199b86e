package fileio_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/fileiotest"
)

// confined returns a Local rooted at <dir>/wh (holding an empty db.db), so that a path
// escaping it would land in dir, next to it.
func confined(t *testing.T) (dir string, r *fileio.Rooted) {
	t.Helper()
	dir = t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "wh", "db.db"), 0o755))
	return dir, fileio.NewRooted(fileio.Local{}, filepath.Join(dir, "wh"))
}

// requireEscape checks that err is a refusal to leave the root naming the path relative to
// it, and no path of the server.
func requireEscape(t *testing.T, err error, dir, rel string) {
	t.Helper()
	require.ErrorIs(t, err, fileio.ErrInvalidPath)
	t.Log(err)
	require.NotContains(t, err.Error(), dir)
	require.Contains(t, err.Error(), rel)
}

// TestSymlinkOutOfRootRefused: a symbolic link inside the root that points outside
// (relative or absolute) cannot be read, listed, written, created into or removed through;
// nothing outside is touched or created. Removing the link removes the link.
func TestSymlinkOutOfRootRefused(t *testing.T) {
	ctx := context.Background()
	dir, fio := confined(t)
	wh := filepath.Join(dir, "wh")
	out, unchanged := fileiotest.OutsideDir(t, dir)
	require.NoError(t, os.Symlink("../../outside", filepath.Join(wh, "db.db", "rel")))
	require.NoError(t, os.Symlink(out, filepath.Join(wh, "db.db", "abs")))
	for _, link := range []string{"db.db/rel", "db.db/abs"} {
		p := link + "/secret"
		_, err := fio.Read(ctx, p)
		requireEscape(t, err, dir, p)
		_, err = fio.Open(ctx, p)
		requireEscape(t, err, dir, p)
		_, err = fio.List(ctx, link)
		requireEscape(t, err, dir, link)
		_, err = fio.List(ctx, link+"/x")
		requireEscape(t, err, dir, link+"/x")
		_, err = fio.Exists(ctx, p)
		requireEscape(t, err, dir, p)
		_, err = fio.Version(ctx, p)
		requireEscape(t, err, dir, p)
		requireEscape(t, fio.SyncDir(ctx, link), dir, link)

		_, err = fio.Create(ctx, link+"/new")
		requireEscape(t, err, dir, link)
		_, err = fio.Create(ctx, link+"/x/new")
		requireEscape(t, err, dir, link+"/x")
		requireEscape(t, fio.WriteAtomic(ctx, p, []byte("w")), dir, link)
		requireEscape(t, fio.WriteAtomic(ctx, link+"/new", []byte("w")), dir, link)
		requireEscape(t, fio.CreateExclusive(ctx, link+"/new", []byte("w")), dir, link)
		requireEscape(t, fio.MkdirAll(ctx, link+"/sub/dir"), dir, link)
		requireEscape(t, fio.Remove(ctx, p), dir, p)
		requireEscape(t, fio.Remove(ctx, link+"/x/keep"), dir, link+"/x/keep")
		requireEscape(t, fio.RemoveAll(ctx, link+"/x"), dir, link+"/x")
		unchanged()
	}
	// Removing the link removes the link, not what it points to.
	require.NoError(t, os.Symlink("../../outside", filepath.Join(wh, "db.db", "t")))
	require.NoError(t, fio.RemoveAll(ctx, "db.db/t"))
	require.NoError(t, fio.RemoveAll(ctx, "db.db/abs"))
	require.NoError(t, fio.Remove(ctx, "db.db/rel"))
	unchanged()
	require.Equal(t, []string{"outside", "wh"}, fileiotest.Entries(t, dir))
}

// TestSymlinkedFileOutOfRootRefused: a link to a file outside cannot be read; replacing
// or removing it replaces or removes the link, never the file it points to.
func TestSymlinkedFileOutOfRootRefused(t *testing.T) {
	ctx := context.Background()
	dir, fio := confined(t)
	wh := filepath.Join(dir, "wh")
	out, unchanged := fileiotest.OutsideDir(t, dir)
	link := filepath.Join(wh, "db.db", "f")
	require.NoError(t, os.Symlink(filepath.Join(out, "secret"), link))
	_, err := fio.Read(ctx, "db.db/f")
	requireEscape(t, err, dir, "db.db/f")
	_, err = fio.Open(ctx, "db.db/f")
	requireEscape(t, err, dir, "db.db/f")
	_, err = fio.Version(ctx, "db.db/f")
	requireEscape(t, err, dir, "db.db/f")
	_, err = fio.Create(ctx, "db.db/f")
	require.ErrorIs(t, err, fs.ErrExist)
	require.ErrorIs(t, fio.CreateExclusive(ctx, "db.db/f", []byte("w")), fs.ErrExist)
	unchanged()

	require.NoError(t, fio.WriteAtomic(ctx, "db.db/f", []byte("w")))
	unchanged()
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "the link was replaced by the file")
	got, err := fio.Read(ctx, "db.db/f")
	require.NoError(t, err)
	require.Equal(t, "w", string(got))

	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink(filepath.Join(out, "secret"), link))
	require.NoError(t, fio.Remove(ctx, "db.db/f"))
	unchanged()
	require.NoFileExists(t, link)
}

// TestSymlinkInsideRootFollowed: relative links that stay in the root (another engine's
// layout, an operator's alias) are followed, and ".." that stays inside is fine; an absolute
// link is refused even when it points inside (os.Root resolves no absolute link).
func TestSymlinkInsideRootFollowed(t *testing.T) {
	ctx := context.Background()
	dir, fio := confined(t)
	wh := filepath.Join(dir, "wh")
	want := []byte("schema")
	require.NoError(t, fio.WriteAtomic(ctx, "db.db/t/schema/schema-0", want))
	require.NoError(t, os.Symlink("t", filepath.Join(wh, "db.db", "alias")))
	require.NoError(t, os.Symlink("../db.db/t/schema", filepath.Join(wh, "db.db", "up")))
	for _, p := range []string{"db.db/alias/schema/schema-0", "db.db/up/schema-0", "db.db/alias/../t/schema/schema-0"} {
		got, err := fio.Read(ctx, p)
		require.NoError(t, err, p)
		require.Equal(t, want, got, p)
	}
	require.NoError(t, os.Symlink(filepath.Join(wh, "db.db", "t"), filepath.Join(wh, "db.db", "absolute")))
	_, err := fio.Read(ctx, "db.db/absolute/schema/schema-0")
	requireEscape(t, err, dir, "db.db/absolute/schema/schema-0")
	ents, err := fio.List(ctx, "db.db/up")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	require.NoError(t, fio.WriteAtomic(ctx, "db.db/alias/f", []byte("x")))
	require.FileExists(t, filepath.Join(wh, "db.db", "t", "f"))
}

// TestRootFSRefusesPathsOutsideItsDirectory: below the Rooted FileIO's textual check, the
// file system itself refuses paths outside the root, ".." included.
func TestRootFSRefusesPathsOutsideItsDirectory(t *testing.T) {
	dir := t.TempDir()
	wh := filepath.Join(dir, "wh")
	require.NoError(t, os.Mkdir(wh, 0o755))
	_, unchanged := fileiotest.OutsideDir(t, dir)
	r := fileio.RootFS(wh)
	for _, p := range []string{filepath.Join(wh, "..", "outside", "secret"), filepath.Join(dir, "outside", "secret"), "/etc/passwd", dir} {
		_, err := r.ReadFile(p)
		require.ErrorIs(t, err, fileio.ErrInvalidPath, p)
		_, err = r.Stat(p)
		require.ErrorIs(t, err, fileio.ErrInvalidPath, p)
		require.ErrorIs(t, r.Remove(p), fileio.ErrInvalidPath, p)
		require.ErrorIs(t, r.RemoveAll(p), fileio.ErrInvalidPath, p)
		require.ErrorIs(t, r.Rename(filepath.Join(wh, "a"), p), fileio.ErrInvalidPath, p)
		require.ErrorIs(t, r.Link(p, filepath.Join(wh, "a")), fileio.ErrInvalidPath, p)
	}
	unchanged()
}
