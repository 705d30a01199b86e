package manifest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/stretchr/testify/require"
)

// A deletion-vector index file Java Paimon 1.4.2 wrote (version byte, one 32-bit vector
// deleting positions 0, 1, 3 and 7; its range is offset 1, length 28).
const javaDVIndexFile = "010000001c5e43f2d03a30000001000000000003001000000000000100030007000d1ce160"

// dv32 frames a 32-bit vector as BitmapDeletionVector.serializeTo does.
func dv32(t *testing.T, positions ...uint32) []byte {
	t.Helper()
	bm := roaring.BitmapOf(positions...)
	bm.RunOptimize()
	var data bytes.Buffer
	require.NoError(t, binary.Write(&data, binary.BigEndian, uint32(dvMagic32)))
	_, err := bm.WriteTo(&data)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, binary.Write(&out, binary.BigEndian, uint32(data.Len())))
	out.Write(data.Bytes())
	require.NoError(t, binary.Write(&out, binary.BigEndian, crc32.ChecksumIEEE(data.Bytes())))
	return out.Bytes()
}

// dv64 frames a 64-bit vector as Bitmap64DeletionVector.serializeTo does.
func dv64(t *testing.T, positions ...uint64) []byte {
	t.Helper()
	parts := map[uint32]*roaring.Bitmap{}
	var keys []uint32
	for _, p := range positions {
		k := uint32(p >> 32)
		if parts[k] == nil {
			parts[k] = roaring.New()
			keys = append(keys, k)
		}
		parts[k].Add(uint32(p))
	}
	var data bytes.Buffer
	require.NoError(t, binary.Write(&data, binary.LittleEndian, uint32(dvMagic64)))
	require.NoError(t, binary.Write(&data, binary.LittleEndian, uint64(len(keys))))
	for _, k := range keys {
		require.NoError(t, binary.Write(&data, binary.LittleEndian, k))
		_, err := parts[k].WriteTo(&data)
		require.NoError(t, err)
	}
	var out bytes.Buffer
	require.NoError(t, binary.Write(&out, binary.BigEndian, uint32(data.Len())))
	out.Write(data.Bytes())
	require.NoError(t, binary.Write(&out, binary.BigEndian, crc32.ChecksumIEEE(data.Bytes())))
	return out.Bytes()
}

func positionsOf(dv *DeletionVector, upTo int64) []int64 {
	var out []int64
	for p := int64(0); p < upTo; p++ {
		if dv.Contains(p) {
			out = append(out, p)
		}
	}
	return out
}

func TestDeletionVectorJavaBytes(t *testing.T) {
	file, err := hex.DecodeString(javaDVIndexFile)
	require.NoError(t, err)
	require.Equal(t, byte(IndexFileVersion), file[0])
	dv, err := ParseDeletionVector(file[1:], 28)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 3, 7}, positionsOf(dv, 100))
	require.EqualValues(t, 4, dv.Cardinality())
	require.EqualValues(t, 7, dv.MaxPosition())
	require.EqualValues(t, 2, dv.CountIn(1, 7))
	require.EqualValues(t, 0, dv.CountIn(8, 1000))
	// Go's roaring writes the same bytes for the same positions (no run containers here).
	require.Equal(t, file[1:], dv32(t, 0, 1, 3, 7))
}

func TestDeletionVectorForms(t *testing.T) {
	big := make([]uint32, 0, 5000)
	for i := uint32(1000); i < 6000; i++ { // a run container
		big = append(big, i)
	}
	b := dv32(t, big...)
	dv, err := ParseDeletionVector(b, int64(len(b)-8))
	require.NoError(t, err)
	require.EqualValues(t, 5000, dv.Cardinality())
	require.EqualValues(t, 5000, dv.CountIn(0, 1<<20))
	require.EqualValues(t, 1, dv.CountIn(5999, 6000))
	require.False(t, dv.Contains(999))
	require.True(t, dv.Contains(1000))

	b = dv64(t, 2, 9, 1<<32+5)
	dv, err = ParseDeletionVector(b, int64(len(b)))
	require.NoError(t, err)
	require.EqualValues(t, 3, dv.Cardinality())
	require.Equal(t, []int64{2, 9}, positionsOf(dv, 100))
	require.True(t, dv.Contains(1<<32+5))
	require.False(t, dv.Contains(5))
	require.EqualValues(t, 1<<32+5, dv.MaxPosition())
	require.EqualValues(t, 3, dv.CountIn(0, 1<<33))
}

func TestDeletionVectorCorrupt(t *testing.T) {
	good := dv32(t, 1, 2, 3)
	length := int64(len(good) - 8)
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0xff
		return b
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		length int64
		want   string
	}{
		{"magic", flip(5), length, "magic number"},
		{"checksum", flip(len(good) - 1), length, "checksum"},
		{"bitmap", flip(12), length, "checksum"},
		{"range length", good, length + 1, "does not match its range length"},
		{"truncated", good[:len(good)-3], length, "truncated"},
		{"empty", nil, length, "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDeletionVector(tc.b, tc.length)
			require.ErrorContains(t, err, tc.want)
		})
	}
	b64 := dv64(t, 4)
	_, err := ParseDeletionVector(b64, int64(len(b64)-8))
	require.ErrorContains(t, err, "does not match its range length")
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

func TestIndexManifestDecode(t *testing.T) {
	four := int64(4)
	ranges := []*testDVRange{{F0: "data-a.parquet", F1: 1, F2: 28, Cardinality: &four}, nil, {F0: "data-b.parquet", F1: 37, F2: 28}}
	part := emptyRowBytes
	recs := []testIndexEntry{
		{Version: 1, Kind: FileKindAdd, Partition: part, Bucket: 1, IndexType: DeletionVectorsIndexType, FileName: "index-x-0",
			FileSize: 65, RowCount: 2, Ranges: &ranges},
		{Version: 1, Kind: FileKindAdd, Partition: part, Bucket: 0, IndexType: "HASH", FileName: "index-x-1", FileSize: 8, RowCount: 2},
		{Version: 1, Kind: FileKindAdd, Partition: part, Bucket: 0, IndexType: DeletionVectorsIndexType, FileName: "index-x-2", FileSize: 9, RowCount: 1},
		{Version: 1, Kind: FileKindDelete, Partition: part, Bucket: 0, IndexType: DeletionVectorsIndexType, FileName: "index-x-2", FileSize: 9, RowCount: 1},
	}
	data, err := EncodeAvro(indexManifestSchema, recs)
	require.NoError(t, err)
	entries, err := DecodeIndexManifest(data)
	require.NoError(t, err)
	require.Len(t, entries, 4)
	e := entries[0]
	require.Equal(t, int32(1), e.Bucket)
	require.Equal(t, DeletionVectorsIndexType, e.IndexType)
	require.Equal(t, []DVRange{{DataFile: "data-a.parquet", Offset: 1, Length: 28, Cardinality: &four},
		{DataFile: "data-b.parquet", Offset: 37, Length: 28}}, e.DVRanges)
	require.Nil(t, entries[1].DVRanges)

	bad := bytes.Clone(data)
	_, err = DecodeIndexManifest(bad[:len(bad)/2])
	require.Error(t, err)
}
