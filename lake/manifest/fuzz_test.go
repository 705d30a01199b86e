package manifest

import (
	"encoding/hex"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Fuzz targets for the decoders of bytes another engine (or a damaged file)
// can hand the lake: manifest, manifest-list and index-manifest Avro, and
// deletion vectors. Seeds are built here, plus testdata/fuzz/<target> (the
// manifests and manifest lists of a small primary-key table with nested
// columns, written by package lake, for FuzzManifest and FuzzManifestList).

// normalizeForAvro makes empty and nil byte and string slices alike and times
// comparable, for comparing entries before and after an Avro round trip.
func normalizeForAvro(v any) any {
	rv := reflect.ValueOf(v)
	fuzzNormValue(rv)
	return v
}

func fuzzNormValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if tm, ok := v.Interface().(*time.Time); ok {
			*tm = tm.UTC()
			return
		}
		fuzzNormValue(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			fuzzNormValue(v.Field(i))
		}
	case reflect.Slice:
		if v.Len() == 0 {
			if v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := range v.Len() {
			fuzzNormValue(v.Index(i))
		}
	}
}

// seedEntries are manifest entries with every optional field set and unset.
func seedEntries() []Entry {
	ct := time.UnixMilli(1_700_000_000_123).UTC()
	one, two := int64(1), int32(2)
	ext := "s3://bucket/ext/data-2.parquet"
	return []Entry{
		{Kind: FileKindAdd, Partition: emptyRowBytes, Bucket: 1, TotalBuckets: 2,
			File: DataFileMeta{FileName: "data-1.parquet", FileSize: 10, RowCount: 1, MinKey: emptyRowBytes, MaxKey: emptyRowBytes,
				KeyStats: emptyStats(), ValueStats: SimpleStats{MinValues: emptyRowBytes, MaxValues: emptyRowBytes,
					NullCounts: []*int64{&one, nil}}, MinSequenceNumber: 3, MaxSequenceNumber: 4, SchemaID: 1, Level: 5,
				ExtraFiles: []string{"x"}, CreationTime: &ct, DeleteRowCount: &one, EmbeddedIndex: []byte{1},
				FileSource: &two, ValueStatsCols: []string{"a", "b"}, ExternalPath: &ext, FirstRowID: &one, WriteCols: []string{"a"}}},
		{Kind: FileKindDelete, Partition: emptyRowBytes, TotalBuckets: 1,
			File: DataFileMeta{FileName: "data-2.parquet", MinKey: emptyRowBytes, MaxKey: emptyRowBytes,
				KeyStats: emptyStats(), ValueStats: emptyStats(), ExtraFiles: []string{}}},
	}
}

func addSeeds(f *testing.F) {
	es := seedEntries()
	for _, seed := range [][]Entry{nil, es[:1], es} {
		data, err := Encode(seed)
		require.NoError(f, err)
		f.Add(data)
	}
}

func addListSeeds(f *testing.F) {
	b0, b1 := int32(0), int32(3)
	for _, seed := range [][]FileMeta{nil, {{FileName: "manifest-1", FileSize: 100, NumAddedFiles: 2, NumDeletedFiles: 1,
		PartitionStats: emptyStats(), SchemaID: 1, MinBucket: &b0, MaxBucket: &b1, MinLevel: &b0, MaxLevel: &b1}},
		{{FileName: "manifest-2", PartitionStats: emptyStats()}}} {
		data, err := EncodeList(seed)
		require.NoError(f, err)
		f.Add(data)
	}
}

// FuzzManifest: a manifest decodes or fails with an error; decoded entries
// encode to a manifest that decodes to the same entries.
func FuzzManifest(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := Decode(b)
		if err != nil {
			return
		}
		enc, err := Encode(entries)
		if err != nil {
			t.Fatalf("encode %+v: %v", entries, err)
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("entries %+v encode to a manifest that does not decode: %v", entries, err)
		}
		normalizeForAvro(&entries)
		normalizeForAvro(&back)
		if len(entries) != len(back) || len(entries) > 0 && !reflect.DeepEqual(entries, back) {
			t.Fatalf("entries %+v decode back as %+v", entries, back)
		}
	})
}

