package lake

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// outsideDir makes <dir>/outside beside the warehouse, holding secret ("s") and x/keep, and
// returns a check that it still holds exactly that.
func outsideDir(t *testing.T, dir string) (path string, unchanged func()) {
	t.Helper()
	out := filepath.Join(dir, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(out, "x"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "secret"), []byte("s"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "x", "keep"), []byte("k"), 0o644))
	return out, func() {
		t.Helper()
		require.Equal(t, []string{"secret", "x/keep"}, filesUnder(t, out), "the directory outside")
		got, err := os.ReadFile(filepath.Join(out, "secret"))
		require.NoError(t, err)
		require.Equal(t, "s", string(got))
	}
}

// requireEscape checks that err is a refusal to leave the warehouse naming the path relative
// to it, and no path of the server.
func requireEscape(t *testing.T, err error, dir, rel string) {
	t.Helper()
	require.ErrorIs(t, err, ErrInvalidPath)
	requireRelative(t, err, dir, rel)
}

// TestSymlinkOutOfWarehouseRefused: a symbolic link inside the warehouse that points outside
// (relative or absolute) cannot be read, listed, written, created into or removed through;
// nothing outside is touched or created.
func TestSymlinkOutOfWarehouseRefused(t *testing.T) {
	ctx := context.Background()
	dir, c := confinedCatalog(t)
	wh := filepath.Join(dir, "wh")
	out, unchanged := outsideDir(t, dir)
	require.NoError(t, os.Symlink("../../outside", filepath.Join(wh, "db.db", "rel")))
	require.NoError(t, os.Symlink(out, filepath.Join(wh, "db.db", "abs")))
	fio := c.FileIO()
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
	// A table whose directory is such a link.
	require.NoError(t, os.Symlink("../../outside", filepath.Join(wh, "db.db", "t")))
	_, err := c.GetTable(ctx, "db", "t")
	requireEscape(t, err, dir, "db.db/t/schema")
	_, err = c.CreateTable(ctx, "db", "t", Schema{Columns: testCols}, false)
	requireEscape(t, err, dir, "db.db/t/schema")
	requireEscape(t, c.DropTable(ctx, "db", "t", false), dir, "db.db/t/schema")
	unchanged()
	// Removing the link removes the link, not what it points to.
	require.NoError(t, fio.RemoveAll(ctx, "db.db/t"))
	require.NoError(t, fio.RemoveAll(ctx, "db.db/abs"))
	require.NoError(t, fio.Remove(ctx, "db.db/rel"))
	unchanged()
	require.Equal(t, []string{"outside", "wh"}, topDirs(t, dir))
}

