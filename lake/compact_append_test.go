package lake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

// With MaxFiles, a run of small files is compacted only once it fills a
// file (so no row is rewritten twice), or once the bucket holds MaxFiles
// small files.
func TestCompactAppendWaitsForAFullFile(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable("db", "ap", Schema{Columns: testCols}, false)
	require.NoError(t, err)
	var snap *Snapshot
	id := int64(0)
	commit := func(n int) {
		for i := 0; i < n; i++ {
			id++
			// an incompressible value, so that sizes add up as with real data
			name := make([]byte, 8<<10)
			_, _ = rand.Read(name)
			snap = commitAny(t, tb, []map[string]any{{"id": id, "name": hex.EncodeToString(name), "dt": "x"}})
		}
	}
	compact := func(target int64) *Snapshot {
		cs, err := tb.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: snap.ID, MinFiles: 2, MaxFiles: 6, TargetFileSize: target})
		require.NoError(t, err)
		if cs != nil {
			snap = cs
		}
		return cs
	}
	commit(1)
	files, _, err := tb.dataFiles(ctx, snap)
	require.NoError(t, err)
	one := files[0].File.FileSize
	// four files fill one, 85% of the target (sizes vary by a few bytes)
	fourFill := (4*one - 4*one/100) * 20 / 17

	commit(2)
	require.Nil(t, compact(fourFill), "three files do not fill a file: wait")
	commit(1)
	require.NotNil(t, compact(fourFill), "four files fill one")
	after, _, err := tb.dataFiles(ctx, snap)
	require.NoError(t, err)
	require.Len(t, after, 1)
	require.GreaterOrEqual(t, after[0].File.FileSize*10, fourFill*7, "the output is not small, so it is never rewritten")

	// With a target no run fills, small files are merged once there are
	// MaxFiles of them.
	commit(4)
	require.Nil(t, compact(100*one), "five small files")
	commit(1)
	require.NotNil(t, compact(100*one), "six small files")
	after, _, err = tb.dataFiles(ctx, snap)
	require.NoError(t, err)
	require.Len(t, after, 1)
	require.Len(t, scanAll(t, tb, snap, nil), 9)
}
