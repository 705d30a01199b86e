package lake

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// Flushed files are invisible until Commit, which publishes them with the
// rows still buffered: every (partition, bucket) gets consecutive sequence
// ranges above its newest, in the order the rows were written, and a read
// of the snapshot returns exactly the rows written.
func TestFlushPublishesFilesInRowOrder(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols, PartitionKeys: []string{"dt"},
		Options: map[string]string{"bucket": "2", "bucket-key": "id"}}, false)
	require.NoError(t, err)
	var want []string
	nextID := int64(0)
	write := func(w *Write, n int) {
		var rows []row
		for i := 0; i < n; i++ {
			dt := []string{"a", "b", "c"}[nextID%3]
			rows = append(rows, row{id: nextID, name: sp(fmt.Sprint("n", nextID)), dt: dt})
			want = append(want, fmt.Sprintf("%d,n%d,%s", nextID, nextID, dt))
			nextID++
		}
		writeRows(t, w, tb, rows, nil, nil)
	}
	// a first snapshot, so that the buckets have sequence numbers already
	w := tb.NewWrite(ctx)
	write(w, 50)
	first, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)

	w = tb.NewWrite(ctx)
	write(w, 300)
	require.EqualValues(t, 300, w.Buffered())
	require.NoError(t, w.Flush(ctx, 1))
	require.Zero(t, w.Buffered())
	write(w, 60)
	require.NoError(t, w.Flush(ctx, 2))
	require.NoError(t, w.Flush(ctx, 2), "nothing buffered: nothing to do")
	write(w, 2000)

	// flushed, not committed: on disk, not in the table
	onDisk := 0
	for _, g := range w.groups {
		for _, f := range g.flushed {
			_, err := os.Stat(tb.osPath(f.path))
			require.NoError(t, err)
			onDisk++
		}
	}
	require.Equal(t, 2*6, onDisk, "two flushes, six groups each")
	latest, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, first.ID, latest.ID)

	// a conflicting commit fails and can be retried with the flushed files
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: 0})
	require.ErrorIs(t, err, ErrCommitConflict)
	snap, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: first.ID})
	require.NoError(t, err)
	sort.Strings(want)
	require.Equal(t, want, scanAll(t, tb, snap, nil))
	require.EqualValues(t, 2360, snap.DeltaRecordCount)

	// per (partition, bucket): files in sequence order hold consecutive
	// ranges and increasing ids, the ones of this commit above the first's
	entries, _, err := tb.dataFiles(ctx, snap)
	require.NoError(t, err)
	require.Len(t, entries, 6*4, "each group: one file of the first commit, two flushed, one at commit")
	byGroup := map[string][]manifest.Entry{}
	for _, e := range entries {
		k := fmt.Sprintf("%x/%d", e.Partition, e.Bucket)
		byGroup[k] = append(byGroup[k], e)
	}
	colTypes := []paimontype.DataType{testCols[0].Type, testCols[1].Type, testCols[2].Type}
	for k, es := range byGroup {
		sort.Slice(es, func(i, j int) bool { return es[i].File.MinSequenceNumber < es[j].File.MinSequenceNumber })
		require.EqualValues(t, 0, es[0].File.MinSequenceNumber, k)
		lastID := int64(-1)
		for i, e := range es {
			f := e.File
			require.Equal(t, f.RowCount, f.MaxSequenceNumber-f.MinSequenceNumber+1, k)
			if i > 0 {
				require.Equal(t, es[i-1].File.MaxSequenceNumber+1, f.MinSequenceNumber, k)
			}
			mins, err := decodeStatsRow(colTypes, f.ValueStats.MinValues)
			require.NoError(t, err)
			maxs, err := decodeStatsRow(colTypes, f.ValueStats.MaxValues)
			require.NoError(t, err)
			require.Greater(t, mins[0].(int64), lastID, "%s: file %d's rows come after the previous file's", k, i)
			lastID = maxs[0].(int64)
		}
	}
}

// Abort removes the files Flush wrote; a primary-key write's Flush spills
// a sorted run instead (sortedrun_test.go).
func TestFlushAbortAndPrimaryKey(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{id: 1, dt: "x"}, {id: 2, dt: "x"}}, nil, nil)
	require.NoError(t, w.Flush(ctx, 2))
	var paths []string
	for _, g := range w.groups {
		for _, f := range g.flushed {
			paths = append(paths, f.path)
		}
	}
	require.Len(t, paths, 1)
	w.Abort()
	for _, p := range paths {
		_, err := os.Stat(tb.osPath(p))
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	require.ErrorContains(t, w.Flush(ctx, 1), "already committed or aborted")

	pk, err := c.CreateTable(ctx, "db", "pk", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	pw := pk.NewWrite(ctx)
	defer pw.Abort()
	writeRows(t, pw, pk, []row{{id: 1, dt: "x"}}, []RowKind{Insert}, []int64{0})
	pw.SetSpillDir(t.TempDir())
	require.NoError(t, pw.Flush(ctx, 1))
	require.EqualValues(t, 0, pw.Buffered())
	require.Equal(t, 1, pw.Runs())
}
