package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// newTestCatalog uses $LAKE_KEEP_WAREHOUSE/<test name> when set (to inspect with other tools).
func newTestCatalog(t *testing.T) *Catalog {
	dir := t.TempDir()
	if keep := os.Getenv("LAKE_KEEP_WAREHOUSE"); keep != "" {
		dir = filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		require.NoError(t, os.RemoveAll(dir))
	}
	c, err := OpenCatalog(dir)
	require.NoError(t, err)
	require.NoError(t, c.CreateDatabase(t.Context(), "db", false))
	return c
}

func TestParseTypeRoundTrip(t *testing.T) {
	cases := []struct{ in, want string }{
		{"BIGINT NOT NULL", "BIGINT NOT NULL"},
		{"bigint not null", "BIGINT NOT NULL"},
		{"INTEGER", "INT"},
		{"int null", "INT"},
		{"VARCHAR", "STRING"},
		{"varchar(10)", "VARCHAR(10)"},
		{"VARCHAR(2147483647)", "STRING"},
		{"TEXT", "STRING"},
		{"STRING", "STRING"},
		{"CHAR(3)", "CHAR(3)"},
		{"CHAR", "CHAR(1)"},
		{"BINARY(4)", "BINARY(4)"},
		{"VARBINARY(8)", "VARBINARY(8)"},
		{"BYTES", "BYTES"},
		{"DECIMAL", "DECIMAL(10, 0)"},
		{"DECIMAL(10,2)", "DECIMAL(10, 2)"},
		{"DECIMAL(10, 2) NOT NULL", "DECIMAL(10, 2) NOT NULL"},
		{"NUMERIC(38, 4)", "DECIMAL(38, 4)"},
		{"DEC(5)", "DECIMAL(5, 0)"},
		{"TIMESTAMP", "TIMESTAMP(6)"},
		{"TIMESTAMP(3)", "TIMESTAMP(3)"},
		{"TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(3) WITH LOCAL TIME ZONE"},
		{"TIMESTAMP_LTZ(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"},
		{"TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMP(6)"},
		{"DATE", "DATE"},
		{"TIME", "TIME(0)"},
		{"TIME(3)", "TIME(3)"},
		{"BOOL", "BOOLEAN"},
		{"TINYINT", "TINYINT"},
		{"SMALLINT", "SMALLINT"},
		{"REAL", "FLOAT"},
		{"DOUBLE PRECISION", "DOUBLE"},
		{"ARRAY<INT NOT NULL>", "ARRAY<INT NOT NULL>"},
		{"MAP<STRING, BIGINT> NOT NULL", "MAP<STRING, BIGINT> NOT NULL"},
		{"ROW<a INT, b STRING>", "ROW<`a` INT, `b` STRING>"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			dt, err := ParseType(c.in)
			require.NoError(t, err)
			require.Equal(t, c.want, dt.String())
			again, err := ParseType(dt.String())
			require.NoError(t, err)
			require.Equal(t, dt.String(), again.String())
		})
	}
	for _, bad := range []string{"", "FOO", "DECIMAL(50, 2)", "VARCHAR(", "INT NOT", "ARRAY<INT"} {
		_, err := ParseType(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), fmt.Sprintf("%q", bad))
	}
}

