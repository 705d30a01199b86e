package lake

import (
	"context"
	"encoding/json"
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
