package lake

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// addDeletionVectors commits a copy of the latest snapshot whose index manifest gives the named
// data files (of bucket 0, unpartitioned) the deletion vectors of the given positions, written as
// Java does: one index file, version byte, then the 32-bit vectors.
func addDeletionVectors(t *testing.T, tb *Table, dels map[string][]uint32, cardinality map[string]int64) *Snapshot {
	t.Helper()
	ctx := context.Background()
	prev := mustLatest(t, tb)
	file := []byte{dvIndexVersion}
	ranges := []*testDVRange{}
	for name, pos := range dels {
		b := dv32(t, pos...)
		card := int64(len(pos))
		if c, ok := cardinality[name]; ok {
			card = c
		}
		ranges = append(ranges, &testDVRange{F0: name, F1: int32(len(file)), F2: int32(binary.BigEndian.Uint32(b)), Cardinality: &card})
		file = append(file, b...)
	}
	require.NoError(t, tb.fio.WriteAtomic(ctx, filepath.Join(tb.Path(), "index", "index-test-0"), file))
	data, err := encodeAvro(indexManifestSchema, []testIndexEntry{{Version: 1, Kind: FileKindAdd,
		Partition: serializeBinaryRow(0, encodeBinaryRow(nil, nil)), Bucket: 0, IndexType: deletionVectorsIndexType,
		FileName: "index-test-0", FileSize: int64(len(file)), RowCount: int64(len(dels)), Ranges: &ranges}})
	require.NoError(t, err)
	im := "index-manifest-test-0"
	require.NoError(t, tb.fio.WriteAtomic(ctx, tb.manifestPath(im), data))
	next := *prev
	next.ID++
	next.IndexManifest = &im
	js, err := next.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, tb.fio.CreateExclusive(ctx, tb.snapshotPath(next.ID), js))
	return &next
}

func enableDeletionVectors(t *testing.T, c *Catalog, name string) *Table {
	t.Helper()
	_, err := c.AlterTableOptions(context.Background(), "db", name, map[string]string{"deletion-vectors.enabled": "true"})
	require.ErrorIs(t, err, ErrUnsupported, "Java refuses to switch deletion vectors without deletion-vectors.modifiable")
	tb, err := c.AlterTableOptions(context.Background(), "db", name,
		map[string]string{"deletion-vectors.enabled": "true", "deletion-vectors.modifiable": "true"})
	require.NoError(t, err)
	return tb
}

func TestDeletionVectorsAppendScan(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	var files []string
	for i, rows := range [][]row{{{1, sp("a"), "x"}, {2, sp("b"), "x"}, {3, sp("c"), "x"}, {4, nil, "x"}}, {{5, sp("e"), "y"}, {6, sp("f"), "y"}}} {
		w := tb.NewWrite(ctx)
		writeRows(t, w, tb, rows, nil, nil)
		s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: int64(i + 1), ExpectedLatest: int64(i)})
		require.NoError(t, err)
		entries, _, err := tb.dataFiles(ctx, s)
		require.NoError(t, err)
		files = append(files, entries[len(entries)-1].File.FileName)
	}
	tb = enableDeletionVectors(t, c, "ap")
	snap := addDeletionVectors(t, tb, map[string][]uint32{files[0]: {1, 3}, files[1]: {0}}, nil)
	require.Equal(t, []string{"1,a,x", "3,c,x", "6,f,y"}, scanAll(t, tb, snap, nil))
	require.Equal(t, []string{"a", "c", "f"}, scanAll(t, tb, snap, []string{"name"}))

	// flightd reads deletion-vector tables but does not write or compact them.
	w := tb.NewWrite(ctx)
	rec := buildRows(t, tb, []row{{9, sp("z"), "x"}})
	defer rec.Release()
	err = w.Write(ctx, 0, rec, nil, nil)
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorContains(t, err, "db.ap")
	require.ErrorContains(t, err, "deletion-vectors.enabled")
	_, err = tb.Compact(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: snap.ID})
	require.ErrorIs(t, err, ErrUnsupported)
}