func TestSchemaJSONGolden(t *testing.T) {
	ts, err := newTableSchema(Schema{
		Columns: []Column{
			{Name: "id", Type: mustType(t, "BIGINT")},
			{Name: "name", Type: mustType(t, "STRING"), Comment: "the name"},
			{Name: "tags", Type: mustType(t, "ARRAY<STRING>")},
			{Name: "dt", Type: mustType(t, "STRING")},
		},
		PrimaryKeys:   []string{"dt", "id"},
		PartitionKeys: []string{"dt"},
		Options:       map[string]string{"bucket": "4"},
	}, 1735689600000)
	require.NoError(t, err)
	got, err := ts.MarshalJSON()
	require.NoError(t, err)
	want := `{
  "version" : 3,
  "id" : 0,
  "fields" : [ {
    "id" : 0,
    "name" : "id",
    "type" : "BIGINT NOT NULL"
  }, {
    "id" : 1,
    "name" : "name",
    "type" : "STRING",
    "description" : "the name"
  }, {
    "id" : 2,
    "name" : "tags",
    "type" : {
      "type" : "ARRAY",
      "element" : "STRING"
    }
  }, {
    "id" : 3,
    "name" : "dt",
    "type" : "STRING NOT NULL"
  } ],
  "highestFieldId" : 3,
  "partitionKeys" : [ "dt" ],
  "primaryKeys" : [ "dt", "id" ],
  "options" : {
    "bucket" : "4"
  },
  "timeMillis" : 1735689600000
}`
	require.Equal(t, want, string(got))
	var back TableSchema
	require.NoError(t, json.Unmarshal(got, &back))
	again, _ := back.MarshalJSON()
	require.Equal(t, want, string(again))
	require.Equal(t, 4, back.NumBuckets())
	require.True(t, back.HasPrimaryKey())
	as := back.ArrowSchema()
	require.False(t, as.Field(0).Nullable)
	id, _ := as.Field(3).Metadata.GetValue("PARQUET:field_id")
	require.Equal(t, "3", id)
}

func TestCatalogCreateListDrop(t *testing.T) {
	c := newTestCatalog(t)
	require.ErrorIs(t, c.CreateDatabase(t.Context(), "db", false), ErrDatabaseExists)
	require.NoError(t, c.CreateDatabase(t.Context(), "db", true))
	require.NoError(t, c.CreateDatabase(t.Context(), "a", false))
	dbs, err := c.ListDatabases(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"a", "db"}, dbs)

	s := Schema{Columns: []Column{{Name: "k", Type: mustType(t, "INT")}, {Name: "v", Type: mustType(t, "STRING")}}, PrimaryKeys: []string{"k"}}
	_, err = c.CreateTable(t.Context(), "db", "t2", s, false)
	require.NoError(t, err)
	_, err = c.CreateTable(t.Context(), "db", "t1", s, false)
	require.NoError(t, err)
	_, err = c.CreateTable(t.Context(), "db", "t1", s, false)
	require.ErrorIs(t, err, ErrTableExists)
	_, err = c.CreateTable(t.Context(), "nope", "t1", s, false)
	require.ErrorIs(t, err, ErrDatabaseNotFound)
	_, err = c.CreateTable(t.Context(), "db", "bad", Schema{Columns: s.Columns, PrimaryKeys: []string{"zz"}}, false)
	require.Error(t, err)
	_, err = c.CreateTable(t.Context(), "db", "bad", Schema{Columns: append(s.Columns, s.Columns[0])}, false)
	require.Error(t, err)

	tables, err := c.ListTables(t.Context(), "db")
	require.NoError(t, err)
	require.Equal(t, []string{"t1", "t2"}, tables)
	tb, err := c.GetTable(t.Context(), "db", "t1")
	require.NoError(t, err)
	require.Equal(t, "INT NOT NULL", tb.Schema().Fields[0].Type.String())

	tb2, err := c.AlterTableOptions(context.Background(), "db", "t1", map[string]string{"x": "1"})
	require.NoError(t, err)
	require.Equal(t, int64(1), tb2.Schema().ID)
	tb3, err := c.GetTable(t.Context(), "db", "t1")
	require.NoError(t, err)
	require.Equal(t, "1", tb3.Schema().Options["x"])

	_, err = c.GetTable(t.Context(), "db", "missing")
	require.ErrorIs(t, err, ErrTableNotFound)
	require.Contains(t, err.Error(), "db.missing")
	require.NoError(t, c.DropTable(t.Context(), "db", "t1", false))
	require.ErrorIs(t, c.DropTable(t.Context(), "db", "t1", false), ErrTableNotFound)
	require.NoError(t, c.DropTable(t.Context(), "db", "t1", true))
	require.ErrorIs(t, c.DropDatabase(t.Context(), "db", false, false), ErrDatabaseNotEmpty)
	require.NoError(t, c.DropDatabase(t.Context(), "db", false, true))
	require.ErrorIs(t, c.DropDatabase(t.Context(), "db", false, false), ErrDatabaseNotFound)
}

