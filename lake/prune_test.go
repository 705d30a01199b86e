package lake

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/paimontype"
)

// TestRowGroupPruning: a filter on the key reads only the row groups whose
// statistics can match, on a PK table and an append table, and the rows it
// keeps are right: an append scan does not filter rows, so it returns those
// of the groups it read; a PK scan returns the rows whose key can match.
func TestRowGroupPruning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCatalog(t)
	n := 3*maxRowGroupRows + 10
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{int64(i), sp(fmt.Sprint("n", i)), "x"}
	}
	for _, tc := range []struct {
		name string
		sc   paimontype.Schema
	}{
		{"pk", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}},
		{"ap", paimontype.Schema{Columns: testCols}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := c.CreateTable(ctx, "db", tc.name, tc.sc, false)
			require.NoError(t, err)
			w := tb.NewWrite(ctx)
			var kinds []RowKind
			var seqs []int64
			if tc.sc.PrimaryKeys != nil {
				kinds = make([]RowKind, n)
				seqs = make([]int64, n)
				for i := range seqs {
					seqs[i] = int64(i)
				}
			}
			writeRows(t, w, tb, rows, kinds, seqs)
			snap, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
			require.NoError(t, err)
			count := func(f []expr.Predicate) (int, bool) {
				rr, err := tb.Scan(ctx, snap, ScanOptions{Filter: f})
				require.NoError(t, err)
				defer rr.Release()
				got, found := 0, false
				for rr.Next() {
					rec := rr.RecordBatch()
					got += int(rec.NumRows())
					for _, id := range rec.Column(0).(interface{ Int64Values() []int64 }).Int64Values() {
						found = found || id == int64(maxRowGroupRows+5)
					}
				}
				require.NoError(t, rr.Err())
				return got, found
			}
			all, _ := count(nil)
			require.Equal(t, n, all)
			got, found := count([]expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{int64(maxRowGroupRows + 5)}}})
			if tc.sc.PrimaryKeys != nil {
				require.Equal(t, 1, got, "the key's row of one row group")
			} else {
				require.Equal(t, maxRowGroupRows, got, "one row group")
			}
			require.True(t, found)
			got, _ = count([]expr.Predicate{{Column: "id", Op: expr.OpGe, Values: []any{int64(3 * maxRowGroupRows)}}})
			require.Equal(t, 10, got, "the last, short row group")
			got, _ = count([]expr.Predicate{{Column: "id", Op: expr.OpLt, Values: []any{int64(-1)}}})
			require.Equal(t, 0, got)
		})
	}
}

// TestLargeAppendGroupsAreSplit: a round of one busy append bucket is
// written as several files (encoded in parallel) with consecutive sequence
// ranges, and every row is there once.
func TestLargeAppendGroupsAreSplit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "big", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	const batches, per = 60, 10000
	for b := 0; b < batches; b++ {
		rows := make([]row, per)
		for i := range rows {
			rows[i] = row{int64(b*per + i), sp("n"), "x"}
		}
		writeRows(t, w, tb, rows, nil, nil)
	}
	snap, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	entries, _, err := tb.dataFiles(ctx, snap)
	require.NoError(t, err)
	if runtime.GOMAXPROCS(0) > 1 {
		require.Greater(t, len(entries), 1, "split for parallel encoding")
	}
	seq := int64(0)
	var total int64
	sort.Slice(entries, func(i, j int) bool { return entries[i].File.MinSequenceNumber < entries[j].File.MinSequenceNumber })
	for _, e := range entries {
		require.Equal(t, seq, e.File.MinSequenceNumber)
		require.Equal(t, seq+e.File.RowCount-1, e.File.MaxSequenceNumber)
		seq += e.File.RowCount
		total += e.File.RowCount
	}
	require.Equal(t, int64(batches*per), total)
	rr, err := tb.Scan(ctx, snap, ScanOptions{Columns: []string{"id"}})
	require.NoError(t, err)
	defer rr.Release()
	seen := make([]bool, batches*per)
	for rr.Next() {
		for _, id := range rr.RecordBatch().Column(0).(interface{ Int64Values() []int64 }).Int64Values() {
			require.False(t, seen[id], "row %d twice", id)
			seen[id] = true
		}
	}
	require.NoError(t, rr.Err())
	for id, ok := range seen {
		require.True(t, ok, "row %d missing", id)
	}
}
