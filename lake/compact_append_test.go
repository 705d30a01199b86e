package lake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/paimontype"
)

func TestCompactAppend(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols, PartitionKeys: []string{"dt"}}, false)
	require.NoError(t, err)
	for i := int64(0); i < 6; i++ {
		commitAny(t, tb, []map[string]any{{"id": i, "name": "a", "dt": "x"}, {"id": 100 + i, "name": nil, "dt": "y"}})
	}
	// An older schema for the first files: name becomes n2 and a column is added.
	tb = evolve(t, c, "ap", func(ts *paimontype.TableSchema) {
		ts.Fields[1].Name = "n2"
		ts.Fields = append(ts.Fields, paimontype.DataField{ID: ts.HighestFieldID + 1, Name: "extra", Type: paimontype.DataType{Root: paimontype.TypeBigInt}})
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
	pk, err := c.CreateTable(ctx, "db", "pk", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
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
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols}, false)
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

// Files of the current schema written by this writer are joined byte for
// byte: the output keeps every input row group (re-encoding would have cut
// 128K-row groups), holds the same rows, and its manifest statistics are
// the ones writing its rows would have produced. Row-group statistics
// still prune, and a file that is not concatenable is re-encoded.
func TestCompactAppendConcatenatesFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	// the first file has two row groups, the second small; file 2 only null names
	sizes := []int{maxRowGroupRows + 500, minConcatRowGroupRows + 1, 20000, minConcatRowGroupRows}
	var snap *Snapshot
	next := int64(0)
	for f, n := range sizes {
		rows := make([]row, n)
		for i := range rows {
			next++
			rows[i] = row{id: next * 7 % 1000003, dt: fmt.Sprintf("d%d", f)}
			if i%3 != 0 && f != 2 { // file 2: only a null name
				rows[i].name = sp(fmt.Sprintf("n%d", next%977))
			}
		}
		rec := buildRows(t, tb, rows)
		w := tb.NewWrite(ctx)
		require.NoError(t, w.Write(ctx, 0, rec, nil, nil))
		rec.Release()
		prev := int64(0)
		if snap != nil {
			prev = snap.ID
		}
		snap, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: prev + 1, ExpectedLatest: prev})
		require.NoError(t, err)
	}
	want := scanAll(t, tb, snap, nil)
	inputs, _, err := tb.dataFiles(ctx, snap)
	require.NoError(t, err)
	require.Len(t, inputs, len(sizes))
	cs, err := tb.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: snap.ID, MinFiles: 2})
	require.NoError(t, err)
	require.NotNil(t, cs)
	require.Equal(t, want, scanAll(t, tb, cs, nil))
	files, _, err := tb.dataFiles(ctx, cs)
	require.NoError(t, err)
	require.Len(t, files, 1)
	out := files[0].File
	require.Equal(t, int64(len(want)), out.RowCount)
	require.Equal(t, inputs[0].File.MinSequenceNumber, out.MinSequenceNumber)
	require.Equal(t, inputs[len(inputs)-1].File.MaxSequenceNumber, out.MaxSequenceNumber)
	path := tb.dataFilePath(nil, nil, 0, out.FileName)
	st, err := os.Stat(tb.osPath(path))
	require.NoError(t, err)
	require.Equal(t, st.Size(), out.FileSize)
	pf, err := openParquet(ctx, tb.fio, path, memory.DefaultAllocator)
	require.NoError(t, err)
	require.Equal(t, 5, pf.pr.NumRowGroups(), "every input row group, copied")
	// The manifest statistics are those of the rows, as writing them computes.
	var types []paimontype.DataType
	for _, f := range tb.Schema().Fields {
		types = append(types, f.Type)
	}
	sc := newStatsCollector(types)
	for rg := 0; rg < pf.pr.NumRowGroups(); rg++ {
		rec, err := pf.readRowGroup(ctx, rg, tb.Schema().ArrowSchema().Fields(), memory.DefaultAllocator)
		require.NoError(t, err)
		for i := range types {
			sc.addColumn(i, rec.Column(i))
		}
		rec.Release()
	}
	require.NoError(t, pf.Close())
	require.Equal(t, sc.stats(), out.ValueStats)
	// Row-group statistics came along: a filter on id reads the right rows.
	rr, err := tb.Scan(ctx, cs, ScanOptions{Filter: []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{int64(7 * 3)}}}})
	require.NoError(t, err)
	found := 0
	for rr.Next() {
		ids := rr.RecordBatch().Column(0).(*array.Int64)
		for i := 0; i < ids.Len(); i++ {
			if ids.Value(i) == 21 {
				found++
			}
		}
	}
	require.NoError(t, rr.Err())
	rr.Release()
	require.Equal(t, 1, found)

	// A file of another schema is re-encoded with the rest.
	tb = evolve(t, c, "ap", func(ts *paimontype.TableSchema) {
		ts.Fields = append(ts.Fields, paimontype.DataField{ID: ts.HighestFieldID + 1, Name: "extra", Type: paimontype.DataType{Root: paimontype.TypeBigInt}})
		ts.HighestFieldID++
	})
	s2 := commitAny(t, tb, []map[string]any{{"id": int64(-1), "dt": "z", "extra": int64(5)}})
	want = scanAll(t, tb, s2, nil)
	cs, err = tb.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: s2.ID, MinFiles: 2})
	require.NoError(t, err)
	require.NotNil(t, cs)
	require.Equal(t, want, scanAll(t, tb, cs, nil))
	files, _, err = tb.dataFiles(ctx, cs)
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.Equal(t, tb.Schema().ID, files[0].File.SchemaID)

	// Tiny files (a slow table's rounds) are re-encoded into one row group
	// rather than joined as a row group each.
	tiny, err := c.CreateTable(ctx, "db", "tiny", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	for i := int64(0); i < 3; i++ {
		snap = commitAny(t, tiny, []map[string]any{{"id": i, "dt": "x"}, {"id": 10 + i, "name": "n", "dt": "x"}})
	}
	cs, err = tiny.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: snap.ID, MinFiles: 2})
	require.NoError(t, err)
	require.NotNil(t, cs)
	files, _, err = tiny.dataFiles(ctx, cs)
	require.NoError(t, err)
	require.Len(t, files, 1)
	pf, err = openParquet(ctx, tiny.fio, tiny.dataFilePath(nil, nil, 0, files[0].File.FileName), memory.DefaultAllocator)
	require.NoError(t, err)
	require.Equal(t, 1, pf.pr.NumRowGroups())
	require.NoError(t, pf.Close())
}