// ---- write / scan helpers ----

type row struct {
	id   int64
	name *string
	dt   string
}

func sp(s string) *string { return &s }

func buildRows(t *testing.T, tb *Table, rows []row) arrow.RecordBatch {
	rec, err := buildRowsErr(tb, rows)
	require.NoError(t, err)
	return rec
}

func scanAll(t *testing.T, tb *Table, snap *Snapshot, cols []string) []string {
	rr, err := tb.Scan(context.Background(), snap, ScanOptions{Columns: cols})
	require.NoError(t, err)
	out := readLines(t, rr)
	sort.Strings(out)
	return out
}

// readLines renders every row of rr as its values joined by commas
// ("null" for a null) and releases rr.
func readLines(t *testing.T, rr array.RecordReader) []string {
	t.Helper()
	defer rr.Release()
	var out []string
	for rr.Next() {
		rec := rr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			var parts []string
			for c := 0; c < int(rec.NumCols()); c++ {
				col := rec.Column(c)
				if col.IsNull(r) {
					parts = append(parts, "null")
				} else {
					parts = append(parts, col.ValueStr(r))
				}
			}
			out = append(out, strings.Join(parts, ","))
		}
	}
	require.NoError(t, rr.Err())
	return out
}

// writeRows splits rows by bucket and writes them.
func writeRows(t *testing.T, w *Write, tb *Table, rows []row, kinds []RowKind, seqs []int64) {
	rec := buildRows(t, tb, rows)
	defer rec.Release()
	buckets, err := tb.Buckets(rec)
	require.NoError(t, err)
	byBucket := map[int32][]int64{}
	for i, b := range buckets {
		byBucket[b] = append(byBucket[b], int64(i))
	}
	for b, idx := range byBucket {
		sub, err := takeRecord(context.Background(), rec, idx, memory.DefaultAllocator)
		require.NoError(t, err)
		var ks []RowKind
		var ss []int64
		for _, i := range idx {
			if kinds != nil {
				ks = append(ks, kinds[i])
			}
			if seqs != nil {
				ss = append(ss, seqs[i])
			}
		}
		require.NoError(t, w.Write(context.Background(), b, sub, ks, ss))
		sub.Release()
	}
}

var testCols = []Column{{Name: "id", Type: DataType{Root: TypeBigInt}}, {Name: "name", Type: DataType{Root: TypeVarChar, Length: MaxLength}}, {Name: "dt", Type: DataType{Root: TypeVarChar, Length: MaxLength}}}

func TestPrimaryKeyWriteScan(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "pk", Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "2"}}, false)
	require.NoError(t, err)
	snap, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Nil(t, snap)
	require.Empty(t, scanAll(t, tb, nil, nil))

	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}, {2, sp("b"), "x"}, {3, nil, "x"}, {1, sp("a2"), "x"}, {4, sp("d"), "x"}},
		[]RowKind{Insert, Insert, Insert, UpdateAfter, Insert}, []int64{1, 2, 3, 4, 5})
	s1, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1, ExpectedLatest: 0, Properties: map[string]string{"log.seq": "5"}})
	require.NoError(t, err)
	require.Equal(t, int64(1), s1.ID)
	require.Equal(t, int64(4), s1.TotalRecordCount)
	require.Equal(t, []string{"1,a2,x", "2,b,x", "3,null,x", "4,d,x"}, scanAll(t, tb, s1, nil))

	w2 := tb.NewWrite(ctx)
	writeRows(t, w2, tb, []row{{2, sp("b2"), "x"}, {3, nil, "x"}, {5, sp("e"), "x"}, {5, sp("e"), "x"}},
		[]RowKind{UpdateAfter, Delete, Insert, Delete}, []int64{6, 7, 8, 9})
	s2, err := w2.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: 1, Properties: map[string]string{"log.seq": "9"}})
	require.NoError(t, err)
	require.Equal(t, int64(2), s2.ID)
	require.Equal(t, "9", s2.Properties["log.seq"])
	require.Equal(t, []string{"1,a2,x", "2,b2,x", "4,d,x"}, scanAll(t, tb, s2, nil))
	require.Equal(t, []string{"a2", "b2", "d"}, scanAll(t, tb, s2, []string{"name"}))
	// old snapshot still readable
	require.Equal(t, []string{"1,a2,x", "2,b,x", "3,null,x", "4,d,x"}, scanAll(t, tb, s1, nil))

	latest, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), latest.ID)

	// delete row counts and min/max keys are exact
	entries, _, err := tb.dataFiles(ctx, s2)
	require.NoError(t, err)
	var dels int64
	for _, e := range entries {
		dels += *e.File.DeleteRowCount
		require.Equal(t, int32(2), e.TotalBuckets)
	}
	require.Equal(t, int64(2), dels) // id 3 and id 5 retracts
}

