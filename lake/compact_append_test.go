package lake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompactAppend(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable("db", "ap", Schema{Columns: testCols, PartitionKeys: []string{"dt"}}, false)
	require.NoError(t, err)
	for i := int64(0); i < 6; i++ {
		commitAny(t, tb, []map[string]any{{"id": i, "name": "a", "dt": "x"}, {"id": 100 + i, "name": nil, "dt": "y"}})
	}
	// An older schema for the first files: name becomes n2 and a column is added.
	tb = evolve(t, c, "ap", func(ts *TableSchema) {
		ts.Fields[1].Name = "n2"
		ts.Fields = append(ts.Fields, DataField{ID: ts.HighestFieldID + 1, Name: "extra", Type: DataType{Root: TypeBigInt}})
		ts.HighestFieldID++
	})
	snap := commitAny(t, tb, []map[string]any{{"id": int64(50), "n2": "new", "dt": "x", "extra": int64(5)}})
	want := scanAll(t, tb, snap, nil)
	require.Len(t, want, 13)
	before, _, err := tb.dataFiles(ctx, snap)
	require.NoError(t, err)
	require.Len(t, before, 13)

	_, err = tb.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: snap.ID - 1})
	require.ErrorIs(t, err, ErrCommitConflict)
	cs, err := tb.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: snap.ID})
	require.NoError(t, err)
	require.NotNil(t, cs)
	require.Equal(t, CommitKindCompact, cs.CommitKind)
	require.Equal(t, int64(0), cs.DeltaRecordCount)
	require.Equal(t, snap.TotalRecordCount, cs.TotalRecordCount)
	require.Equal(t, want, scanAll(t, tb, cs, nil))
	after, _, err := tb.dataFiles(ctx, cs)
	require.NoError(t, err)
	require.Len(t, after, 2, "one file per partition")
	for _, e := range after {
		require.Equal(t, tb.Schema().ID, e.File.SchemaID)
		require.Equal(t, fileSourceCompact, *e.File.FileSource)
		require.EqualValues(t, 0, e.File.Level)
	}
	// Nothing left to compact; a later write still reads.
	again, err := tb.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: cs.ID})
	require.NoError(t, err)
	require.Nil(t, again)
	s := commitAny(t, tb, []map[string]any{{"id": int64(51), "dt": "y"}})
	require.Len(t, scanAll(t, tb, s, nil), 14)

	// Primary-key tables are Compact's.
	pk, err := c.CreateTable("db", "pk", Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	ps := commitAny(t, pk, []map[string]any{{"id": int64(1), "dt": "x"}})
	none, err := pk.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: ps.ID, MinFiles: 1})
	require.NoError(t, err)
	require.Nil(t, none)
}
