package lake

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

func init() {
	lakeScenarios = append(lakeScenarios, lakeScenario{"RenameTable", scenarioRenameTable})
}

// scenarioRenameTable: RENAME TO moves the table directory, so the renamed
// table has every snapshot and row of the old one, and the old name is
// gone. On S3 the rename is refused, naming why, and nothing moves.
func scenarioRenameTable(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "2"}}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}, {2, sp("b"), "x"}}, []RowKind{Insert, Insert}, []int64{1, 2})
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)

	err = c.RenameTable(ctx, "db", "t", "db", "u")
	if b.name != "local" {
		require.ErrorIs(t, err, ErrUnsupported)
		require.ErrorContains(t, err, "rename table db.t to db.u")
		require.ErrorContains(t, err, "object store")
		require.ErrorContains(t, err, "split between both names")
		got, err := c.GetTable(ctx, "db", "t")
		require.NoError(t, err)
		snap, err := got.LatestSnapshot(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"1,a,x", "2,b,x"}, scanAll(t, got, snap, nil))
		return
	}
	require.NoError(t, err)
	_, err = c.GetTable(ctx, "db", "t")
	require.ErrorIs(t, err, ErrTableNotFound)
	tables, err := c.ListTables(ctx, "db")
	require.NoError(t, err)
	require.Equal(t, []string{"u"}, tables)
	u, err := c.GetTable(ctx, "db", "u")
	require.NoError(t, err)
	snap, err := u.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), snap.ID)
	require.Equal(t, []string{"1,a,x", "2,b,x"}, scanAll(t, u, snap, nil))
	// The renamed table takes commits in its new directory.
	w = u.NewWrite(ctx)
	writeRows(t, w, u, []row{{3, sp("c"), "x"}}, []RowKind{Insert}, []int64{3})
	s2, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"1,a,x", "2,b,x", "3,c,x"}, scanAll(t, u, s2, nil))
	require.NoDirExists(t, b.localPath(filepath.Join(filepath.Dir(u.Path()), "t")))

	// Into another database, as Java's filesystem catalog allows.
	require.NoError(t, c.CreateDatabase(ctx, "other", false))
	require.NoError(t, c.RenameTable(ctx, "db", "u", "other", "v"))
	v, err := c.GetTable(ctx, "other", "v")
	require.NoError(t, err)
	s2, err = v.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"1,a,x", "2,b,x", "3,c,x"}, scanAll(t, v, s2, nil))
	require.NoError(t, c.RenameTable(ctx, "other", "v", "db", "t"))
}

// TestRenameTableRefusals: each refused rename names the tables and what
// was wrong, and leaves both names as they were.
func TestRenameTableRefusals(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	s := paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}
	for _, n := range []string{"t", "u"} {
		_, err := c.CreateTable(ctx, "db", n, s, false)
		require.NoError(t, err)
	}
	// A directory that is not a table (no schema) is in the way.
	require.NoError(t, os.MkdirAll(filepath.Join(c.Warehouse(), "db.db", "junk", "x"), 0o755))
	// An empty one too: rename(2) would replace it silently.
	require.NoError(t, os.MkdirAll(filepath.Join(c.Warehouse(), "db.db", "empty"), 0o755))
	for _, tc := range []struct {
		fromDB, from, toDB, to string
		err                    error
		says                   string
	}{
		{"db", "u", "db", "t", ErrTableExists, "rename table db.u to db.t: lake: table already exists: db.t"},
		{"db", "t", "db", "t", ErrTableExists, "that is the table's name"},
		{"db", "t", "db", "junk", ErrTableExists, "db.db/junk that is not a table is in the way"},
		{"db", "t", "db", "empty", ErrTableExists, "db.db/empty that is not a table is in the way"},
		{"db", "missing", "db", "x", ErrTableNotFound, "db.missing"},
		{"db", "t", "nodb", "x", ErrDatabaseNotFound, "database nodb"},
		{"db", "t$snapshots", "db", "x", ErrInvalidName, "db.t$snapshots names a system table"},
		{"db", "t", "db", "x$rt", ErrInvalidName, "db.x$rt names a system table"},
		{"sys", "t", "db", "x", ErrInvalidName, "Paimon's system database"},
		{"db", "t", "sys", "x", ErrInvalidName, "Paimon's system database"},
		{"db", "t", "db", "a/b", ErrInvalidName, "path separator"},
		{"db", "t", "db", ".hidden", ErrInvalidName, "starts with '.'"},
		{"db", "t", "db", "", ErrInvalidName, "is empty"},
	} {
		err := c.RenameTable(ctx, tc.fromDB, tc.from, tc.toDB, tc.to)
		require.ErrorIs(t, err, tc.err, "%s.%s -> %s.%s", tc.fromDB, tc.from, tc.toDB, tc.to)
		require.ErrorContains(t, err, tc.says)
		require.False(t, strings.Contains(err.Error(), c.Warehouse()), "the error names no server path: %v", err)
	}
	tables, err := c.ListTables(ctx, "db")
	require.NoError(t, err)
	require.Equal(t, []string{"t", "u"}, tables)
	require.DirExists(t, filepath.Join(c.Warehouse(), "db.db", "empty"))
	require.DirExists(t, filepath.Join(c.Warehouse(), "db.db", "junk", "x"))
}