// FuzzManifestList: as FuzzManifest, for manifest lists.
func FuzzManifestList(f *testing.F) {
	addListSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		metas, err := DecodeList(b)
		if err != nil {
			return
		}
		enc, err := EncodeList(metas)
		if err != nil {
			t.Fatalf("encode %+v: %v", metas, err)
		}
		back, err := DecodeList(enc)
		if err != nil {
			t.Fatalf("metas %+v encode to a manifest list that does not decode: %v", metas, err)
		}
		normalizeForAvro(&metas)
		normalizeForAvro(&back)
		if len(metas) != len(back) || len(metas) > 0 && !reflect.DeepEqual(metas, back) {
			t.Fatalf("metas %+v decode back as %+v", metas, back)
		}
	})
}

// FuzzIndexManifest: an index manifest (deletion vectors) decodes or fails
// with an error (flightd writes none: decoding only).
func FuzzIndexManifest(f *testing.F) {
	card := int64(4)
	ranges := []*testDVRange{{F0: "data-0.parquet", F1: 1, F2: 28, Cardinality: &card}, {F0: "data-1.parquet", F1: 29, F2: 40}}
	for _, e := range []testIndexEntry{
		{Version: 1, Kind: FileKindAdd, Partition: emptyRowBytes, Bucket: 0,
			IndexType: DeletionVectorsIndexType, FileName: "index-0", FileSize: 69, RowCount: 2, Ranges: &ranges},
		{Version: 1, Kind: FileKindDelete, IndexType: "HASH", FileName: "index-1", FileSize: 8},
	} {
		data, err := EncodeAvro(indexManifestSchema, []testIndexEntry{e})
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := DecodeIndexManifest(b)
		if err != nil {
			return
		}
		again, err := DecodeIndexManifest(b)
		if err != nil || !reflect.DeepEqual(entries, again) {
			t.Fatalf("decoding twice differs: %+v, then %+v (%v)", entries, again, err)
		}
	})
}

// FuzzDeletionVector: any bytes and range length parse as a vector or fail
// with an error; a parsed vector's positions, framed again, parse as the
// same positions, and its counts agree with its positions.
func FuzzDeletionVector(f *testing.F) {
	javaFile, err := hex.DecodeString(javaDVIndexFile)
	require.NoError(f, err)
	f.Add(javaFile[1:], int64(28)) // the vector Java Paimon wrote, at its range
	f.Fuzz(func(t *testing.T, b []byte, length int64) {
		dv, err := ParseDeletionVector(b, length)
		if err != nil {
			return
		}
		var card uint64
		var positions []uint64
		for _, p := range dv.parts {
			card += p.bm.GetCardinality()
			if len(positions) < 1<<16 {
				it := p.bm.Iterator()
				for it.HasNext() && len(positions) < 1<<16 {
					positions = append(positions, uint64(p.key)<<32|uint64(it.Next()))
				}
			}
		}
		if card != dv.Cardinality() {
			t.Fatalf("cardinality %d, parts hold %d", dv.Cardinality(), card)
		}
		maxPos := dv.MaxPosition()
		if (maxPos < 0) != (card == 0) {
			t.Fatalf("max position %d with %d positions", maxPos, card)
		}
		for _, p := range positions {
			if int64(p) < 0 {
				continue // beyond what a data file has: readers refuse it via maxPosition
			}
			if !dv.Contains(int64(p)) {
				t.Fatalf("position %d listed but not contained", p)
			}
		}
		if maxPos >= 0 && maxPos < 1<<32 {
			if n := dv.CountIn(0, maxPos+1); n != card {
				t.Fatalf("countIn(0, %d) = %d, cardinality %d", maxPos+1, n, card)
			}
		}
		if card > 1<<16 || maxPos < 0 {
			return
		}
		// Frame the positions again, as Java's writers do, and parse them back.
		var framed []byte
		var frameLen int64
		if len(dv.parts) == 1 && dv.parts[0].key == 0 {
			p32 := make([]uint32, len(positions))
			for i, p := range positions {
				p32[i] = uint32(p)
			}
			framed = dv32(t, p32...)
			frameLen = int64(len(framed) - 8)
		} else {
			framed = dv64(t, positions...)
			frameLen = int64(len(framed))
		}
		back, err := ParseDeletionVector(framed, frameLen)
		if err != nil {
			t.Fatalf("positions %v framed again do not parse: %v", positions, err)
		}
		if back.Cardinality() != dv.Cardinality() || back.MaxPosition() != maxPos {
			t.Fatalf("positions %v framed again parse as %d positions up to %d", positions, back.Cardinality(), back.MaxPosition())
		}
	})
}
