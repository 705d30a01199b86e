package lake

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// Fuzz target for the snapshot JSON another engine (or a damaged file) can
// hand the lake. Type strings and schema JSON are fuzzed in package
// paimontype; manifest, manifest-list and index-manifest Avro and deletion
// vectors in package manifest. Seeds are the files a small table written
// here holds.

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
