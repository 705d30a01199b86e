package lake

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// addDeletionVectors commits a copy of the latest snapshot whose index manifest gives the named
// data files (of bucket 0, unpartitioned) the deletion vectors of the given positions, written as
// Java does: one index file, version byte, then the 32-bit vectors.
func addDeletionVectors(t *testing.T, tb *Table, dels map[string][]uint32, cardinality map[string]int64) *Snapshot {
	t.Helper()
	ctx := context.Background()
	prev := mustLatest(t, tb)
	file := []byte{manifest.IndexFileVersion}
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
	data, err := manifest.EncodeAvro(indexManifestSchema, []testIndexEntry{{Version: 1, Kind: manifest.FileKindAdd,
		Partition: manifest.SerializeBinaryRow(0, manifest.EncodeBinaryRow(nil, nil)), Bucket: 0, IndexType: manifest.DeletionVectorsIndexType,
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
	require.ErrorIs(t, err, manifest.ErrCorrupt)
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

// The deletion-vector fixtures below write index files and index manifests as Java does (package
// manifest tests its decoders with the same bytes): dv32 frames a 32-bit vector,
// BitmapDeletionVector's magic number 1581511376 first.

// dv32 frames a 32-bit vector as BitmapDeletionVector.serializeTo does.
func dv32(t *testing.T, positions ...uint32) []byte {
	t.Helper()
	bm := roaring.BitmapOf(positions...)
	bm.RunOptimize()
	var data bytes.Buffer
	require.NoError(t, binary.Write(&data, binary.BigEndian, uint32(1581511376)))
	_, err := bm.WriteTo(&data)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, binary.Write(&out, binary.BigEndian, uint32(data.Len())))
	out.Write(data.Bytes())
	require.NoError(t, binary.Write(&out, binary.BigEndian, crc32.ChecksumIEEE(data.Bytes())))
	return out.Bytes()
}

// indexManifestSchema is IndexManifestEntry.SCHEMA as Java's Avro converter writes it.
const indexManifestSchema = `{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[` +
	`{"name":"_VERSION","type":"int"},{"name":"_KIND","type":"int"},{"name":"_PARTITION","type":"bytes"},` +
	`{"name":"_BUCKET","type":"int"},{"name":"_INDEX_TYPE","type":"string"},{"name":"_FILE_NAME","type":"string"},` +
	`{"name":"_FILE_SIZE","type":"long"},{"name":"_ROW_COUNT","type":"long"},` +
	`{"name":"_DELETIONS_VECTORS_RANGES","type":["null",{"type":"array","items":["null",{"type":"record",` +
	`"name":"record__DELETIONS_VECTORS_RANGES","fields":[{"name":"f0","type":"string"},{"name":"f1","type":"int"},` +
	`{"name":"f2","type":"int"},{"name":"_CARDINALITY","type":["null","long"],"default":null}]}]}],"default":null},` +
	`{"name":"_EXTERNAL_PATH","type":["null","string"],"default":null}]}`

type testDVRange struct {
	F0          string `avro:"f0"`
	F1          int32  `avro:"f1"`
	F2          int32  `avro:"f2"`
	Cardinality *int64 `avro:"_CARDINALITY"`
}

type testIndexEntry struct {
	Version      int32           `avro:"_VERSION"`
	Kind         int32           `avro:"_KIND"`
	Partition    []byte          `avro:"_PARTITION"`
	Bucket       int32           `avro:"_BUCKET"`
	IndexType    string          `avro:"_INDEX_TYPE"`
	FileName     string          `avro:"_FILE_NAME"`
	FileSize     int64           `avro:"_FILE_SIZE"`
	RowCount     int64           `avro:"_ROW_COUNT"`
	Ranges       *[]*testDVRange `avro:"_DELETIONS_VECTORS_RANGES"`
	ExternalPath *string         `avro:"_EXTERNAL_PATH"`
}

// TestReadIndexManifestCancels: readIndexManifest cancels an ADD with its DELETE.
func TestReadIndexManifestCancels(t *testing.T) {
	require.Equal(t, make([]byte, 12), emptyRowBytes, "package manifest's tests spell the empty row as 12 zero bytes")
	four := int64(4)
	ranges := []*testDVRange{{F0: "data-a.parquet", F1: 1, F2: 28, Cardinality: &four}, nil, {F0: "data-b.parquet", F1: 37, F2: 28}}
	part := emptyRowBytes
	recs := []testIndexEntry{
		{Version: 1, Kind: manifest.FileKindAdd, Partition: part, Bucket: 1, IndexType: manifest.DeletionVectorsIndexType, FileName: "index-x-0",
			FileSize: 65, RowCount: 2, Ranges: &ranges},
		{Version: 1, Kind: manifest.FileKindAdd, Partition: part, Bucket: 0, IndexType: "HASH", FileName: "index-x-1", FileSize: 8, RowCount: 2},
		{Version: 1, Kind: manifest.FileKindAdd, Partition: part, Bucket: 0, IndexType: manifest.DeletionVectorsIndexType, FileName: "index-x-2", FileSize: 9, RowCount: 1},
		{Version: 1, Kind: manifest.FileKindDelete, Partition: part, Bucket: 0, IndexType: manifest.DeletionVectorsIndexType, FileName: "index-x-2", FileSize: 9, RowCount: 1},
	}
	data, err := manifest.EncodeAvro(indexManifestSchema, recs)
	require.NoError(t, err)

	c, err := OpenCatalog(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, c.CreateDatabase(t.Context(), "db", false))
	tb, err := c.CreateTable(t.Context(), "db", "t", paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: paimontype.DataType{Root: paimontype.TypeBigInt}}}}, false)
	require.NoError(t, err)
	require.NoError(t, tb.fio.WriteAtomic(context.Background(), filepath.Join(tb.Path(), "manifest", "index-manifest-1"), data))
	live, err := tb.readIndexManifest(context.Background(), "index-manifest-1")
	require.NoError(t, err)
	require.Len(t, live, 2)
	require.Equal(t, "index-x-0", live[0].FileName)
	require.Equal(t, "index-x-1", live[1].FileName)

}