func TestAppendPartitionedWriteScan(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "ap", Schema{Columns: testCols, PartitionKeys: []string{"dt"}}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "2024-01-01"}, {2, sp("b"), "2024-01-02"}, {1, sp("a"), "2024-01-01"}, {3, nil, ""}}, nil, nil)
	s1, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	w = tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{4, sp("d"), "2024-01-02"}}, nil, nil)
	s2, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: s1.ID})
	require.NoError(t, err)
	require.Equal(t, int64(5), s2.TotalRecordCount)
	require.Equal(t, []string{"1,a,2024-01-01", "1,a,2024-01-01", "2,b,2024-01-02", "3,null,", "4,d,2024-01-02"}, scanAll(t, tb, s2, nil))
	for _, d := range []string{"dt=2024-01-01/bucket-0", "dt=2024-01-02/bucket-0", "dt=__DEFAULT_PARTITION__/bucket-0"} {
		ents, err := os.ReadDir(filepath.Join(tb.Path(), d))
		require.NoError(t, err, d)
		require.NotEmpty(t, ents)
	}
	// empty commit still advances properties
	w = tb.NewWrite(ctx)
	s3, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 3, ExpectedLatest: s2.ID, Properties: map[string]string{"p": "3"}})
	require.NoError(t, err)
	require.Equal(t, int64(3), s3.ID)
	require.Equal(t, int64(0), s3.DeltaRecordCount)
	require.Len(t, scanAll(t, tb, s3, nil), 5)
}

func TestCommitFencing(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "f", Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}}, []RowKind{Insert}, []int64{1})
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)

	w = tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{2, sp("b"), "x"}}, []RowKind{Insert}, []int64{2})
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: 0})
	require.ErrorIs(t, err, ErrCommitConflict)
	latest, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), latest.ID)
	// retry against the right parent works
	s2, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"1,a,x", "2,b,x"}, scanAll(t, tb, s2, nil))

	// a snapshot created concurrently (after the latest check) is also a conflict
	w = tb.NewWrite(ctx)
	require.NoError(t, os.WriteFile(tb.osPath(tb.snapshotPath(3)), []byte("{}"), 0o644))
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 3, ExpectedLatest: 2})
	require.ErrorIs(t, err, ErrCommitConflict)
	w.Abort()
}

func TestCorruptManifestNamesFile(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "c", Schema{Columns: testCols}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}}, nil, nil)
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	metas, err := tb.readManifestList(ctx, s.DeltaManifestList)
	require.NoError(t, err)
	require.Len(t, metas, 1)
	mpath := tb.manifestPath(metas[0].FileName)
	require.NoError(t, os.WriteFile(tb.osPath(mpath), []byte("garbage"), 0o644))
	_, err = tb.Scan(ctx, s, ScanOptions{})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), metas[0].FileName)
	require.NoError(t, os.Remove(tb.osPath(mpath)))
	_, err = tb.Scan(ctx, s, ScanOptions{})
	require.Error(t, err)
	require.Contains(t, err.Error(), metas[0].FileName)
	require.True(t, errors.Is(err, os.ErrNotExist))
}
