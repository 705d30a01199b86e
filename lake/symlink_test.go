package lake

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/fileiotest"
	"github.com/flightd/flightd/lake/paimontype"
)

// requireEscape checks that err is a refusal to leave the warehouse naming the path relative
// to it, and no path of the server.
func requireEscape(t *testing.T, err error, dir, rel string) {
	t.Helper()
	require.ErrorIs(t, err, fileio.ErrInvalidPath)
	requireRelative(t, err, dir, rel)
}

// TestTableSymlinkedOutOfWarehouseRefused: a table whose directory is a symbolic link to
// outside the warehouse cannot be read, created or dropped through; nothing outside is
// touched. (The FileIO's own refusals of such links, and the removal of the link, are
// fileio's TestSymlinkOutOfRootRefused.)
func TestTableSymlinkedOutOfWarehouseRefused(t *testing.T) {
	ctx := context.Background()
	dir, c := confinedCatalog(t)
	wh := filepath.Join(dir, "wh")
	_, unchanged := fileiotest.OutsideDir(t, dir)
	require.NoError(t, os.Symlink("../../outside", filepath.Join(wh, "db.db", "t")))
	_, err := c.GetTable(ctx, "db", "t")
	requireEscape(t, err, dir, "db.db/t/schema")
	_, err = c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols}, false)
	requireEscape(t, err, dir, "db.db/t/schema")
	requireEscape(t, c.DropTable(ctx, "db", "t", false), dir, "db.db/t/schema")
	unchanged()
	require.Equal(t, []string{"outside", "wh"}, fileiotest.Entries(t, dir))
}

// TestSymlinkSwappedInDuringUseRefused: a table's bucket directory is moved out of the
// warehouse and replaced by a link to it while the table is open: reads of its files,
// writes into it and the table's removal never reach outside.
func TestSymlinkSwappedInDuringUseRefused(t *testing.T) {
	ctx := context.Background()
	dir, c := confinedCatalog(t)
	wh := filepath.Join(dir, "wh")
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols}, false)
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
	before := fileiotest.FilesUnder(t, moved)
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
	require.Equal(t, before, fileiotest.FilesUnder(t, moved), "nothing written outside")

	require.NoError(t, c.DropTable(ctx, "db", "t", false))
	require.Equal(t, before, fileiotest.FilesUnder(t, moved), "the drop removed the link only")
	require.NoFileExists(t, bucket)
}
