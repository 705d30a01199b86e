package manifest

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
	"github.com/stretchr/testify/require"
)

// A manifest whose entry holds a value over 1 MiB (a long primary key, or a
// full statistic) failed to decode with "avro: ReadBYTES: size is greater
// than Config.MaxByteSliceSize", which broke every read of the table.
func TestManifestWithValueOver1MiBDecodes(t *testing.T) {
	big := bytes.Repeat([]byte("k"), 5<<20)
	entries := []Entry{{Kind: FileKindAdd, Partition: emptyRowBytes, Bucket: 0, TotalBuckets: 1,
		File: DataFileMeta{FileName: "data-1.parquet", FileSize: 10, RowCount: 1, MinKey: big, MaxKey: big,
			KeyStats: SimpleStats{MinValues: big, MaxValues: big, NullCounts: []*int64{}}, ValueStats: emptyStats(),
			ExtraFiles: []string{}}}}
	for _, codec := range []ocf.CodecName{ocf.ZStandard, ocf.Null, ocf.Deflate, ocf.Snappy} {
		t.Run(string(codec), func(t *testing.T) {
			data := encodeManifestWithCodec(t, entries, codec)
			back, err := Decode(data)
			require.NoError(t, err)
			require.Len(t, back, 1)
			require.Equal(t, big, back[0].File.MinKey)
			require.Equal(t, big, back[0].File.KeyStats.MaxValues)
		})
	}
}

func encodeManifestWithCodec(t *testing.T, entries []Entry, codec ocf.CodecName) []byte {
	t.Helper()
	zstdData, err := Encode(entries)
	require.NoError(t, err)
	if codec == ocf.ZStandard {
		return zstdData
	}
	// re-encode the same records under another codec
	var recs []avroEntry
	for _, e := range entries {
		f := e.File
		recs = append(recs, avroEntry{Version: FormatVersion, Kind: e.Kind, Partition: nonNilBytes(e.Partition),
			Bucket: e.Bucket, TotalBuckets: e.TotalBuckets, File: avroFile{FileName: f.FileName, FileSize: f.FileSize,
				RowCount: f.RowCount, MinKey: f.MinKey, MaxKey: f.MaxKey, KeyStats: toAvroStats(f.KeyStats),
				ValueStats: toAvroStats(f.ValueStats), ExtraFiles: []string{}}})
	}
	cache := &avro.SchemaCache{}
	sch, err := avro.ParseWithCache(manifestEntrySchema, "", cache)
	require.NoError(t, err)
	var buf bytes.Buffer
	enc, err := ocf.NewEncoderWithSchema(sch, &buf, ocf.WithCodec(codec), ocf.WithEncoderSchemaCache(cache))
	require.NoError(t, err)
	for i := range recs {
		require.NoError(t, enc.Encode(recs[i]))
	}
	require.NoError(t, enc.Close())
	return buf.Bytes()
}

// Lengths in a corrupt container file are checked against what holds them:
// an error, never a panic or a huge allocation.
func TestCorruptAvroLengthsRefused(t *testing.T) {
	good, err := encodeManifestWithCodecNull(t)
	require.NoError(t, err)
	_, err = Decode(good)
	require.NoError(t, err)

	// the first block starts right after the header's sync marker
	schema, _, blocks, err := parseOCF(good)
	require.NoError(t, err)
	require.NotEmpty(t, schema)
	require.Len(t, blocks, 1)
	blockStart := bytes.Index(good, blocks[0].data)
	require.Positive(t, blockStart)
	// count and size precede the block's bytes: rewrite them
	hdrEnd := headerEnd(t, good)

	withBlockHeader := func(count, size int64) []byte {
		var out []byte
		out = append(out, good[:hdrEnd]...)
		out = binary.AppendVarint(out, count)
		out = binary.AppendVarint(out, size)
		return append(out, good[blockStart:]...)
	}
	for name, data := range map[string][]byte{
		"block larger than the file":  withBlockHeader(1, 1<<60),
		"negative block size":         withBlockHeader(1, -5),
		"more records than bytes":     withBlockHeader(1<<40, int64(len(blocks[0].data))),
		"truncated":                   good[:len(good)-20],
		"bad magic":                   append([]byte("Obj\x02"), good[4:]...),
		"bytes value longer than all": corruptFirstBytesLength(t, good, blockStart),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(data)
			require.Error(t, err)
			t.Log(err)
		})
	}
}

func encodeManifestWithCodecNull(t *testing.T) ([]byte, error) {
	entries := []Entry{{Kind: FileKindAdd, Partition: emptyRowBytes, TotalBuckets: 1,
		File: DataFileMeta{FileName: "data-1.parquet", MinKey: emptyRowBytes, MaxKey: emptyRowBytes,
			KeyStats: emptyStats(), ValueStats: emptyStats(), ExtraFiles: []string{}}}}
	return encodeManifestWithCodec(t, entries, ocf.Null), nil
}

// headerEnd is the offset after the header's sync marker (the file's last
// 16 bytes are that marker too).
func headerEnd(t *testing.T, data []byte) int {
	i := bytes.Index(data, data[len(data)-16:])
	require.Positive(t, i)
	return i + 16
}

// corruptFirstBytesLength makes the _PARTITION length of the first record
// (after the _VERSION and _KIND varints) claim far more than its block holds,
// with the block's framing rewritten to match.
func corruptFirstBytesLength(t *testing.T, good []byte, blockStart int) []byte {
	_, _, blocks, err := parseOCF(good)
	require.NoError(t, err)
	rec := blocks[0].data
	require.Equal(t, byte(0x04), rec[0], "_VERSION 2")
	block := append([]byte{rec[0], rec[1]}, binary.AppendVarint(nil, 1<<40)...)
	block = append(block, rec[3:]...)
	hdrEnd := headerEnd(t, good)
	out := append([]byte(nil), good[:hdrEnd]...)
	out = binary.AppendVarint(out, 1)
	out = binary.AppendVarint(out, int64(len(block)))
	out = append(out, block...)
	return append(out, good[hdrEnd-16:hdrEnd]...)
}
