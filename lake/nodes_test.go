package lake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/paimontype"
)

// Several processes (flightd nodes) serve one warehouse, each through its
// own Catalog. A Table one of them opened must tell, cheaply, whether the
// table of that name is still the one it was opened as (CheckSchema).

func init() {
	lakeScenarios = append(lakeScenarios, lakeScenario{"TableOfOtherCatalogSeesItsDDL", scenarioTableOfOtherCatalogSeesItsDDL})
}

// scenarioTableOfOtherCatalogSeesItsDDL: a Table opened through catalog B
// is checked against what catalog A (another process) did to the table:
// ALTER makes it SchemaNewer, DROP, RENAME and DROP then CREATE of the same
// name make it SchemaReplaced, also when the new table reached the same
// schema id, which an existence check of the next schema id alone took for
// the old table. A commit changes nothing, and its snapshot is read. A
// check costs one read of the table's schema file and one existence check
// of the next, made at once.
func scenarioTableOfOtherCatalogSeesItsDDL(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	a := openWithDB(t, b)
	counter := &countingFileIO{calls: map[string]int{}}
	other := b.open(t, func(f fileio.FileIO) fileio.FileIO { counter.FileIO = f; return counter })
	s := paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}
	_, err := a.CreateTable(ctx, "db", "t", s, false)
	require.NoError(t, err)
	check := func(tb *Table) SchemaState {
		t.Helper()
		st, err := tb.CheckSchema(ctx)
		require.NoError(t, err)
		return st
	}
	open := func() *Table {
		t.Helper()
		tb, err := other.GetTable(ctx, "db", "t")
		require.NoError(t, err)
		return tb
	}

	tb := open()
	counter.take()
	require.Equal(t, SchemaCurrent, check(tb))
	require.Equal(t, map[string]int{"read": 1, "version": 1}, counter.take(),
		"a check reads the schema file and stats the next one (one HEAD on S3), nothing else")

	// A commit through A: the schema stays, the snapshot is B's to read.
	at, err := a.GetTable(ctx, "db", "t")
	require.NoError(t, err)
	w := at.NewWrite(ctx)
	writeRows(t, w, at, []row{{1, sp("a"), "x"}}, []RowKind{Insert}, []int64{1})
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	require.Equal(t, SchemaCurrent, check(tb))
	snap, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"1,a,x"}, scanAll(t, tb, snap, nil))

	// ALTER through A.
	_, err = a.AlterTableOptions(ctx, "db", "t", map[string]string{"k": "1"})
	require.NoError(t, err)
	require.Equal(t, SchemaNewer, check(tb))
	tb1 := open()
	require.Equal(t, SchemaCurrent, check(tb1))
	require.Equal(t, "1", tb1.Schema().Options["k"])

	// DROP, then CREATE of the same name brought to the same schema id.
	require.NoError(t, a.DropTable(ctx, "db", "t", false))
	require.Equal(t, SchemaReplaced, check(tb1))
	require.Equal(t, SchemaReplaced, check(tb))
	s.Options = map[string]string{"bucket": "1", "k": "new"}
	_, err = a.CreateTable(ctx, "db", "t", s, false)
	require.NoError(t, err)
	_, err = a.AlterTableOptions(ctx, "db", "t", map[string]string{"k": "2"})
	require.NoError(t, err)
	require.Equal(t, SchemaReplaced, check(tb1), "schema-1 exists, of another table")
	require.Equal(t, SchemaReplaced, check(tb), "schema-0 exists, of another table")
	tb2 := open()
	require.Equal(t, SchemaCurrent, check(tb2))
	snap, err = tb2.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Nil(t, snap, "the new table has no snapshot")
	require.True(t, tb2.SameSchemaFile(open()))
	require.False(t, tb2.SameSchemaFile(tb1))

	if b.name != "local" {
		return // RENAME TO is refused on S3
	}
	require.NoError(t, a.RenameTable(ctx, "db", "t", "db", "u"))
	require.Equal(t, SchemaReplaced, check(tb2), "renamed away")
	u, err := other.GetTable(ctx, "db", "u")
	require.NoError(t, err)
	require.Equal(t, SchemaCurrent, check(u))
	require.NoError(t, a.RenameTable(ctx, "db", "u", "db", "t"))
	require.Equal(t, SchemaCurrent, check(tb2), "renamed back: the very same table")
}
