package lake

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// Fuzz targets for every decoder of bytes another engine (or a damaged
// file) can hand the lake: snapshot JSON, manifest, manifest-list and
// index-manifest Avro, and deletion vectors (type strings and schema JSON
// are fuzzed in package paimontype). Seeds are the files a small table
// written here holds, plus testdata/fuzz/<target>.

// fuzzFiles is what a small primary-key table with nested columns holds
// after two commits, by kind: "schema", "snapshot", "manifest-list",
// "manifest". Built once per test binary.
var fuzzFiles = sync.OnceValues(func() (map[string][][]byte, error) {
	dir, err := os.MkdirTemp("", "lake-fuzz-seeds")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	c, err := OpenCatalog(dir)
	if err != nil {
		return nil, err
	}
	if err := c.CreateDatabase(ctx, "db", false); err != nil {
		return nil, err
	}
	var cols []paimontype.Column
	for _, s := range []string{"id BIGINT", "name STRING", "tags ARRAY<STRING>", "m MAP<STRING, INT>",
		"r ROW<a INT, b DECIMAL(10, 2)>", "ts TIMESTAMP(3)"} {
		name, typ, _ := strings.Cut(s, " ")
		dt, err := paimontype.ParseType(typ)
		if err != nil {
			return nil, err
		}
		cols = append(cols, paimontype.Column{Name: name, Type: dt, Comment: "column " + name})
	}
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: cols, PrimaryKeys: []string{"id"},
		Options: map[string]string{"bucket": "2"}, Comment: "fuzz seeds"}, false)
	if err != nil {
		return nil, err
	}
	for i, rows := range []string{
		`[{"id": 1, "name": "a", "tags": ["x", null], "m": [{"key": "k", "value": 1}], "r": {"a": 1, "b": "1.25"}, "ts": "2024-01-02T03:04:05.006"},
		  {"id": 2, "name": null, "tags": [], "m": [], "r": null, "ts": null}]`,
		`[{"id": 2, "name": "b", "tags": null, "m": null, "r": {"a": null, "b": "-3.50"}, "ts": "1970-01-01T00:00:00"}]`,
	} {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, tb.Schema().ArrowSchema(), strings.NewReader(rows))
		if err != nil {
			return nil, err
		}
		buckets, err := tb.Buckets(rec)
		if err != nil {
			return nil, err
		}
		w := tb.NewWrite(ctx)
		for r := range int(rec.NumRows()) {
			one := rec.NewSlice(int64(r), int64(r+1))
			err := w.Write(ctx, buckets[r], one, []RowKind{Insert}, []int64{int64(10*i + r)})
			one.Release()
			if err != nil {
				return nil, err
			}
		}
		rec.Release()
		if _, err := w.Commit(ctx, CommitOptions{CommitUser: "fuzz", Identifier: int64(i + 1), ExpectedLatest: int64(i),
			Properties: map[string]string{"k": "v"}}); err != nil {
			return nil, err
		}
	}
	out := map[string][][]byte{}
	err = filepath.WalkDir(tb.Path(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		var kind string
		switch {
		case strings.HasPrefix(name, "schema-"):
			kind = "schema"
		case strings.HasPrefix(name, "snapshot-"):
			kind = "snapshot"
		case strings.HasPrefix(name, "manifest-list-"):
			kind = "manifest-list"
		case strings.HasPrefix(name, "manifest-"):
			kind = "manifest"
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		out[kind] = append(out[kind], b)
		return err
	})
	return out, err
})

func addFileSeeds(f *testing.F, kind string) {
	files, err := fuzzFiles()
	require.NoError(f, err)
	require.NotEmpty(f, files[kind], "no %s files written", kind)
	for _, b := range files[kind] {
		f.Add(b)
	}
}

// FuzzSnapshotJSON: a snapshot file decodes or fails with an error; a
// decoded snapshot writes a file that reads back to the same snapshot.
func FuzzSnapshotJSON(f *testing.F) {
	addFileSeeds(f, "snapshot")
	f.Add([]byte(`{"version": 1, "id": 1, "schemaId": 0, "baseManifestList": "a", "deltaManifestList": "b", "commitUser": "u",
		"commitIdentifier": 1, "commitKind": "APPEND", "timeMillis": 1, "totalRecordCount": null, "unknown": [1, {"x": 2}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Snapshot
		if err := json.Unmarshal(b, &s); err != nil {
			return
		}
		out, err := s.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var back Snapshot
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%s\nwrote\n%s\nwhich does not read back: %v", b, out, err)
		}
		s.Version = 3 // what MarshalJSON writes
		if !reflect.DeepEqual(s, back) {
			t.Fatalf("%s\nread as %+v\nwrote\n%s\nread back as %+v", b, s, out, back)
		}
	})
}

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

// FuzzManifest: a manifest decodes or fails with an error; decoded entries
// encode to a manifest that decodes to the same entries.
func FuzzManifest(f *testing.F) {
	addFileSeeds(f, "manifest")
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeManifest(b)
		if err != nil {
			return
		}
		enc, err := encodeManifest(entries)
		if err != nil {
			t.Fatalf("encode %+v: %v", entries, err)
		}
		back, err := decodeManifest(enc)
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
	addFileSeeds(f, "manifest-list")
	f.Fuzz(func(t *testing.T, b []byte) {
		metas, err := decodeManifestList(b)
		if err != nil {
			return
		}
		enc, err := encodeManifestList(metas)
		if err != nil {
			t.Fatalf("encode %+v: %v", metas, err)
		}
		back, err := decodeManifestList(enc)
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
		{Version: 1, Kind: FileKindAdd, Partition: serializeBinaryRow(0, encodeBinaryRow(nil, nil)), Bucket: 0,
			IndexType: deletionVectorsIndexType, FileName: "index-0", FileSize: 69, RowCount: 2, Ranges: &ranges},
		{Version: 1, Kind: FileKindDelete, IndexType: "HASH", FileName: "index-1", FileSize: 8},
	} {
		data, err := encodeAvro(indexManifestSchema, []testIndexEntry{e})
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeIndexManifest(b)
		if err != nil {
			return
		}
		again, err := decodeIndexManifest(b)
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
		dv, err := parseDeletionVector(b, length)
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
		if card != dv.card {
			t.Fatalf("cardinality %d, parts hold %d", dv.card, card)
		}
		maxPos := dv.maxPosition()
		if (maxPos < 0) != (card == 0) {
			t.Fatalf("max position %d with %d positions", maxPos, card)
		}
		for _, p := range positions {
			if int64(p) < 0 {
				continue // beyond what a data file has: readers refuse it via maxPosition
			}
			if !dv.contains(int64(p)) {
				t.Fatalf("position %d listed but not contained", p)
			}
		}
		if maxPos >= 0 && maxPos < 1<<32 {
			if n := dv.countIn(0, maxPos+1); n != card {
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
		back, err := parseDeletionVector(framed, frameLen)
		if err != nil {
			t.Fatalf("positions %v framed again do not parse: %v", positions, err)
		}
		if back.card != dv.card || back.maxPosition() != maxPos {
			t.Fatalf("positions %v framed again parse as %d positions up to %d", positions, back.card, back.maxPosition())
		}
	})
}