// TestSymlinkedFileOutOfWarehouseRefused: a link to a file outside cannot be read; replacing
// or removing it replaces or removes the link, never the file it points to.
func TestSymlinkedFileOutOfWarehouseRefused(t *testing.T) {
	ctx := context.Background()
	dir, c := confinedCatalog(t)
	wh := filepath.Join(dir, "wh")
	out, unchanged := outsideDir(t, dir)
	link := filepath.Join(wh, "db.db", "f")
	require.NoError(t, os.Symlink(filepath.Join(out, "secret"), link))
	fio := c.FileIO()
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

// TestSymlinkInsideWarehouseFollowed: relative links that stay in the warehouse (another
// engine's layout, an operator's alias) are followed, and ".." that stays inside is fine; an
// absolute link is refused even when it points inside (os.Root resolves no absolute link).
func TestSymlinkInsideWarehouseFollowed(t *testing.T) {
	ctx := context.Background()
	dir, c := confinedCatalog(t)
	wh := filepath.Join(dir, "wh")
	tb, err := c.CreateTable(ctx, "db", "t", Schema{Columns: testCols}, false)
	require.NoError(t, err)
	require.NoError(t, os.Symlink("t", filepath.Join(wh, "db.db", "alias")))
	require.NoError(t, os.Symlink("../db.db/t/schema", filepath.Join(wh, "db.db", "up")))
	fio := c.FileIO()
	want, err := fio.Read(ctx, schemaPath(tb.Path(), 0))
	require.NoError(t, err)
	for _, p := range []string{"db.db/alias/schema/schema-0", "db.db/up/schema-0", "db.db/alias/../t/schema/schema-0"} {
		got, err := fio.Read(ctx, p)
		require.NoError(t, err, p)
		require.Equal(t, want, got, p)
	}
	require.NoError(t, os.Symlink(filepath.Join(wh, "db.db", "t"), filepath.Join(wh, "db.db", "absolute")))
	_, err = fio.Read(ctx, "db.db/absolute/schema/schema-0")
	requireEscape(t, err, dir, "db.db/absolute/schema/schema-0")
	ents, err := fio.List(ctx, "db.db/up")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	require.NoError(t, fio.WriteAtomic(ctx, "db.db/alias/f", []byte("x")))
	require.FileExists(t, filepath.Join(wh, "db.db", "t", "f"))
}

// TestRootFSRefusesPathsOutsideItsDirectory: below the catalog's textual check, the file
// system itself refuses paths outside the warehouse, ".." included.
func TestRootFSRefusesPathsOutsideItsDirectory(t *testing.T) {
	dir := t.TempDir()
	wh := filepath.Join(dir, "wh")
	require.NoError(t, os.Mkdir(wh, 0o755))
	_, unchanged := outsideDir(t, dir)
	r := rootFS{dir: wh}
	for _, p := range []string{filepath.Join(wh, "..", "outside", "secret"), filepath.Join(dir, "outside", "secret"), "/etc/passwd", dir} {
		_, err := r.ReadFile(p)
		require.ErrorIs(t, err, ErrInvalidPath, p)
		_, err = r.Stat(p)
		require.ErrorIs(t, err, ErrInvalidPath, p)
		require.ErrorIs(t, r.Remove(p), ErrInvalidPath, p)
		require.ErrorIs(t, r.RemoveAll(p), ErrInvalidPath, p)
		require.ErrorIs(t, r.Rename(filepath.Join(wh, "a"), p), ErrInvalidPath, p)
		require.ErrorIs(t, r.Link(p, filepath.Join(wh, "a")), ErrInvalidPath, p)
	}
	unchanged()
}

// TestSymlinkSwappedInDuringUseRefused: a table's bucket directory is moved out of the
// warehouse and replaced by a link to it while the table is open: reads of its files,
// writes into it and the table's removal never reach outside.
func TestSymlinkSwappedInDuringUseRefused(t *testing.T) {
	ctx := context.Background()
	dir, c := confinedCatalog(t)
	wh := filepath.Join(dir, "wh")
	tb, err := c.CreateTable(ctx, "db", "t", Schema{Columns: testCols}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}}, nil, nil)
	s1, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"1,a,x"}, scanAll(t, tb, s1, nil))

	bucket := filepath.Join(wh, "db.db", "t", "bucket-0")
	moved := filepath.Join(dir, "moved")
	require.NoError(t, os.Rename(bucket, moved))
	require.NoError(t, os.Symlink(moved, bucket))
	before := filesUnder(t, moved)
	require.Len(t, before, 1)

	err = scanErr(ctx, tb, s1)
	requireEscape(t, err, dir, "db.db/t/bucket-0/")
	w = tb.NewWrite(ctx)
	rec := buildRows(t, tb, []row{{2, sp("b"), "x"}})
	defer rec.Release()
	err = w.Write(ctx, 0, rec, nil, nil)
	if err == nil {
		_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: 1})
	} else {
		w.Abort()
	}
	requireEscape(t, err, dir, "db.db/t/bucket-0")
	require.Equal(t, before, filesUnder(t, moved), "nothing written outside")

	require.NoError(t, c.DropTable(ctx, "db", "t", false))
	require.Equal(t, before, filesUnder(t, moved), "the drop removed the link only")
	require.NoFileExists(t, bucket)
}