func TestDeletionVectorsCorruptNamesFile(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}, {2, sp("b"), "x"}}, nil, nil)
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	entries, _, err := tb.dataFiles(ctx, s)
	require.NoError(t, err)
	name := entries[0].File.FileName
	tb = enableDeletionVectors(t, c, "ap")

	scanErr := func(snap *Snapshot) error {
		rr, err := tb.Scan(ctx, snap, ScanOptions{})
		require.NoError(t, err)
		defer rr.Release()
		for rr.Next() {
		}
		return rr.Err()
	}
	// The index manifest claims another cardinality.
	snap := addDeletionVectors(t, tb, map[string][]uint32{name: {0}}, map[string]int64{name: 2})
	err = scanErr(snap)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "db.ap")
	require.ErrorContains(t, err, name)
	require.ErrorContains(t, err, "index-test-0")

	// A position beyond the file's rows.
	require.NoError(t, tb.fio.Remove(ctx, filepath.Join(tb.Path(), "index", "index-test-0")))
	snap = addDeletionVectors(t, tb, map[string][]uint32{name: {5}}, nil)
	require.ErrorContains(t, scanErr(snap), "deletes row 5 of a file with 2 rows")

	// A flipped bit in the vector.
	p := filepath.Join(tb.Path(), "index", "index-test-0")
	b, err := tb.fio.Read(ctx, p)
	require.NoError(t, err)
	b = bytes.Clone(b)
	b[len(b)-6] ^= 1
	require.NoError(t, tb.fio.WriteAtomic(ctx, p, b))
	require.ErrorContains(t, scanErr(snap), "checksum")

	// A missing index file.
	require.NoError(t, tb.fio.Remove(ctx, p))
	require.ErrorContains(t, scanErr(snap), "index-test-0")
}

func TestDeletionVectorsPrimaryKeyLevels(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "pk", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	for i := int64(0); i < 2; i++ {
		w := tb.NewWrite(ctx)
		writeRows(t, w, tb, []row{{1 + i, sp("a"), "x"}, {2 + i, sp("b"), "x"}, {3 + i, sp("c"), "x"}}, []RowKind{Insert, Insert, Insert}, []int64{1, 2, 3})
		_, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: i + 1, ExpectedLatest: i})
		require.NoError(t, err)
	}
	s, err := tb.Compact(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: 2, MinFiles: 2})
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{2, sp("level0"), "x"}, {9, sp("level0"), "x"}}, []RowKind{Insert, Insert}, []int64{1, 2})
	s, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 4, ExpectedLatest: s.ID})
	require.NoError(t, err)
	require.Equal(t, []string{"1,a,x", "2,level0,x", "3,b,x", "4,c,x", "9,level0,x"}, scanAll(t, tb, s, nil))
	entries, _, err := tb.dataFiles(ctx, s)
	require.NoError(t, err)
	var top string
	for _, e := range entries {
		if e.File.Level > 0 {
			top = e.File.FileName
		}
	}
	require.NotEmpty(t, top)

	// With deletion vectors a batch read skips level 0 (as Java does) and reads the compacted
	// file raw with its vector applied (position 1 is key 2).
	tb = enableDeletionVectors(t, c, "pk")
	require.Equal(t, []string{"1,a,x", "2,a,x", "3,b,x", "4,c,x"}, scanAll(t, tb, s, nil))
	snap := addDeletionVectors(t, tb, map[string][]uint32{top: {1}}, nil)
	require.Equal(t, []string{"1,a,x", "3,b,x", "4,c,x"}, scanAll(t, tb, snap, nil))
}

// A vector applies to positions across row groups of one data file.
func TestDeletionVectorsAcrossRowGroups(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	n := 2*maxRowGroupRows + 1000
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{id: int64(i), dt: "x"}
	}
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, rows, nil, nil)
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	entries, _, err := tb.dataFiles(ctx, s)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	tb = enableDeletionVectors(t, c, "ap")
	del := []uint32{0, maxRowGroupRows - 1, maxRowGroupRows, 2 * maxRowGroupRows, uint32(n - 1)}
	snap := addDeletionVectors(t, tb, map[string][]uint32{entries[0].File.FileName: del}, nil)
	got := scanAll(t, tb, snap, []string{"id"})
	require.Len(t, got, n-len(del))
	seen := map[string]bool{}
	for _, g := range got {
		seen[g] = true
	}
	for _, d := range del {
		require.False(t, seen[fmt.Sprint(d)], "row %d is deleted", d)
	}
	require.True(t, seen[fmt.Sprint(maxRowGroupRows+1)])
}
